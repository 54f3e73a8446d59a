"""``atrec semisynthetic``'s bad input: one line, a non-zero exit, no traceback, nothing written."""

import pytest
from click.testing import CliRunner

from atrec.cli import main

CASES = [
    (["--form", "nope"], 2, "error: --form nope: unknown form nope"),
    (["--form", ","], 2, "error: --form ,: unknown form (none)"),
    (["--cuts", "0.5,0.4"], 2, "error: --cuts 0.5,0.4: cuts must be 4 cumulative fractions"),
    (["--cuts", "0.5,0.4,0.9,0.95"], 2, "cuts must increase strictly"),
    (["--cuts", "a,b"], 2, "error: --cuts a,b"),
    (["--seeds", "0-x"], 2, "error: --seeds 0-x"),
    (["--completion-seed", "-1"], 2, "error: Invalid value for '--completion-seed'"),
    (["--format", "xml"], 2, "error: Invalid value for '--format'"),
]


@pytest.mark.parametrize("args,code,fragment", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_options_give_one_line(args, code, fragment, tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    result = CliRunner().invoke(main, ["semisynthetic", *args])
    assert result.exit_code == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.output
    assert not any(tmp_path.iterdir())


def test_a_missing_local_copy_and_an_unusable_results_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("ATREC_ML_100K_SOURCE", str(tmp_path / "nowhere"))
    result = CliRunner().invoke(main, ["semisynthetic", "--seeds", "1"])
    assert result.exit_code != 0
    assert result.stderr.strip().startswith("error: ATREC_ML_100K_SOURCE=")
    assert len(result.stderr.strip().splitlines()) == 1
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "file" / "results"))
    result = CliRunner().invoke(main, ["semisynthetic", "--seeds", "1"])
    assert result.exit_code != 0 and "the results folder" in result.stderr
