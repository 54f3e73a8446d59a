"""The markdown report's header: title, date, version and commit, parameters, seeds, data
checksums, and links (relative to the results folder) to the figures and variance.md."""

import re
import subprocess

import pytest
from synthetic_records import make_record, write_records

from atrec import __version__
from atrec.reporting import header
from atrec.reporting.report import report
from atrec.results.records import record_path, save_record

SUMS = {"train.ascii": "a" * 64, "test.ascii": "b" * 64}


@pytest.fixture()
def root(tmp_path):
    root = write_records(tmp_path / "results", datasets=("coat",))
    record = make_record("coat", "item", False, 0, {"mae": 0.8, "mse": 1.0, "ndcg3_paper": 0.3})
    record["provenance"] = {"data_checksums": SUMS}
    save_record(record, record_path("coat", "item", "published", 0, root))
    return root


def _report(root, **kw):
    return report(root=root, fmt="markdown", expected_seeds=5, figures_dir=root / "figures", **kw)


def test_header_says_what_when_and_from_which_data(root):
    out = _report(root)
    head = out.text.split("## Table 1")[0]
    assert head.startswith("# ") and "SIGIR 2020" in head.splitlines()[0]
    assert re.search(r"- Date: \d{4}-\d\d-\d\d \d\d:\d\d UTC", head)
    assert f"- atrec: {__version__}" in head
    assert "- Parameter set: published" in head and "Coat: dim 5; epsilon 0.1; lam 0.001" in head
    assert "- Seeds: 0-4 (60 runs; 5 expected per cell)" in head
    assert f"`train.ascii` `{'a' * 64}`" in head and f"`test.ascii` `{'b' * 64}`" in head


def test_header_gives_figure_2s_ml100k_checksums_from_its_records(root):
    assert "MovieLens 100K" not in _report(root).text.split("## Table 1")[0]
    ml_sums = {"u.data": "c" * 64}
    record = make_record("ml-100k-min5", "data-item", False, 0,
                         {"mae": 0.8, "mse": 1.0, "ndcg3_paper": 0.3})
    record["provenance"] = {"data_checksums": ml_sums}
    save_record(record, record_path("ml-100k-min5", "data-item", "published", 0, root))
    head = _report(root).text.split("## Table 1")[0]
    assert f"  - MovieLens 100K (Figure 2): `u.data` `{'c' * 64}`" in head.splitlines()
    assert f"`train.ascii` `{'a' * 64}`" in head   # Coat's are still there


def test_header_links_every_figure_relative_to_the_results_folder(root):
    out = _report(root)
    links = re.findall(r"\]\(([^)]+)\)", out.text.split("## Table 1")[0])
    assert sorted(links) == sorted(f"figures/{p.name}" for p in out.figures) and links
    assert all((root / link).is_file() for link in links)
    assert "variance.md" not in out.text
    (root / "variance.md").write_text("# Figure 2\n")
    assert "[variance.md](variance.md)" in _report(root).text


def test_other_formats_and_header_false_have_no_header(root):
    assert _report(root, header=False).text.startswith("## Table 1")
    text = report(root=root, fmt="table", expected_seeds=5, figures=False).text
    assert text.startswith("Table 1")


def test_git_commit_is_silently_absent_outside_a_checkout(monkeypatch):
    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(header.subprocess, "run", no_git)
    assert header.git_commit() is None
    monkeypatch.setattr(header.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 128, stdout="", stderr="fatal: not a git repository"))
    assert header.git_commit() is None


def test_git_commit_is_shown_in_a_checkout(root, monkeypatch):
    monkeypatch.setattr(header, "git_commit", lambda: "0123456789abcdef")
    assert f"- atrec: {__version__} (git commit `0123456789abcdef`)" in _report(root).text


@pytest.mark.parametrize("seeds, text", [([0, 1, 2, 3], "0-3"), ([4, 0, 1, 7, 9, 8], "0-1, 4, 7-9"),
                                         ([], "-"), ([5], "5")])
def test_seed_ranges(seeds, text):
    assert header.seed_ranges(seeds) == text


def test_checksums_fall_back_to_the_processed_data(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    assert header.data_checksums([], "coat") == {}
    from atrec.data.preprocess import MANIFEST, processed_dir

    folder = processed_dir("coat")
    folder.mkdir(parents=True)
    (folder / MANIFEST).write_text('{"source_files": {"train.ascii": "cafe"}}')
    assert header.data_checksums([], "coat") == {"train.ascii": "cafe"}
