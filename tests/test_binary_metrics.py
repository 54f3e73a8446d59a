"""The binary protocols' metrics on hand-computed cases: log loss with its clip, global AUC with
ties, and the top-5 metrics in both conventions for a user without a positive, with ties broken
in test-row order; their registration, and a benchmark table of records that carry them."""

import json
import math

import numpy as np
import pytest

from atrec.evaluation import binary_metrics as bm
from atrec.evaluation.registry import (
    BINARY_CLEAN_METRICS,
    BINARY_REFERENCE_METRICS,
    DIRECTIONS,
    LABELS,
    get_metric,
    metric_names,
    ranking_values,
)
from atrec.protocols.base import PROTOCOLS_FOLDER
from atrec.reporting.benchmark import load_benchmark
from atrec.reporting.benchmark_render import benchmark_report
from atrec.reporting.tables import FORMATS
from atrec.results.records import record_path, save_record

# Test rows in their order, (user, label, probability). Users 7, 3 and 5 are interleaved; each
# user's rows keep their order below.
ROWS = [
    (7, 0, 0.9), (3, 1, 0.4), (7, 1, 0.5), (5, 0, 0.3), (7, 0, 0.7), (3, 0, 0.4),
    (7, 0, 0.5), (5, 0, 0.6), (3, 0, 0.8), (7, 0, 0.2), (3, 1, 0.1), (7, 1, 0.2), (5, 0, 0.6),
    (3, 1, 0.05),
]
USERS = np.array([r[0] for r in ROWS])
LABELS_Y = np.array([r[1] for r in ROWS], dtype=float)
Q = np.array([r[2] for r in ROWS], dtype=np.float32)
# User 7, rows (y, q): (0, .9) (1, .5) (0, .7) (0, .5) (0, .2) (1, .2). Ranked with ties in row
# order: .9 y0, .7 y0, .5 y1, .5 y0, .2 y0 | .2 y1 (6th, cut): 1 hit of 2 positives at rank 3.
#   (ties to the later row would put the last positive 5th: 2 hits)
#   DCG = 1/log2(4) = 1/2, IDCG = 1 + 1/log2(3); recall 1/2, precision 1/5.
NDCG_7 = 0.5 / (1 + 1 / math.log2(3))
# User 3, rows: (1, .4) (0, .4) (0, .8) (1, .1) (1, .05). Ranked: .8 y0, .4 y1, .4 y0, .1 y1,
# .05 y1 (all 5 in the top 5): DCG = 1/log2(3) + 1/log2(5) + 1/log2(6),
# IDCG = 1 + 1/log2(3) + 1/log2(4); recall 3/3, precision 3/5.
NDCG_3 = ((1 / math.log2(3) + 1 / math.log2(5) + 1 / math.log2(6))
          / (1 + 1 / math.log2(3) + 1 / 2))
# User 5, rows (0, .3) (0, .6) (0, .6): no positive. Reference convention: nDCG 1, recall 0,
# precision 0; standard convention: left out.
EXPECTED = {
    "ndcg5_ref": (NDCG_7 + NDCG_3 + 1) / 3,
    "ndcg5": (NDCG_7 + NDCG_3) / 2,
    "recall5_ref": (1 / 2 + 1 + 0) / 3,                     # 0.5
    "recall5": (1 / 2 + 1) / 2,                             # 0.75
    "precision5": (1 / 5 + 3 / 5 + 0) / 3,                  # 4/15
    "precision5_std": (1 / 5 + 3 / 5) / 2,                  # 2/5
    # from the averages: 2 / (15/4 + 2) = 8/23 and 2 / (5/2 + 4/3) = 12/23; the mean of the
    # per-user F1s (2/7 for user 7, 3/4 for user 3) would be 29/56 over users with a positive
    "f1_5_ref": 8 / 23,
    "f1_5": 12 / 23,
}
TOP_K = tuple(EXPECTED)


@pytest.mark.parametrize("name", TOP_K)
def test_top5_metrics_by_hand_with_ties_in_row_order(name):
    assert get_metric(name).compute(USERS, LABELS_Y, Q) == pytest.approx(EXPECTED[name],
                                                                         rel=1e-12)


def test_ranking_values_computes_them_together_and_the_scored_ones():
    names = list(BINARY_CLEAN_METRICS[2:])
    out = ranking_values(names, USERS, LABELS_Y, Q)
    assert list(out) == names
    for name in TOP_K:
        assert out[name] == get_metric(name).compute(USERS, LABELS_Y, Q)   # bit for bit
        assert out[name] == pytest.approx(EXPECTED[name], rel=1e-12)
    assert out["auc"] == get_metric("auc").compute(USERS, LABELS_Y, Q)
    assert out["logloss"] == get_metric("logloss").compute(USERS, LABELS_Y, Q)
    with pytest.raises(ValueError, match="'mse' is not computed from the final scores"):
        ranking_values(["mse"], USERS, LABELS_Y, Q)


def test_no_user_with_a_positive():
    users, y, q = np.array([0, 0, 1]), np.zeros(3), np.array([0.1, 0.2, 0.3], np.float32)
    values = bm.top_k_values(users, y, q)
    assert values["ndcg_ref"] == 1.0 and values["recall_ref"] == 0.0
    assert values["precision"] == 0.0 and values["f1_ref"] == 0.0
    for key in ("ndcg", "recall", "precision_std", "f1"):
        assert math.isnan(values[key])


def test_a_cut_below_five_and_a_user_with_fewer_items():
    # k = 2: user 7's top 2 (.9 y0, .7 y0) hit nothing; user 3's (.8 y0, .4 y1) hit one at
    # rank 2 of its 3 positives; user 5 (3 items, none positive) counts 1 in ndcg_ref
    values = bm.top_k_values(USERS, LABELS_Y, Q, k=2)
    ndcg_3 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert values["ndcg"] == pytest.approx(ndcg_3 / 2)
    assert values["ndcg_ref"] == pytest.approx((0 + ndcg_3 + 1) / 3)
    assert values["precision"] == pytest.approx((0 + 1 / 2 + 0) / 3)
    assert values["recall"] == pytest.approx((0 + 1 / 3) / 2)


def test_log_loss_by_hand_with_the_clip():
    y = np.array([1.0, 0.0, 1.0, 0.0])
    q = np.array([0.75, 0.5, 0.0, 0.0], np.float32)
    # -log(0.75), -log(0.5), then q = 0 for a positive is clipped to 1e-7: -log(1e-7) = 7 ln 10,
    # and for a negative to -log(1 - 1e-7) = 1e-7 + 5e-15 + ...
    expected = (math.log(4 / 3) + math.log(2) + 7 * math.log(10) + 1e-7) / 4
    assert get_metric("logloss").compute(np.zeros(4), y, q) == pytest.approx(expected, rel=1e-12)


def test_auc_by_hand_with_a_tie():
    y = np.array([1.0, 0.0, 1.0, 0.0, 0.0])
    q = np.array([0.8, 0.8, 0.3, 0.5, 0.1], np.float32)
    # positive .8 against the negatives .8, .5, .1: 1/2 + 1 + 1; positive .3: 0 + 0 + 1
    assert get_metric("auc").compute(np.zeros(5), y, q) == pytest.approx(3.5 / 6, rel=1e-12)


@pytest.mark.parametrize("label", [0.0, 1.0])
def test_auc_of_one_class_is_nan(label):
    assert math.isnan(bm.global_auc(np.zeros(3), np.full(3, label), np.array([0.1, 0.5, 0.9])))


def test_auc_against_a_brute_force_pair_count():
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.3).astype(float)
    q = np.round(rng.random(300), 1).astype(np.float32)   # 11 values: many ties
    pos, neg = q[y == 1][:, None], q[y == 0][None, :]
    brute = ((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size)
    assert bm.global_auc(np.zeros(300), y, q) == pytest.approx(brute, rel=1e-12)


def test_per_user_auc_by_hand():
    # user 0: positive .8 against negatives .8 and .1: (1/2 + 1) / 2; user 1: its positive .2
    # below its negative .9: 0; user 2 has no negative and is left out
    users = np.array([0, 1, 0, 2, 0, 1])
    y = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    q = np.array([0.8, 0.2, 0.8, 0.5, 0.1, 0.9], np.float32)
    assert get_metric("auc_user").compute(users, y, q) == pytest.approx((0.75 + 0.0) / 2)
    # a user main effect: each user's items in the wrong order, but the mostly positive user 1
    # above the mostly negative user 0: pooled, 3 positives beat 3 of 4 negatives each
    users = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    y = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    q = np.array([0.1, 0.2, 0.3, 0.4, 0.7, 0.8, 0.85, 0.9])
    assert bm.global_auc(users, y, q) == pytest.approx(9 / 16)
    assert bm.user_auc(users, y, q) == 0.0


def test_per_user_auc_against_each_users_brute_force_pair_count():
    rng = np.random.default_rng(1)
    users = rng.integers(0, 25, 600)
    y = (rng.random(600) < 0.4).astype(float)
    q = np.round(rng.random(600), 1).astype(np.float32)
    per = []
    for u in np.unique(users):
        mine = users == u
        pos, neg = q[mine & (y == 1)][:, None], q[mine & (y == 0)][None, :]
        if pos.size and neg.size:
            per.append(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))
    assert bm.user_auc(users, y, q) == pytest.approx(np.mean(per), rel=1e-12)
    assert math.isnan(bm.user_auc(np.arange(3), np.array([1.0, 0.0, 1.0]), q[:3]))


@pytest.mark.parametrize("labels, message", [
    (np.array([0.0, 2.0]), "labels 0 or 1"),
    (np.array([0.0]), "equal length"),
])
def test_bad_input(labels, message):
    for name in ("logloss", "auc", "ndcg5"):
        with pytest.raises(ValueError, match=message):
            get_metric(name).compute(np.zeros(2, int), labels, np.array([0.1, 0.2]))


def test_registered_with_labels_directions_and_kinds():
    assert set(BINARY_CLEAN_METRICS) <= set(metric_names())
    assert BINARY_CLEAN_METRICS[:len(BINARY_REFERENCE_METRICS)] == BINARY_REFERENCE_METRICS
    assert [LABELS[m] for m in BINARY_CLEAN_METRICS[2:]] == [
        "Log loss", "AUC", "AUC (per user)", "nDCG@5 (ref)", "Recall@5 (ref)", "Precision@5 (ref)", "F1@5 (ref)",
        "nDCG@5", "Recall@5", "Precision@5", "F1@5"]
    assert [m for m in BINARY_CLEAN_METRICS[2:] if DIRECTIONS[m]] == ["logloss"]
    assert {get_metric(m).kind for m in ("logloss", "auc")} == {"scored"}
    assert {get_metric(m).kind for m in TOP_K} == {"ranking"}
    assert "1e-07" in get_metric("logloss").description
    assert "counts as 1" in get_metric("ndcg5_ref").description
    assert "users with a positive" in get_metric("ndcg5").description


def _record(method, propensity, seed, values):
    return {"schema": 1, "dataset": "coat", "propensity": propensity, "with_at": False,
            "method": method, "seed": seed, "params": {"dim": 16, "lam": 1e-4},
            "params_source": "reference", "variant": "",
            "metrics": dict(zip(BINARY_CLEAN_METRICS, values)),
            "protocol": {"name": "binary-icde24", "settings": {}}, "provenance": {}}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_benchmark_of_binary_records_renders(tmp_path, fmt):
    root = tmp_path / PROTOCOLS_FOLDER / "binary-icde24"
    base = np.linspace(0.1, 0.9, len(BINARY_CLEAN_METRICS))
    for seed in range(3):
        for method, key, propensity, shift in (("mf-ips", "uniform", "uniform", 0.0),
                                               ("mf", "mf/none", "none", 0.01)):
            values = base + shift + 0.001 * seed
            save_record(_record(method, propensity, seed, values),
                        record_path("coat", key, "reference", seed, root))
    bench = load_benchmark(root, ["coat"], "reference", expected_seeds=3)
    assert bench.metrics == BINARY_CLEAN_METRICS
    # MF is 0.01 higher everywhere: best in every column but log loss, the only lower-is-better
    assert bench.mean("coat", "mf", "none", False, "auc") == pytest.approx(base[3] + 0.011)
    out = benchmark_report(root, ["coat"], "reference", fmt=fmt, expected_seeds=3).text
    if fmt == "json":
        doc = json.loads(out)
        row = next(r for r in doc["rows"] if r["method"] == "mf")
        assert set(row["cells"]) >= set(BINARY_CLEAN_METRICS)
        assert row["cells"]["auc"]["without"]["best"] is True
        assert row["cells"]["logloss"]["without"]["best"] is False
        return
    if fmt != "latex":
        for label in ("Log loss", "AUC", "nDCG@5 (ref)", "F1@5 (ref)", "Precision@5"):
            assert label in out


def _loop_top5(users, y, q):
    """The top-5 values user by user, with a stable sort per user (a slow, direct reading)."""
    per = {"ndcg_ref": [], "ndcg": [], "recall_ref": [], "recall": [], "precision": [],
           "precision_std": []}
    for u in np.unique(users):
        yu, qu = y[users == u], q[users == u]
        top = yu[np.argsort(-qu, kind="stable")][:5]
        disc = 1 / np.log2(np.arange(2, top.size + 2))
        ideal = (np.sort(yu)[::-1][:5] * disc).sum()
        ndcg = (top * disc).sum() / ideal if ideal > 0 else 1.0
        per["ndcg_ref"].append(ndcg)
        per["recall_ref"].append(top.sum() / max(1, yu.sum()))
        per["precision"].append(top.sum() / 5)
        if yu.sum() > 0:
            per["ndcg"].append(ndcg)
            per["recall"].append(top.sum() / yu.sum())
            per["precision_std"].append(top.sum() / 5)
    return {k: float(np.mean(v)) for k, v in per.items()}


def test_top5_against_a_per_user_loop_on_random_data():
    rng = np.random.default_rng(1)
    users = rng.integers(0, 40, 600)
    y = (rng.random(600) < 0.15).astype(float)
    q = np.round(rng.random(600), 1).astype(np.float32)   # many ties
    values = bm.top_k_values(users, y, q)
    for key, expected in _loop_top5(users, y, q).items():
        assert values[key] == pytest.approx(expected, rel=1e-12), key
