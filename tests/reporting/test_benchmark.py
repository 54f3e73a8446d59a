"""The benchmark table on synthetic Coat records of three methods.

* MF-IPS: the paper's Coat numbers (tests/synthetic_records.py), seeds 0..4.
* ``fake-mf`` ("Fake MF"), a method registered by this module for its tests (and unregistered
  after): MF-IPS's values shifted by :data:`DELTA` (MAE 0.03 better, MSE 0.05 worse, nDCG@3
  paper 0.005 better, nDCG@3 standard 0.01 worse), with per-seed offsets :data:`FAKE`, so the
  paired differences vary by seed; it has no NB (true) records.
* ``fake-mcar`` ("Fake MCAR"): registered, uses no propensity and reads MCAR labels; one row,
  clearly worse everywhere, compared with MF-IPS uniform.

A method the registry does not know is tested on its own records: its rows appear under its
raw name (the benchmark reports what is on disk even when a plug-in is not installed here).
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from synthetic_records import NDCG_STANDARD, WITH, WITHOUT, make_record, paper_values, write_records

from atrec.errors import AtrecError
from atrec.evaluation.significance import holm
from atrec.methods.base import Method
from atrec.methods.registry import METHODS, record_method
from atrec.names import config_key
from atrec.reporting.benchmark import load_benchmark
from atrec.reporting.benchmark_render import benchmark_report
from atrec.reporting.tables import FORMATS
from atrec.results.records import record_path, save_record

SEEDS = (0, 1, 2, 3, 4)
FAKE = (0.01, 0.02, -0.01, -0.02, 0.0)
DELTA = {"mae": -0.03, "mse": 0.05, "ndcg3_paper": 0.005, "ndcg3_standard": -0.01}
MCAR_DELTA = {"mae": 0.2, "mse": 0.2, "ndcg3_paper": -0.05, "ndcg3_standard": -0.05}
SIX = ("uniform", "user", "item", "user-item", "nb-uniform", "nb-true")


class FakeMF(Method):
    name, label = "fake-mf", "Fake MF"

    def fit(self, problem, params, settings):  # pragma: no cover - never trained here
        raise NotImplementedError


class FakeMCAR(Method):
    name, label, uses_propensity, uses_mcar = "fake-mcar", "Fake MCAR", False, True

    def fit(self, problem, params, settings):  # pragma: no cover - never trained here
        raise NotImplementedError


@pytest.fixture(scope="module", autouse=True)
def registered():
    METHODS.names()  # load the built-ins first, so MF-IPS keeps its place in registry order
    for cls in (FakeMF, FakeMCAR):
        METHODS.register(cls)
    yield
    for cls in (FakeMF, FakeMCAR):
        METHODS.unregister(cls.name)


def base(propensity, with_at, metric):
    if metric == "ndcg3_standard":
        return NDCG_STANDARD[with_at]
    return paper_values()[("coat", propensity, with_at)][metric]


def mf_values(propensity, with_at, metric):
    """MF-IPS's per-seed values as write_records makes them."""
    return [base(propensity, with_at, metric) + o for o in (WITH if with_at else WITHOUT)]


def fake_values(propensity, with_at, metric, delta=DELTA, offsets=FAKE):
    return [base(propensity, with_at, metric) + delta[metric] + o for o in offsets]


def write_method(root, method, propensities, values, skip=()):
    for propensity in propensities:
        for with_at in (False, True):
            for seed in SEEDS:
                if (propensity, with_at, seed) in skip:
                    continue
                metrics = {m: values(propensity, with_at, m)[seed] for m in DELTA}
                record = make_record("coat", propensity, with_at, seed, metrics)
                record["method"] = record_method(method, with_at)
                save_record(record, record_path("coat", config_key(propensity, with_at, method),
                                                "published", seed, root))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = write_records(tmp_path_factory.mktemp("bench"), datasets=("coat",))
    write_method(root, "fake-mf", SIX[:5], fake_values, skip=[("user", False, 4)])
    write_method(root, "fake-mcar", ("none",),
                 lambda p, at, m: fake_values("uniform", at, m, MCAR_DELTA, WITH))
    return root


@pytest.fixture(scope="module")
def bench(root):
    return load_benchmark(root, expected_seeds=5)


def test_rows_in_registry_order_and_columns(root, bench):
    assert bench.datasets == ("coat",)
    assert [m.name for m in bench.methods] == ["mf-ips", "fake-mf", "fake-mcar"]
    assert bench.rows == (*(("coat", "mf-ips", p) for p in SIX),
                          *(("coat", "fake-mf", p) for p in SIX), ("coat", "fake-mcar", "none"))
    header = benchmark_report(root, fmt="csv", expected_seeds=5).text.splitlines()[1]
    assert header.split(",") == [
        "data", "method", "propensity", "params", "budget", "MAE w/o AT", "MAE w/ AT",
        "MSE w/o AT", "MSE w/ AT", "nDCG@3 (paper) w/o AT", "nDCG@3 (paper) w/ AT", "nDCG@3 (standard) w/o AT",
        "nDCG@3 (standard) w/ AT"]
    assert load_benchmark(root, expected_seeds=5, ndcg="paper").metrics == (
        "mae", "mse", "ndcg3_paper")


def _marked(bench, metric, with_at):
    return {(m, p) for d, m, p in bench.rows if bench.best(d, m, p, with_at, metric)}


@pytest.mark.parametrize("metric, with_at, expected", [
    # MF-IPS 0.873 x3 / 0.874 / 0.951 / 0.852; Fake MF 0.843 x3 / 0.844 / 0.921 (no NB (true))
    ("mae", False, {("fake-mf", "uniform"), ("fake-mf", "user"), ("fake-mf", "item")}),
    # MF-IPS 0.878 / 0.832 x3 / 0.920 / 0.831; Fake MF 0.848 / 0.802 x3 / 0.890
    ("mae", True, {("fake-mf", "user"), ("fake-mf", "item"), ("fake-mf", "user-item")}),
    # Fake MF is 0.05 worse: MF-IPS NB (true) 1.105 is lowest
    ("mse", False, {("mf-ips", "nb-true")}),
    ("mse", True, {("mf-ips", "user"), ("mf-ips", "item")}),  # 1.115 twice
    # MF-IPS 0.291 x4 / 0.281 / 0.284; Fake MF 0.296 x4 / 0.286
    ("ndcg3_paper", False, {("fake-mf", p) for p in ("uniform", "user", "item", "user-item")}),
    ("ndcg3_paper", True, {("fake-mf", p) for p in ("uniform", "item", "user-item")}),  # 0.298
    ("ndcg3_standard", True, {("mf-ips", p) for p in SIX}),  # 0.61 against 0.60 and 0.56
])
def test_best_of_each_column(bench, metric, with_at, expected):
    assert _marked(bench, metric, with_at) == expected


def test_best_marks_and_mcar_daggers_in_the_text(root):
    text = benchmark_report(root, fmt="markdown", expected_seeds=5).text
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| Coat")]
    assert rows[7][:7] == ["Coat", "Fake MF", "user", "published", "authors", "**0.843**",
                           "**0.802**"]
    assert rows[5][:3] == ["Coat", "MF-IPS", "NB (true)†"]
    assert rows[12][:6] == ["Coat", "Fake MCAR†", "—", "published", "authors", "1.073"]
    assert "† uses MCAR labels" in text
    plain = benchmark_report(root, fmt="table", expected_seeds=5).text
    assert "1.105*" in plain and "0.843*" in plain and "NB (true)†" in plain


def test_missing_cells_are_dashes_with_a_notice(root, bench):
    out = benchmark_report(root, fmt="csv", expected_seeds=5)
    row = next(line for line in out.text.splitlines() if line.startswith("Coat,Fake MF,NB (true)"))
    assert row == "Coat,Fake MF,NB (true)†," + ",".join(["-"] * 10)
    assert ("no results for Coat Fake MF: NB (true) w/o AT, NB (true) w/ AT "
            "(run atrec train --dataset coat --method fake-mf)") in out.notices
    assert "Fake MF: coat/user: 4 of 5 seeds; run the missing seeds for a full table" \
        in out.notices


def _test(bench, method, propensity, with_at, metric):
    return next(t for t in bench.tests if (t.method, t.propensity, t.with_at, t.metric)
                == (method, propensity, with_at, metric))


def test_paired_tests_pair_by_seed_against_mf_ips(bench):
    # Fake MF: 5 propensities x 2 AT options x 4 metrics; Fake MCAR: 1 x 2 x 4
    assert len(bench.tests) == 40 + 8
    t = _test(bench, "fake-mf", "item", True, "mae")
    a, b = mf_values("item", True, "mae"), fake_values("item", True, "mae")
    assert t.n == 5 and t.mean_diff == pytest.approx(-0.03) and t.method_better is True
    assert t.t_p == pytest.approx(stats.ttest_rel(b, a).pvalue)
    assert t.w_p == pytest.approx(stats.wilcoxon(b, a).pvalue)
    # seed 4 of Fake MF user without AT is missing: the test pairs seeds 0..3 only
    t = _test(bench, "fake-mf", "user", False, "mse")
    a, b = mf_values("user", False, "mse")[:4], fake_values("user", False, "mse")[:4]
    assert t.n == 4 and t.dropped == (4,)
    assert t.t_stat == pytest.approx(stats.ttest_rel(b, a).statistic)
    assert ("paired test of Fake MF against MF-IPS on Coat user without AT: seed 4 only on one "
            "side, left out") in bench.notices
    # a method without propensity is compared with MF-IPS uniform (constant weights)
    t = _test(bench, "fake-mcar", "none", False, "mae")
    assert t.baseline_propensity == "uniform" and t.mean_diff == pytest.approx(0.2)
    assert t.method_better is False


def test_holm_runs_over_the_whole_family(bench):
    for kind in ("t", "w"):
        raw = [getattr(t, f"{kind}_p") for t in bench.tests]
        order = sorted(range(len(raw)), key=raw.__getitem__)
        m, running, expected = len(raw), 0.0, [0.0] * len(raw)
        for rank, i in enumerate(order):  # Holm by hand: (m - rank) * p, capped, running max
            running = max(running, min(1.0, (m - rank) * raw[i]))
            expected[i] = running
        assert [getattr(t, f"{kind}_p_holm") for t in bench.tests] == pytest.approx(expected)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders(root, fmt):
    out = benchmark_report(root, fmt=fmt, std=True, expected_seeds=5)
    if fmt == "json":
        doc = json.loads(out.text, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
        assert doc["table"] == "benchmark" and doc["baseline"] == "mf-ips"
        row = next(r for r in doc["rows"] if (r["method"], r["propensity"]) == ("fake-mf", "user"))
        cell = row["cells"]["mae"]["without"]
        assert cell["best"] is True and cell["n"] == 4 and cell["seeds"] == [0, 1, 2, 3]
        assert cell["mean"] == pytest.approx(0.843 + np.mean(FAKE[:4]))
        assert next(r for r in doc["rows"] if r["method"] == "fake-mcar")["uses_mcar"] is True
        assert len(doc["tests"]) == 48 and set(doc["tests"][0]["t"]) == {
            "statistic", "p", "p_holm", "significant"}
        return
    assert "Paired tests vs MF-IPS at the same propensity" in out.text
    if fmt == "latex":
        assert "\\multicolumn{2}{c}{MAE}" in out.text and "w/o AT & w/ AT" in out.text
        assert "\\multicolumn{2}{c}{nDCG@3 (standard)}" in out.text
        assert "\\toprule" in out.text and "\\hline" not in out.text
        assert "\\textbf{0.843}" in out.text and "$\\pm$" in out.text
        assert "NB (true)$^\\dagger$" in out.text and "±" not in out.text and "_" not in out.text
    if fmt == "csv":
        assert out.text.startswith("# Benchmark")


def test_methods_option_selects_rows_but_tests_against_mf_ips(root):
    bench = load_benchmark(root, expected_seeds=5, methods=["fake-mcar"])
    assert bench.rows == (("coat", "fake-mcar", "none"),)
    assert len(bench.tests) == 8
    with pytest.raises(AtrecError, match="unknown method 'no-such-method': choose from mf-ips, "):
        load_benchmark(root, methods=["no-such-method"])


def test_unregistered_method_keeps_its_raw_name(tmp_path):
    root = write_records(tmp_path, datasets=("coat",))
    write_method(root, "other", ("item",), fake_values)
    bench = load_benchmark(root, expected_seeds=5)
    info = bench.info("other")
    assert (info.label, info.registered, info.uses_propensity) == ("other", False, True)
    assert [p for _, m, p in bench.rows if m == "other"] == list(SIX)
    text = benchmark_report(root, fmt="table", expected_seeds=5).text
    assert "Coat    other" in text
    assert len([t for t in bench.tests if t.method == "other"]) == 8


def test_errors_and_no_results(root, tmp_path):
    with pytest.raises(AtrecError, match="no results") as err:
        benchmark_report(tmp_path)
    assert err.value.exit_code == 3
    with pytest.raises(AtrecError, match="unknown dataset 'imdb'"):
        benchmark_report(root, datasets=["imdb"])
    with pytest.raises(AtrecError, match="unknown format 'html'"):
        benchmark_report(root, fmt="html")
    out = benchmark_report(root, datasets=["yahoo", "coat"], expected_seeds=5, fmt="csv")
    assert "Yahoo! R3,MF-IPS,uniform," + ",".join(["-"] * 8) in out.text
    assert any(n.startswith("no results for Yahoo! R3 MF-IPS") for n in out.notices)
    assert not math.isnan(load_benchmark(root, expected_seeds=5).tests[0].t_p)


def test_benchmark_and_evaluation_import_no_tensorflow():
    code = ("import sys\n"
            "sys.modules['tensorflow'] = None  # any 'import tensorflow' now fails\n"
            "import atrec.reporting.benchmark, atrec.reporting.check, atrec.evaluation.metrics\n"
            "import atrec.evaluation.significance, atrec.evaluation.summary\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr


def test_each_row_from_the_first_set_that_has_it_with_its_params_and_budget(tmp_path):
    # MF-IPS: Table 1 rows published; coat-shipped only under tuned-atrec (with AT also under
    # reference, which comes later in the chain and so is not used)
    root = write_records(tmp_path, datasets=("coat",))
    for label, with_ats in (("tuned-atrec", (False, True)), ("reference", (True,))):
        for with_at in with_ats:
            for seed in SEEDS:
                record = make_record("coat", "coat-shipped", with_at, seed,
                                     {m: 0.5 + (label == "reference") for m in DELTA})
                record["params_source"] = label
                save_record(record, record_path("coat", config_key("coat-shipped", with_at),
                                                label, seed, root))
    bench = load_benchmark(root, params="published,tuned-atrec,reference", expected_seeds=5)
    assert ("coat", "mf-ips", "coat-shipped") in bench.rows
    assert bench.mean("coat", "mf-ips", "coat-shipped", True, "mae") == 0.5
    assert bench.mean("coat", "mf-ips", "item", False, "mae") == pytest.approx(
        np.mean(mf_values("item", False, "mae")))
    rows = {r["propensity"]: r for r in json.loads(benchmark_report(
        root, params="published,tuned-atrec,reference", fmt="json",
        expected_seeds=5).text)["rows"]}
    assert (rows["item"]["params"], rows["item"]["budget"]) == ("published", "authors")
    # the shipped file holds no MF-IPS coat-shipped entry here: its budget is unknown
    assert rows["coat-shipped"]["params"] == "tuned-atrec"
    text = benchmark_report(root, params="published,tuned-atrec", fmt="csv",
                            expected_seeds=5).text
    assert "Coat,MF-IPS,Coat (shipped),tuned-atrec," in text


def test_the_budget_is_read_from_the_records_where_they_name_it(tmp_path):
    """A record made from a 25-trial entry keeps saying so after the shipped file moved on
    (its coat-shipped entries have 50 trials); records that name no budget fall back to the
    file."""
    root = write_records(tmp_path, datasets=("coat",))
    for with_at in (False, True):
        for seed in SEEDS:
            record = make_record("coat", "coat-shipped", with_at, seed, {m: 0.5 for m in DELTA},
                                 params_source="tuned-atrec")
            if with_at:
                record["params_budget"] = "25 trials"
            save_record(record, record_path("coat", config_key("coat-shipped", with_at),
                                            "tuned-atrec", seed, root))
    rows = {r["propensity"]: r for r in json.loads(benchmark_report(
        root, params="published,tuned-atrec", fmt="json", expected_seeds=5).text)["rows"]}
    assert rows["coat-shipped"]["budget"] == "50 trials / 25 trials"
    assert rows["item"]["budget"] == "authors"
