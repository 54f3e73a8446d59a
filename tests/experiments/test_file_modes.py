"""Outputs get the user's umask: files ``0666 & ~umask``, folders ``0777 & ~umask`` (not the
``0600`` / ``0700`` of ``mkstemp`` / ``mkdtemp``). Checked for every kind of writer: records,
text outputs, figures, the downloaded and processed data and its folders."""

import os
import stat
from pathlib import Path

import pytest
from conftest import SHARED

from atrec import fileio
from atrec.fileio import atomic_write_text, make_folder, temp_folder
from atrec.results.records import record_path, save_record


@pytest.fixture(params=[0o022, 0o077, 0o002], ids=["022", "077", "002"])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_umask_is_read_from_the_process(umask):
    assert fileio.current_umask() == umask
    assert fileio.file_mode() == 0o666 & ~umask
    assert fileio.folder_mode() == 0o777 & ~umask


def test_fallback_is_the_umask_read_at_import(monkeypatch):
    monkeypatch.setattr(fileio, "_proc_umask", lambda: None)
    monkeypatch.setattr(fileio, "_FALLBACK_UMASK", 0o027)
    assert fileio.file_mode() == 0o640 and fileio.folder_mode() == 0o750


def test_records_text_and_folders_follow_the_umask(umask, tmp_path):
    path = record_path("coat", "item", "published", 0, tmp_path)
    save_record({"schema": 1}, path)
    assert mode(path) == 0o666 & ~umask
    for folder in (tmp_path / "runs", path.parent):
        assert mode(folder) == 0o777 & ~umask
    text = atomic_write_text(tmp_path / "out" / "report.md", "# report\n")
    assert mode(text) == 0o666 & ~umask and mode(text.parent) == 0o777 & ~umask
    assert mode(make_folder(tmp_path / "a" / "b")) == 0o777 & ~umask
    assert mode(temp_folder(tmp_path, ".staging-")) == 0o777 & ~umask
    assert not list(text.parent.glob(".*.tmp"))


def test_overwrite_gets_the_current_umask(tmp_path):
    path = tmp_path / "x.txt"
    old = os.umask(0o077)
    try:
        atomic_write_text(path, "a")
        assert mode(path) == 0o600
        os.umask(0o022)
        atomic_write_text(path, "b")
        assert mode(path) == 0o644 and path.read_text() == "b"
    finally:
        os.umask(old)


def test_figures_follow_the_umask(umask, tmp_path):
    from matplotlib.figure import Figure

    from atrec.reporting.figures import save_figure

    for path in save_figure(Figure(), "f", tmp_path / "figures"):
        assert mode(path) == 0o666 & ~umask
    assert mode(tmp_path / "figures") == 0o777 & ~umask


@pytest.mark.skipif(not (SHARED / "coat").exists(), reason="no shared Coat copy")
@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_downloaded_and_processed_data_follow_the_umask(mask, tmp_path, monkeypatch):
    from atrec.data.download import download
    from atrec.data.preprocess import preprocess

    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    old = os.umask(mask)
    try:
        download("coat", source=SHARED / "coat", quiet=True)
        preprocess("coat", quiet=True)
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    folders = [tmp_path / "data", *(p for p in (tmp_path / "data").rglob("*") if p.is_dir())]
    assert files and len(folders) > 2
    assert {oct(mode(p)) for p in files} == {oct(0o666 & ~mask)}
    assert {oct(mode(p)) for p in folders} == {oct(0o777 & ~mask)}
