"""The test data the repository carries: complete, sourced, and readable as stored."""

from __future__ import annotations

import orjson
import pytest
import zstandard

from tests import testdata
from tests.data.update import COMPRESS_OVER


def corpus_table() -> dict[str, list[str]]:
    """The corpus README's table: file -> its cells (bytes, repository, path, commit, ...)."""
    rows = {}
    for line in (testdata.CORPUS / "README.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] != "file":
            rows[cells[0]] = cells
    return rows


def test_every_corpus_file_has_its_source_commit_and_licence_in_the_readme():
    table = corpus_table()
    names = [p.relative_to(testdata.CORPUS).as_posix() for p in testdata.files(testdata.CORPUS)]
    assert len(names) >= 150
    assert sorted(table) == sorted(names)
    for name in names:
        _, size, repository, where, commit, licence, _ = table[name]
        assert len(testdata.read(testdata.CORPUS / name)) == int(size), name
        assert "/" in repository and where and licence, name
        assert len(commit) >= 7 and all(c in "0123456789abcdef" for c in commit), name


def test_large_files_are_stored_compressed_and_small_ones_as_they_are():
    stored = [p for p in testdata.DATA.rglob("*") if p.is_file() and p.suffix != ".py"]
    packed = [p for p in stored if p.name.endswith(testdata.PACKED)]
    assert packed, "the corpus holds files over 64 KiB"
    for path in stored:
        data = path.read_bytes()
        if path in packed:
            size = len(zstandard.ZstdDecompressor().decompress(data))
            assert size > COMPRESS_OVER and len(data) < size, path
        else:
            assert len(data) <= COMPRESS_OVER or path.name == "README.md", path


def test_read_finds_a_file_under_its_real_name_either_way(tmp_path):
    (tmp_path / "plain.json").write_bytes(b"[1]")
    (tmp_path / "big.json.zst").write_bytes(zstandard.ZstdCompressor().compress(b"[2]"))
    assert testdata.read(tmp_path / "plain.json") == b"[1]"
    assert testdata.read(tmp_path / "big.json") == b"[2]"
    assert testdata.files(tmp_path) == [tmp_path / "big.json", tmp_path / "plain.json"]
    with pytest.raises(FileNotFoundError):
        testdata.read(tmp_path / "missing.json")
    out = testdata.expand(tmp_path, tmp_path / "out")
    assert (out / "big.json").read_bytes() == b"[2]"


PROVIDERS = {"anthropic", "gemini", "openai-chat", "responses"}


def test_every_oracle_case_names_its_provider_source_and_verdict():
    cases = testdata.files(testdata.ORACLE)
    assert len(cases) >= 990
    for path in cases:
        case = orjson.loads(testdata.read(path))
        assert case["provider"] == path.parent.name and case["provider"] in PROVIDERS, path
        source = case["source"]
        # A recorded exchange names repository, path and commit; a reconstructed case its page.
        assert ("@" in source and source.count("/") >= 2) or (
            case["reconstructed"] and source.startswith("https://")
        ), path
        assert case["status"] in (200, 400), path
        assert bool(case["error"]) == (case["status"] == 400), path
        assert isinstance(case["request"], dict), path


def test_the_spec_its_cases_and_seeds_are_in_docs():
    assert "## 4. The repair algorithm" in testdata.SPEC.read_text()
    cases = sorted(testdata.CASES.glob("*.json"))
    assert len(cases) >= 17
    assert [orjson.loads(p.read_bytes())["name"] for p in cases] == [p.stem for p in cases]
    assert len(list(testdata.SEEDS.glob("*.txt"))) == 4


def test_bringing_new_material_in_keeps_the_repositorys_own_files_and_rows(tmp_path):
    from tests.data import update

    ours = "# Corpus\n\n| file | licence |\n|---|---|\n| a.jsonl | MIT |\n| ours.jsonl | MIT |\n"
    theirs = "# Corpus\n\n| file | licence |\n|---|---|\n| a.jsonl | MIT |\n| new.jsonl | BSD |\n"
    merged = update.merged_readme(ours, theirs)
    assert merged == ours + "| new.jsonl | BSD |\n"
    assert update.merged_readme(merged, theirs) == merged
    incoming, repo = tmp_path / "incoming", tmp_path / "repo"
    (incoming / "x").mkdir(parents=True)
    (incoming / "x" / "big.json").write_bytes(b"[" + b"1," * 40_000 + b"1]")
    (repo / "x").mkdir(parents=True)
    (repo / "x" / "own.json").write_bytes(b"[]")
    update.copy_file(incoming / "x" / "big.json", repo / "x" / "big.json", compress=True)
    assert testdata.read(repo / "x" / "big.json") == (incoming / "x" / "big.json").read_bytes()
    assert (repo / "x" / "own.json").read_bytes() == b"[]"
