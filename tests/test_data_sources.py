"""The README's two commands on a fresh machine: the tests find Coat and ML-100K where the
README tells a user to put them (or where `make reproduce` installed them), a missing copy is one
line naming what to set, and make passes the same variables atrec reads, never overwriting them."""

import shutil
import subprocess
from pathlib import Path

import data_sources
import pytest
import run_groups

ROOT = Path(__file__).resolve().parent.parent


def _root(tmp_path) -> Path:
    """A checkout with nothing beside it and no data folder."""
    root = tmp_path / "clone"
    root.mkdir()
    return root


def test_each_place_the_readme_names_is_found_in_order(tmp_path):
    root = _root(tmp_path)
    assert data_sources.missing({}, root) == ["coat", "ml-100k"]
    installed = root / "data" / "coat" / "raw"          # where make reproduce installs it
    installed.mkdir(parents=True)
    assert data_sources.find("coat", {}, root) == installed
    mine = tmp_path / "my-data"                         # ATREC_DATA_DIR's copy instead
    (mine / "coat" / "raw").mkdir(parents=True)
    assert data_sources.find("coat", {"ATREC_DATA_DIR": str(mine)}, root) == mine / "coat" / "raw"
    beside = root.parent / "shared" / "data" / "coat"   # CI's ../shared/data
    beside.mkdir(parents=True)
    assert data_sources.find("coat", {}, root) == beside
    shared = tmp_path / "elsewhere"
    (shared / "coat").mkdir(parents=True)
    assert data_sources.find("coat", {"ATREC_SHARED_DATA": str(shared)}, root) == shared / "coat"
    archive = tmp_path / "coat.zip"
    archive.write_bytes(b"")
    env = {"ATREC_SHARED_DATA": str(shared), "ATREC_COAT_SOURCE": str(archive)}
    assert data_sources.find("coat", env, root) == archive   # the variable atrec reads first
    assert data_sources.missing(env, root) == ["ml-100k"]


def test_a_missing_copy_is_one_line_naming_what_to_set(tmp_path, monkeypatch, capsys):
    line = data_sources.missing_line(["coat", "ml-100k"])
    assert "\n" not in line
    assert "ATREC_COAT_SOURCE and ATREC_ML_100K_SOURCE" in line and "make reproduce" in line
    monkeypatch.setattr(data_sources, "missing", lambda: ["ml-100k"])
    monkeypatch.setattr(run_groups, "run_all", lambda *a: pytest.fail("no group may start"))
    assert run_groups.main([]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "set ATREC_ML_100K_SOURCE" in err


def _make_sources(env: dict) -> str:
    """The source variables a recipe of the Makefile sees, as ``coat|ml-100k|yahoo``."""
    make = shutil.which("make") or pytest.skip("no make here")
    show = ('show-sources: ; @echo "$$ATREC_COAT_SOURCE|$$ATREC_ML_100K_SOURCE|'
            '$$ATREC_YAHOO_SOURCE"')
    clean = {k: v for k, v in __import__("os").environ.items()
             if not k.startswith(("ATREC_", "MAKE"))}
    return subprocess.run([make, "-s", "-C", str(ROOT), "--eval", show, "show-sources"],
                          capture_output=True, text=True, check=True,
                          env={**clean, **env}).stdout.strip()


def test_make_passes_the_variables_atrec_reads_without_overwriting_them(tmp_path):
    shared = tmp_path / "shared"
    (shared / "coat").mkdir(parents=True)
    assert _make_sources({"ATREC_SHARED_DATA": str(shared)}) == f"{shared}/coat||"
    given = {"ATREC_SHARED_DATA": str(shared), "ATREC_COAT_SOURCE": "/my/coat.zip",
             "ATREC_ML_100K_SOURCE": "/my/ml-100k", "ATREC_YAHOO_SOURCE": "/my/R3.tgz"}
    assert _make_sources(given) == "/my/coat.zip|/my/ml-100k|/my/R3.tgz"


def test_atrec_download_reads_the_same_variable(tmp_path, monkeypatch):
    """`atrec download coat` without --source installs the copy ATREC_COAT_SOURCE names (CI's
    regression gate relies on it), and a variable naming nothing is one line naming it."""
    from click.testing import CliRunner

    from atrec.cli import main
    from conftest import SHARED

    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ATREC_COAT_SOURCE", str(SHARED / "coat"))
    ok = CliRunner().invoke(main, ["download", "coat", "--quiet"])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "data" / "coat" / "raw" / "train.ascii").is_file()
    monkeypatch.setenv("ATREC_COAT_SOURCE", str(tmp_path / "nowhere"))
    bad = CliRunner().invoke(main, ["download", "coat", "--quiet", "--force"])
    assert bad.exit_code != 0 and "ATREC_COAT_SOURCE" in bad.output
    assert len(bad.output.strip().splitlines()) == 1
