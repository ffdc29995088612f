"""The distribution ships the guard under its public name: a wheel holds and imports it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.testdata import REPO

IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info")


@pytest.mark.slow
def test_a_built_wheel_holds_transcript_inspector_and_imports_it(tmp_path: Path) -> None:
    # Built from a copy: setuptools writes its build/ folder into the source tree.
    source = tmp_path / "source"
    shutil.copytree(REPO / "inspector", source / "inspector", ignore=IGNORED)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    built = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(built)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = built.glob("transcript_inspector-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    assert {"transcript_inspector/__init__.py", "inspector/guard/__init__.py"} <= names
    assert not any(name.startswith("inspector/transcript_inspector/") for name in names)
    top = next(name for name in names if name.endswith(".dist-info/top_level.txt"))
    assert (tmp_path / "site" / top).read_text().split() == ["inspector", "transcript_inspector"]
    # Only the wheel's own files on the path first: the import must find the wheel's copy.
    code = (
        "import sys, transcript_inspector\n"
        "from transcript_inspector import guard\n"
        "body = {'messages': [{'role': 'tool', 'content': 'x', 'tool_call_id': 'c9'}]}\n"
        "print(transcript_inspector.__file__.startswith(sys.argv[1]), guard(body, 'openai-chat')"
        ".changed, 'django' in sys.modules)\n"
    )
    site = str(tmp_path / "site")
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {site!r})\n" + code, site],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.stdout.split() == ["True", "True", "False"], done.stderr
