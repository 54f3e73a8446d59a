"""Intervals over test users and seeds (atrec.evaluation.bootstrap): a resample's values against
the metrics recomputed on the resampled test set itself, the pairing, and the tables' section."""

import numpy as np
import pytest

from atrec.evaluation import binary_metrics as bm
from atrec.evaluation.bootstrap import (
    RESAMPLES,
    paired_interval,
    resampled_metrics,
    seed_user_interval,
    user_counts,
    weighted_auc,
)


def _test_set(seed=0, n=900, users=60):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, users, n) * 3 + 7          # ids neither 0-based nor dense
    y = (rng.random(n) < 0.4).astype(float)
    q = np.round(rng.random(n), 2)                  # ties
    return u, y, q


def test_weighted_auc_is_the_auc_of_the_rows_repeated():
    u, y, q = _test_set()
    assert weighted_auc(q, y, np.ones((1, y.size)))[0] == pytest.approx(bm.global_auc(u, y, q),
                                                                         rel=1e-12)
    w = np.random.default_rng(1).integers(0, 4, y.size)
    rep = np.repeat(np.arange(y.size), w)
    assert weighted_auc(q, y, w[None].astype(float))[0] == pytest.approx(
        bm.global_auc(u[rep], y[rep], q[rep]), rel=1e-12)


def test_a_resamples_values_are_the_metrics_of_the_resampled_test_set():
    """Resample 3 rebuilt by hand: each drawn user's rows repeated as a new user per draw."""
    u, y, q = _test_set()
    got = resampled_metrics(u, y, q, ("auc", "auc_user", "ndcg5_ref", "ndcg5", "mae"))
    assert set(got) == {"auc", "auc_user", "ndcg5_ref", "ndcg5"}
    assert all(len(v) == RESAMPLES for v in got.values())
    ids = np.unique(u)
    counts = user_counts(ids.size, u.size)[3].astype(int)
    rows, new_ids = [], []
    for k, (user, c) in enumerate(zip(ids, counts)):
        mine = np.flatnonzero(u == user)
        for j in range(c):
            rows.append(mine)
            new_ids.append(np.full(mine.size, 1000 * k + j))
    rows, new_u = np.concatenate(rows), np.concatenate(new_ids)
    yr, qr = y[rows], q[rows]
    top = bm.top_k_values(new_u, yr, qr)
    assert got["auc"][3] == pytest.approx(bm.global_auc(new_u, yr, qr), rel=1e-12)
    assert got["auc_user"][3] == pytest.approx(bm.user_auc(new_u, yr, qr), rel=1e-12)
    assert got["ndcg5_ref"][3] == pytest.approx(top["ndcg_ref"], rel=1e-12)
    assert got["ndcg5"][3] == pytest.approx(top["ndcg"], rel=1e-12)


def test_the_resamples_depend_on_the_test_set_only():
    u, y, q = _test_set()
    a = resampled_metrics(u, y, q, ("auc",))
    b = resampled_metrics(u, y, q, ("auc",))
    c = resampled_metrics(u, y, q[::-1].copy(), ("auc",))       # another model, same users
    assert a == b and a != c
    np.testing.assert_array_equal(user_counts(60, 900), user_counts(60, 900))


def test_intervals_are_paired_and_seeded():
    rng = np.random.default_rng(2)
    base = {s: 0.7 + 0.01 * rng.standard_normal(RESAMPLES) for s in range(5)}
    shifted = {s: v + 0.02 for s, v in base.items()}
    low, high = paired_interval(shifted, base)
    assert low == pytest.approx(0.02) and high == pytest.approx(0.02)   # the pairing cancels
    noisy = {s: 0.72 + 0.01 * rng.standard_normal(RESAMPLES) for s in range(5)}
    interval = seed_user_interval(noisy)
    assert interval == seed_user_interval(noisy)                          # seeded
    assert interval[0] < np.mean(list(noisy.values())) < interval[1]
    assert paired_interval(noisy, {9: base[0]}) is None                   # no shared seed


def test_the_benchmark_shows_intervals_over_users_and_seeds(tmp_path):
    import json

    from atrec.protocols.base import PROTOCOLS_FOLDER
    from atrec.protocols.binary import BINARY_CLEAN_METRICS
    from atrec.reporting.benchmark_render import benchmark_report
    from atrec.results.records import record_path, save_record

    root = tmp_path / PROTOCOLS_FOLDER / "binary-clean"
    rng = np.random.default_rng(3)
    for seed in range(3):
        for method, shift in (("mf", 0.0), ("popularity", 0.05)):
            draws = 0.7 + shift + 0.01 * rng.standard_normal(RESAMPLES)
            metrics = dict.fromkeys(BINARY_CLEAN_METRICS, 0.5)
            metrics["auc"] = float(draws.mean())
            save_record({"schema": 1, "dataset": "coat", "propensity": "none",
                         "with_at": False, "method": method, "seed": seed,
                         "params": {"dim": 16, "lam": 1e-4}, "params_source": "reference",
                         "variant": "", "metrics": metrics, "provenance": {},
                         "protocol": {"name": "binary-clean", "settings": {}},
                         "bootstrap": {"metrics": {"auc": draws.tolist()}}},
                        record_path("coat", f"{method}/none", "reference", seed, root))
    out = benchmark_report(root, ["coat"], "reference", expected_seeds=3,
                           protocol="binary-clean").text
    assert "95% intervals over test users and seeds" in out
    line = next(x for x in out.splitlines() if x.startswith("Coat") and "Popularity" in x
                and "[" in x)
    assert "*" in line                       # 0.05 above MF: the interval excludes 0
    doc = json.loads(benchmark_report(root, ["coat"], "reference", fmt="json",
                                      expected_seeds=3, protocol="binary-clean").text)
    cell = next(r for r in doc["rows"] if r["method"] == "popularity")["cells"]["auc"]
    low, high = cell["without"]["diff_ci95_users_seeds"]
    assert 0 < low < 0.05 < high < 0.1
