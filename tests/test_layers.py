"""The floors of ``inspector/``, read from the code: no import circle, no import climbing back.

The graph is drawn with ``ast`` from every ``import`` and ``from ... import``
in ``inspector/``: at module level, inside functions (an import inside a
function hides a circle from Python, not from this test) and under
``TYPE_CHECKING`` alike. A module may import another of its own floor or of
a floor below; a circle between modules, of whatever floors, fails.

The floors, lowest first, are written down once, here (``docs/architecture.md``
draws them). A new module must be placed on one: ``test_every_module_is_on_a_floor``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "inspector"

# Lowest first. A module is on the floor of the longest name here that is it or holds it.
FLOORS: tuple[tuple[str, ...], ...] = (
    # Helpers that import nothing of ours, and the one that reads gitleaks' rules for redact.
    ("inspector.gitleaks",),
    ("inspector.collector", "inspector.redact"),
    # The pure core.
    ("inspector.engine",),
    ("inspector.formats",),
    ("inspector.diagnosis",),
    # The guard library on the core, and its public name (docs/guard.md).
    ("inspector.guard",),
    ("inspector.transcript_inspector",),
    # The user's machine (inspector/local/__init__.py says what each floor does).
    ("inspector.local.confine", "inspector.local.follow", "inspector.local.agents"),
    ("inspector.local.outcome",),
    ("inspector.local.store",),
    ("inspector.local.files",),
    ("inspector.local.opencode",),
    ("inspector.local.opencode_db",),
    ("inspector.local.rowdb",),
    (
        "inspector.local.goose_db",
        "inspector.local.hermes_db",
        "inspector.local.opencode_v2",
        "inspector.local.q_db",
    ),
    ("inspector.local.openhands",),
    ("inspector.local.openhands_cli",),
    ("inspector.local.stores",),
    ("inspector.local.sessions", "inspector.local.fix", "inspector.local.databases"),
    ("inspector.local",),
    # The console command.
    ("inspector.cli",),
    # What a share shows of a diagnosis (masked or redacted), no Django: the web's own
    # exports (web/export.py) mask as a full share does.
    ("inspector.share.content",),
    # The Django apps: web is the floor the others stand on (it signals up: web/events.py).
    ("inspector.web",),
    ("inspector.share", "inspector.watch"),
    ("inspector.scan",),
    ("inspector.search",),
    # The project: settings, URLs, servers; and the web's exports for the console's
    # ``report --html`` / ``--markdown``, which inspector.cli loads by name when asked.
    ("inspector", "inspector.env", "inspector.settings", "inspector.urls", "inspector.offline"),
    ("inspector.asgi", "inspector.wsgi"),
)
# Up to and including this floor, nothing imports Django (the console runs without it).
WITHOUT_DJANGO = FLOORS.index(("inspector.cli",))


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of ``root/inspector`` by its dotted name."""
    found = {}
    for path in sorted((root / "inspector").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(path: Path, name: str) -> Iterable[tuple[str, int]]:
    """Every name the module imports, absolute, with its line, wherever the import stands.

    ``from x import y`` gives ``x.y`` (a module, or a name in ``x``), ``import x.y`` gives ``x.y``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                above = parts[: len(parts) - node.level + 1]
                base = ".".join([*above, base] if base else above)
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


def graph(known: dict[str, Path]) -> dict[str, dict[str, int]]:
    """For each module, the modules of ``inspector`` it imports, with the first line of each."""
    edges: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        out = edges.setdefault(name, {})
        for target, line in imported(path, name):
            while target and target not in known:  # a name in a module: that module
                target = target.rpartition(".")[0]
            if target and target != name:
                out.setdefault(target, line)
    return edges


def floor(name: str) -> int:
    best, found = -1, None
    for n, names in enumerate(FLOORS):
        for prefix in names:
            # The package itself holds no module but its own ``__init__``: a new module is placed.
            holds = name.startswith(prefix + ".") and prefix != "inspector"
            if (name == prefix or holds) and len(prefix) > best:
                best, found = len(prefix), n
    assert found is not None, f"{name} is on no floor: add it to FLOORS"
    return found


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(edges.get(target, {}))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def climbing(edges: dict[str, dict[str, int]]) -> list[tuple[str, int, str]]:
    """Each import of a module on a higher floor: (module, line, the module it imports)."""
    return [
        (name, line, target)
        for name, out in sorted(edges.items())
        for target, line in sorted(out.items())
        if floor(target) > floor(name)
    ]


def test_every_module_is_on_a_floor() -> None:
    for name in modules():
        floor(name)


def test_no_import_circle() -> None:
    edges = graph(modules())
    assert circles(edges) == []


def test_no_import_climbs_back_to_a_higher_floor() -> None:
    assert climbing(graph(modules())) == []


def test_the_floors_below_the_web_import_no_django() -> None:
    known = modules()
    found = []
    for name, path in known.items():
        if floor(name) > WITHOUT_DJANGO:
            continue
        for target, line in imported(path, name):
            if target == "django" or target.startswith("django."):
                found.append(f"{name}:{line} imports {target}")
    assert found == []


# --- the test's own reading, on code written here ------------------------------------------


def _edges_of(tmp_path: Path, files: dict[str, str]) -> dict[str, dict[str, int]]:
    """The graph of a package written here: ``files`` and an empty ``__init__`` for each folder."""
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        for folder in path.relative_to(tmp_path).parents[:-1]:
            (tmp_path / folder / "__init__.py").touch()
    return graph(modules(tmp_path))


def test_an_import_inside_a_function_is_an_edge_and_closes_a_circle(tmp_path: Path) -> None:
    edges = _edges_of(
        tmp_path,
        {
            "inspector/local/store.py": "def f():\n    from inspector.local import sessions\n",
            "inspector/local/sessions.py": "from .store import LocalStore\n",
        },
    )
    assert edges["inspector.local.store"] == {"inspector.local.sessions": 2}
    assert edges["inspector.local.sessions"] == {"inspector.local.store": 1}
    assert circles(edges) == [["inspector.local.sessions", "inspector.local.store"]]
    assert climbing(edges) == [("inspector.local.store", 2, "inspector.local.sessions")]


def test_a_type_checking_import_of_the_web_from_the_core_climbs(tmp_path: Path) -> None:
    edges = _edges_of(
        tmp_path,
        {
            "inspector/web/models.py": "",
            "inspector/engine/__init__.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from inspector.web.models import Transcript\n"
            ),
        },
    )
    assert edges["inspector.engine"] == {"inspector.web.models": 3}
    assert climbing(edges) == [("inspector.engine", 3, "inspector.web.models")]
    assert circles(edges) == []


def test_a_module_on_no_floor_is_named() -> None:
    with pytest.raises(AssertionError, match=r"inspector\.newfloor is on no floor"):
        floor("inspector.newfloor")
