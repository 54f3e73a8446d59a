import math

import pytest
from scipy import stats
from synthetic_records import make_record, write_records

from atrec.evaluation.significance import (
    compare_paired,
    holm,
    method_tests,
    paired_test,
    significance_table,
)
from atrec.evaluation.summary import load_summary, summarize


@pytest.fixture(scope="session")
def table(tmp_path_factory):
    root = write_records(tmp_path_factory.mktemp("records"))
    return significance_table(load_summary(root, expected_seeds=5))


def _find(table, dataset, propensity, metric):
    return next(t for t in table if (t.dataset, t.propensity, t.metric) == (dataset, propensity,
                                                                            metric))


def test_holm_hand_example():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> 0.06)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one_and_skips_nan():
    out = holm([0.5, float("nan"), 0.4])  # m = 2: 0.4 x 2 = 0.8, then max(0.8, 0.5 x 1) = 0.8
    assert out[0] == pytest.approx(0.8) and math.isnan(out[1]) and out[2] == pytest.approx(0.8)
    assert holm([0.6, 0.7]) == [1.0, 1.0]
    assert holm([]) == []


@pytest.mark.parametrize("bad", [[1.5], [-0.1], [[0.1, 0.2]]])
def test_holm_rejects_bad_p_values(bad):
    with pytest.raises(ValueError):
        holm(bad)


def test_paired_t_and_wilcoxon_golden(table):
    row = _find(table, "yahoo", "uniform", "mae")
    # differences: -0.152 + (0.03, -0.01, 0.02, -0.02, -0.02); their sd is sqrt(0.0022 / 4)
    t_hand = -0.152 / (math.sqrt(0.0022 / 4) / math.sqrt(5))
    assert row.n == 5 and row.mean_diff == pytest.approx(-0.152)
    assert row.t_stat == pytest.approx(t_hand)
    assert row.t_p == pytest.approx(2 * stats.t.sf(abs(t_hand), 4))
    # all five differences negative: W = 0, exact two-sided p = 2 / 2^5
    assert row.w_stat == 0 and row.w_p == pytest.approx(2 / 32)
    assert row.at_better is True


def test_wilcoxon_statistic_with_ties(table):
    row = _find(table, "coat", "item", "mse")
    # d = (0.028, -0.012, 0.018, -0.022, -0.022): ranks 5, 1, 2, 3.5, 3.5 -> R+ = 7, R- = 8
    assert row.w_stat == pytest.approx(7.0)
    assert row.at_better is True  # MSE 1.117 -> 1.115


def test_holm_runs_over_the_whole_table(table):
    assert len(table) == 2 * 6 * 3
    assert [t.t_p_holm for t in table] == pytest.approx(holm([t.t_p for t in table]))
    assert all(t.t_p_holm >= t.t_p for t in table)
    # Wilcoxon with 5 seeds cannot go below p = 0.0625, so nothing is significant
    assert not any(t.w_significant for t in table)


def _records(values_without, values_with, metric="mae", propensity="item"):
    out = [make_record("coat", propensity, False, s, {metric: v})
           for s, v in values_without.items()]
    out += [make_record("coat", propensity, True, s, {metric: v}) for s, v in values_with.items()]
    return out


def test_all_zero_differences_do_not_crash_and_are_not_significant():
    same = {0: 0.9, 1: 0.8, 2: 0.85}
    strong = _records({0: 1.0, 1: 1.1, 2: 1.2, 3: 1.3}, {0: 0.5, 1: 0.62, 2: 0.69, 3: 0.81},
                      propensity="user")
    s = summarize(_records(same, same) + strong, expected_seeds=3)
    rows = {t.propensity: t for t in significance_table(s, metrics=("mae",))}
    zero = rows["item"]
    assert (zero.t_p, zero.w_p, zero.mean_diff, zero.at_better) == (1.0, 1.0, 0.0, None)
    assert not zero.t_significant
    # two tested rows: the smaller p is multiplied by 2
    assert rows["user"].t_p_holm == pytest.approx(min(1.0, 2 * rows["user"].t_p))


def test_only_shared_seeds_are_paired_and_one_seed_is_not_tested():
    test = paired_test("coat", "item", "ndcg3_paper", {0: 0.2, 1: 0.3, 2: 0.4},
                       {1: 0.35, 2: 0.5, 3: 0.9})
    assert test.n == 2 and test.mean_diff == pytest.approx(0.075) and test.at_better is True
    one = paired_test("coat", "item", "mae", {0: 0.2}, {0: 0.1})
    assert one.n == 1 and math.isnan(one.t_p) and math.isnan(one.w_p)
    assert paired_test("coat", "item", "mae", {0: 0.2}, {1: 0.1}) is None


def test_markers_in_rows(table):
    row = _find(table, "yahoo", "item", "mse")
    assert row.t_significant
    assert row.as_row()["sig (t)"] == "*" and row.as_row()["sig (Wilcoxon)"] == ""
    machine = row.as_row(machine=True)
    assert machine["significant (t)"] is True and machine["significant (Wilcoxon)"] is False


def test_compare_paired_names_the_seeds_only_one_side_has():
    a, b = {0: 1.0, 1: 1.1, 2: 1.3, 5: 9.0}, {0: 0.9, 1: 1.05, 2: 1.1, 3: 0.1}
    p = compare_paired(a, b, "mse")
    assert p.n == 3 and p.dropped == (3, 5) and p.b_better is True
    assert p.mean_a == pytest.approx((1.0 + 1.1 + 1.3) / 3)  # seed 5 left out
    assert p.t_p == pytest.approx(stats.ttest_rel([0.9, 1.05, 1.1], [1.0, 1.1, 1.3]).pvalue)


def test_method_tests_compare_with_the_baseline_at_the_same_propensity():
    def recs(method, propensity, values):
        out = [make_record("coat", propensity, False, s, {"mae": v}) for s, v in values.items()]
        for r in out:
            r["method"] = method
        return out

    mf = {0: 1.0, 1: 1.1, 2: 1.2}
    records = (recs("mf-ips", "item", mf) + recs("mf-ips", "uniform", {0: 2.0, 1: 2.0, 2: 2.1})
               + recs("other", "item", {0: 0.9, 1: 1.05, 2: 1.0})
               + recs("plain", "none", {0: 1.8, 1: 1.9, 2: 2.0}))
    summaries = {m: summarize(records, expected_seeds=3, method=m)
                 for m in ("mf-ips", "other", "plain")}
    rows = [("coat", "mf-ips", "item"), ("coat", "other", "item"), ("coat", "plain", "none")]
    tests = method_tests(summaries, rows, metrics=("mae",))
    assert [(t.method, t.baseline_propensity, t.with_at) for t in tests] == [
        ("other", "item", False), ("plain", "uniform", False)]
    assert tests[0].mean_diff == pytest.approx(-0.35 / 3) and tests[0].method_better is True
    assert tests[1].mean_diff == pytest.approx(-0.4 / 3) and tests[1].method_better is True
    assert [t.t_p_holm for t in tests] == pytest.approx(holm([t.t_p for t in tests]))
