"""Reports of another protocol's records: the benchmark, the paired tests and the export show the
metrics those records carry, and saito2020's results folder never sees them."""

import pytest

from atrec.evaluation.summary import summarize
from atrec.protocols import results_root
from atrec.reporting.benchmark import load_benchmark
from atrec.reporting.export import run_rows
from atrec.results.records import iter_records, record_path, record_problem, save_record

IJCAI = ("mae", "mse", "ndcg5_ijcai", "recall5_ijcai")


def _record(method, propensity, seed, mse, ndcg):
    return {"schema": 1, "dataset": "coat", "propensity": propensity, "with_at": False,
            "method": method, "seed": seed, "params": {"dim": 5, "lam": 0.01},
            "params_source": "reference", "variant": "",
            "metrics": {"mae": mse - 0.3, "mse": mse, "ndcg5_ijcai": ndcg,
                        "recall5_ijcai": ndcg / 2, "best_step": 3, "best_val_loss": 1.0},
            "protocol": {"name": "ijcai2022", "settings": {}}, "provenance": {}}


@pytest.fixture
def ijcai_results(tmp_path):
    root = results_root("ijcai2022", tmp_path)
    for seed in range(3):
        for method, key, propensity, shift in (("mf-ips", "uniform", "uniform", 0.0),
                                               ("damf", "damf/none", "none", -0.1)):
            record = _record(method, propensity, seed, 1.2 + shift + 0.01 * seed,
                             0.6 - shift + 0.01 * seed)
            save_record(record, record_path("coat", key, "reference", seed, root))
    return tmp_path, root


def test_records_without_saito_metrics_are_valid():
    assert record_problem(_record("mf-ips", "uniform", 0, 1.2, 0.6)) is None
    saito = _record("mf-ips", "uniform", 0, 1.2, 0.6)
    saito["protocol"]["name"] = "saito2020"
    assert record_problem(saito) == "'metrics' lacks 'ndcg3_paper'"


def test_benchmark_and_tests_show_the_records_metrics(ijcai_results):
    base, root = ijcai_results
    bench = load_benchmark(root, ["coat"], "reference", expected_seeds=3)
    assert bench.metrics == IJCAI
    assert bench.mean("coat", "damf", "none", False, "ndcg5_ijcai") == pytest.approx(0.71)
    assert {t.metric for t in bench.tests} == set(IJCAI)
    # saito2020's folder (the base) holds none of them
    assert list(iter_records(base)) == []


def test_summary_and_export_carry_the_protocol_metrics(ijcai_results):
    _, root = ijcai_results
    summary = summarize(iter_records(root), params="reference", expected_seeds=3)
    cell = summary.cell("coat", "uniform", False, "recall5_ijcai")
    assert cell.values == pytest.approx((0.30, 0.305, 0.31))
    rows, columns = run_rows(root)
    assert len(rows) == 6 and "ndcg3_paper" not in columns
    assert columns[columns.index("mae"):columns.index("mae") + 6] == [*IJCAI, "best_step",
                                                                       "best_val_loss"]
