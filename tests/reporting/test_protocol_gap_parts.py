"""The protocol gap decomposed into its parts, on hand-written records whose cause is known by
construction.

Records (Coat, seeds 0-4) at every point of the chain: ``binary-icde24`` (reference),
``binary-icde24-cleantest`` (reference), ``binary-clean-icde24rule`` (reference),
``binary-clean`` at ``reference`` (DR in both forms)
and ``binary-clean`` at ``tuned-atrec`` (IPS only). Each method's AUC and nDCG@5 are MF's plus a
difference per point chosen here, plus a small noise that differs from point to point, so that
exactly one step moves each (method, metric):

* IPS, AUC: only the parameters (+0.03 at ``tuned-atrec``); nDCG@5: +0.05 everywhere (holds);
* SNIPS, AUC: only the test set (+0.04 while the slice is in the test set, 0 after);
  nDCG@5: only the convention (+0.02 in ``(ref)``, -0.01 in the standard one);
* DR, AUC: only the form (-0.05 in the corrected form); nDCG@5: only the data (-0.04 from
  ``binary-clean``'s split on);
* MF-SNIPS is not moved by the selection rule; ``cvib`` is, on both metrics (+0.03 from
  ``binary-clean``'s own run on).
"""

import json

import numpy as np
import pytest

from atrec.names import NO_PROPENSITY, config_key
from atrec.protocols import get_protocol
from atrec.protocols.binary import BINARY_CLEAN_METRICS
from atrec.reporting.protocol_gap import protocol_gap
from atrec.reporting.protocol_gap_parts import PARTS, Decomposition, Part, decompose
from atrec.reporting.protocol_gap_report import gap_report, gap_rows, part_rows
from atrec.results.records import record_path, save_record

SEEDS = range(5)
BASE = np.array([-0.02, -0.01, 0.0, 0.01, 0.02])
TINY = np.array([0.001, -0.001, 0.002, -0.002, 0.0])
ICDE, STEP, CLEAN = "binary-icde24", "binary-icde24-cleantest", "binary-clean"
RULE = "binary-clean-icde24rule"
# the chain's points
POINTS = ("icde", "step-ref", "step", "rule", "clean-ref-coded", "clean-ref", "clean")
# (method, metric) -> its difference from MF at each point of POINTS
MOVES = {("mf-ips", "auc"): (0, 0, 0, 0, 0, 0, 0.03),
         ("mf-ips", "ndcg"): (0.05,) * 7,
         ("mf-snips", "auc"): (0.04, 0, 0, 0, 0, 0, 0),
         ("mf-snips", "ndcg"): (0.02, 0.02, -0.01, -0.01, -0.01, -0.01, -0.01),
         ("dr", "auc"): (0, 0, 0, 0, 0, -0.05, -0.05),
         ("dr", "ndcg"): (0, 0, 0, -0.04, -0.04, -0.04, -0.04),
         ("cvib", "auc"): (-0.02, -0.02, -0.02, -0.02, 0.01, 0.01, 0.01),
         ("cvib", "ndcg"): (-0.02, -0.02, -0.02, -0.02, 0.01, 0.01, 0.01)}
CAUSES = {("mf-ips", 0): "parameters", ("mf-snips", 0): "test set",
          ("mf-snips", 1): "nDCG convention", ("dr", 0): "form", ("dr", 1): "data",
          ("cvib", 0): "selection", ("cvib", 1): "selection"}
MF = {"auc": 0.70, "ndcg": 0.60}


def _noise(point: int) -> np.ndarray:
    return np.roll(TINY, point)


def _value(method: str, metric: str, point: int, seed: int) -> float:
    move = 0.0 if method == "mf" else MOVES[(method, metric)][point]
    return float(MF[metric] + BASE[seed] + move + (0.0 if method == "mf" else _noise(point)[seed]))


def _save(root, protocol, params, key, method, options, metrics, seed):
    record = {"schema": 1, "dataset": "coat", "propensity": NO_PROPENSITY, "with_at": False,
              "method": method, "options": options, "seed": seed,
              "params": {"dim": 4}, "params_source": params, "metrics": metrics,
              "protocol": {"name": protocol}, "provenance": {}}
    if options:
        record["method_key"] = key
    save_record(record, record_path("coat", config_key(NO_PROPENSITY, False, key), params, seed,
                                    get_protocol(protocol).results_root(root)))


def _write(base, skip=()):
    """Every point's records; ``skip``: protocols left without any."""
    for method in ("mf", "mf-ips", "mf-snips", "dr", "cvib"):
        for s in SEEDS:
            def metrics(point, ndcg_name):
                m = dict.fromkeys(BINARY_CLEAN_METRICS, 0.5)
                m.update(auc=_value(method, "auc", point, s),
                         **{ndcg_name: _value(method, "ndcg", point, s)})
                return m
            coded = {"form": "coded"} if method == "dr" else {}
            if ICDE not in skip:
                _save(base, ICDE, "reference", method, method, coded, metrics(0, "ndcg5_ref"), s)
            if STEP not in skip:
                step = metrics(1, "ndcg5_ref")
                step["ndcg5"] = _value(method, "ndcg", 2, s)
                _save(base, STEP, "reference", method, method, coded, step, s)
            if RULE not in skip:
                key = "dr" if method == "dr" else method     # the code's form by default
                _save(base, RULE, "reference", key, method, coded, metrics(3, "ndcg5"), s)
            if CLEAN in skip:
                continue
            if method == "dr":     # the code's form and the corrected one, at reference
                _save(base, CLEAN, "reference", "dr+form=coded", "dr", coded,
                      metrics(4, "ndcg5"), s)
                _save(base, CLEAN, "reference", "dr", "dr", {"form": "corrected"},
                      metrics(5, "ndcg5"), s)
            else:
                _save(base, CLEAN, "reference", method, method, {}, metrics(5, "ndcg5"), s)
            if method == "mf-ips":   # its tuned values: the parameters step
                _save(base, CLEAN, "tuned-atrec", method, method, {}, metrics(6, "ndcg5"), s)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    base = tmp_path_factory.mktemp("parts")
    _write(base)
    return base


@pytest.mark.parametrize("method, k", sorted(CAUSES))
def test_the_one_step_that_moves_a_method_is_its_cause(results, method, k):
    gap = protocol_gap(results, "coat", expected_seeds=5)
    d = decompose(gap, method, k)
    metric = ("auc", "ndcg")[k]
    moves = MOVES[(method, metric)]
    expected = moves[-1] - moves[0]
    assert d.changes
    assert [p.name for p in d.parts] == list(PARTS)
    assert d.cause.name == CAUSES[(method, k)]
    assert d.cause.diff == pytest.approx(expected, abs=0.005)
    assert d.cause.low < expected < d.cause.high and not d.cause.low <= 0 <= d.cause.high
    assert all(abs(p.diff) < 0.005 for p in d.parts if p is not d.cause)
    # the parts add up to the move between the two protocols' means
    assert sum(p.diff for p in d.parts) == pytest.approx(d.total, abs=1e-12)
    assert d.total == pytest.approx(expected, abs=0.005)


def test_a_method_that_holds_its_standing_has_no_cause(results):
    gap = protocol_gap(results, "coat", expected_seeds=5)
    d = decompose(gap, "mf-ips", 1)           # nDCG@5: first and beats MF under both
    assert not d.changes and d.cause_text() == "holds"
    assert decompose(gap, "mf", 0).cause_text() == "(baseline)"


def test_the_cause_in_every_output(results):
    gap = protocol_gap(results, "coat", expected_seeds=5)
    rows = {r["method"]: r for r in gap_rows(gap)[0]}
    assert rows["IPS"]["cause AUC"].startswith("parameters +0.03")
    assert rows["IPS"]["cause nDCG@5"] == "holds"
    assert rows["SNIPS"]["cause AUC"].startswith("test set -0.04")
    assert rows["SNIPS"]["cause nDCG@5"].startswith("nDCG convention -0.03")
    assert rows["DR†"]["cause AUC"].startswith("form -0.05")
    assert {(r["method"], r["metric"]) for r in part_rows(gap)} == {
        (m, k) for m in ("IPS", "SNIPS", "DR†", "DR (form=coded)†", "CVIB")
        for k in ("AUC", "nDCG@5")}
    assert rows["CVIB"]["cause AUC"].startswith("selection +0.03")
    text = gap_report(results, "coat", "markdown", figures=False, expected_seeds=5).text
    assert "## The gap by part" in text and "| data -0.04" in text
    doc = json.loads(gap_report(results, "coat", "json", figures=False, expected_seeds=5).text)
    dr = next(m for m in doc["methods"] if m["method"] == "dr")
    assert dr["parts"]["auc"]["cause"] == "form"
    assert dr["parts"]["ndcg5"]["cause"] == "data"
    mf = next(m for m in doc["methods"] if m["method"] == "mf")   # the baseline: no cause
    assert mf["parts"]["auc"]["cause"] is None and mf["parts"]["ndcg5"]["cause"] is None
    assert doc["parts"] == list(PARTS)


def test_a_missing_step_names_the_command_and_gives_no_cause(tmp_path):
    _write(tmp_path, skip=(STEP,))
    out = gap_report(tmp_path, "coat", "markdown", figures=False, expected_seeds=5)
    hint = [n for n in out.notices if "the gap's parts need" in n]
    assert len(hint) == 1 and f"atrec train --protocol {STEP} --params reference" in hint[0]
    gap = protocol_gap(tmp_path, "coat", expected_seeds=5)
    d = decompose(gap, "dr", 0)
    assert d.parts == () and d.cause_text() == "-"
    assert f"{STEP} (ref)" in d.missing
    assert d.total == pytest.approx(-0.05, abs=0.005)    # the move itself is still known
    # a method without results under binary-icde24: no standing to compare, no cause
    _write(tmp_path / "no-icde", skip=(ICDE,))
    gap = protocol_gap(tmp_path / "no-icde", "coat", expected_seeds=5)
    assert decompose(gap, "mf-snips", 0).changes is None
    assert decompose(gap, "mf-snips", 0).cause_text() == "-"


def test_a_cause_within_its_noise_says_so():
    """The largest part is named either way; one whose interval holds zero (or the seeds part,
    which has none) is marked as not established."""
    noisy = (Part("test set", 5, 0.001, -0.002, 0.004), Part("form", 5, -0.02, -0.05, 0.01),
             Part("seeds", 5, 0.003))
    d = Decomposition("mf-ips", 0, noisy, -0.016, True)
    assert d.cause.name == "form" and not d.cause.clear
    assert d.cause_text() == "form -0.0200 [-0.0500, +0.0100] (within noise)"
    clear = Decomposition("mf-ips", 0, (Part("form", 5, -0.02, -0.03, -0.01),), -0.02, True)
    assert clear.cause_text() == "form -0.0200 [-0.0300, -0.0100]"
    seeds = Decomposition("mf-ips", 0, (Part("seeds", 20, 0.01),), 0.01, True)
    assert seeds.cause_text() == "seeds +0.0100 (within noise)"
