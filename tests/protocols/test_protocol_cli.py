"""``--protocol`` on the command line: unknown names and layouts that belong to another protocol
are one line and a non-zero exit code; ``atrec methods`` lists the protocols with their metrics."""

import json

import pytest
from click.testing import CliRunner

from atrec.cli import main


@pytest.mark.parametrize("args, code, fragment", [
    (["train", "--protocol", "nope", "--propensity", "item"], 2, "unknown protocol 'nope'"),
    (["tune", "--protocol", "nope", "--propensity", "item"], 2, "unknown protocol 'nope'"),
    (["report", "--protocol", "nope"], 2, "unknown protocol 'nope'"),
    (["export", "--protocol", "nope"], 2, "unknown protocol 'nope'"),
    (["report", "--protocol", "ijcai2022", "--table", "paper"], 2,
     "--table paper is the paper's Table 1"),
    (["check", "--protocol", "ijcai2022"], 2, "has no published table to check against"),
    (["train", "--protocol", "ijcai2022", "--params", "published", "--propensity", "item"], 2,
     "parameter set 'published' does not exist under protocol 'ijcai2022'"),
])
def test_bad_protocol_use_is_one_line(args, code, fragment, tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(main, args)
    assert result.exit_code == code, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()


def test_methods_lists_protocols_with_their_metrics():
    result = CliRunner().invoke(main, ["methods", "--format", "json"])
    assert result.exit_code == 0
    rows = {r["protocol"]: r for r in json.loads(result.output)["protocols"]}
    assert rows["saito2020"]["metrics"].startswith("MAE (mae), MSE (mse), nDCG@3 (ndcg3_paper)")
    assert "nDCG@5 (ndcg5_ijcai), Recall@5 (recall5_ijcai)" in rows["ijcai2022"]["metrics"]
    assert "2500 steps of 2048" in rows["ijcai2022"]["schedule"]
