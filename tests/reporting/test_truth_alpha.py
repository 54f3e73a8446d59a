"""The truth-against-alpha report on hand-written binary-truth records: MF and IPS at alpha 0.5
and 1 (alpha 1.5 has none), three seeds each, values chosen so the means and intervals are
known by hand."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from atrec.cli import main
from atrec.errors import AtrecError
from atrec.names import NO_PROPENSITY, config_key
from atrec.protocols import get_protocol
from atrec.reporting.truth_alpha import alpha_report, truth_by_alpha
from atrec.results.records import record_path, save_record

OFFSETS = np.array([-0.01, 0.0, 0.01])
# (protocol, method) -> (truth AUC, truth nDCG@5) means
MEANS = {("binary-truth-a050", "mf"): (0.72, 0.93), ("binary-truth-a050", "mf-ips"): (0.71, 0.92),
         ("binary-truth", "mf"): (0.69, 0.92), ("binary-truth", "mf-ips"): (0.70, 0.925)}


@pytest.fixture
def results(tmp_path):
    for (protocol, method), (auc, ndcg) in MEANS.items():
        proto = get_protocol(protocol)
        for s, off in enumerate(OFFSETS):
            metrics = dict.fromkeys(proto.metrics, 0.5)
            metrics.update(truth_auc=auc + off, truth_ndcg5=ndcg + off)
            record = {"schema": 1, "dataset": "ml-100k", "propensity": NO_PROPENSITY,
                      "with_at": False, "method": method, "seed": s, "params": {"dim": 4},
                      "params_source": "reference", "metrics": metrics,
                      "protocol": {"name": protocol}, "provenance": {}}
            save_record(record, record_path("ml-100k", config_key(NO_PROPENSITY, False, method),
                                            "reference", s, proto.results_root(tmp_path)))
    return tmp_path


def test_points_means_and_intervals(results):
    points, notices = truth_by_alpha(results)
    got = {(p.method, p.alpha, p.metric): p for p in points}
    assert len(got) == 8
    half = stats.t.ppf(0.975, 2) * np.std(OFFSETS, ddof=1) / np.sqrt(3)
    ips = got[("mf-ips", 1.0, "truth_auc")]
    assert (ips.n, ips.mean) == (3, pytest.approx(0.70))
    assert (ips.low, ips.high) == (pytest.approx(0.70 - half), pytest.approx(0.70 + half))
    assert got[("mf", 0.5, "truth_ndcg5")].mean == pytest.approx(0.93)
    assert any("binary-truth-a150" in n for n in notices)


def test_report_table_json_figure_and_command(results, monkeypatch):
    out = alpha_report(results, figures=True)
    assert [p.name for p in out.figures] == ["truth_alpha.png", "truth_alpha.pdf"]
    assert all(p.stat().st_size > 0 for p in out.figures)
    lines = [line for line in out.text.splitlines() if line.startswith(("MF", "IPS"))]
    assert len(lines) == 4 and lines[0].split()[:3] == ["MF", "0.5", "3"]
    doc = json.loads(alpha_report(results, "json", figures=False).text)
    assert {p["alpha"] for p in doc["points"]} == {0.5, 1.0}
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(results))
    res = CliRunner().invoke(main, ["report", "--table", "truth-alpha", "--no-figures"])
    assert res.exit_code == 0 and "IPS" in res.output


def test_no_results_is_exit_code_3(tmp_path):
    with pytest.raises(AtrecError) as err:
        truth_by_alpha(tmp_path)
    assert err.value.exit_code == 3
