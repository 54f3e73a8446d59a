"""Intervals that include the test set: a paired bootstrap over test users on top of seeds, for
the binary protocols (docs/protocols.md, "Intervals over test users and seeds").

Seeds vary training (split, initialisation, batches) but every seed is scored on one test set,
so an interval over seeds alone says nothing of how the numbers would move on other test users.
Here:

1. **At training** (:func:`resampled_metrics`, written into each binary record's ``bootstrap``):
   :data:`RESAMPLES` resamples of the test set's users, drawn with replacement from a generator
   keyed by :data:`BOOTSTRAP_SEED` and the test set's size (so every method and seed of a
   protocol and dataset gets the same resamples: they are paired), and the record's
   :data:`BOOTSTRAP_METRICS` on each. A user drawn ``c`` times weighs ``c``: a per-user metric
   is the ``c``-weighted mean of the users' values, pooled AUC the AUC of the test rows weighted
   by their user's ``c``.
2. **In a table** (:func:`seed_user_interval`, :func:`paired_interval`): for resample ``b``,
   the seeds are resampled with replacement too (a generator keyed by :data:`INTERVAL_SEED`)
   and the mean over them of resample ``b``'s values is one draw; the 2.5th and 97.5th
   percentiles of the :data:`RESAMPLES` draws bound the interval. A difference against the
   baseline pairs the seeds both have and the same user resamples.
"""

from __future__ import annotations

import math

import numpy as np

from atrec.evaluation import binary_metrics as bm

RESAMPLES = 200
BOOTSTRAP_SEED = 60_001     # the test-user resamples (with the test set's size)
INTERVAL_SEED = 60_002      # the seed resamples of a table's intervals
LEVEL = 0.95
BOOTSTRAP_METRICS = ("auc", "auc_user", "ndcg5_ref", "ndcg5")
CHUNK = 25                  # resamples weighted at once (memory)


def user_counts(n_users: int, n_rows: int, resamples: int = RESAMPLES) -> np.ndarray:
    """``[resamples, n_users]``: how often each test user (in increasing id) is drawn."""
    rng = np.random.default_rng([BOOTSTRAP_SEED, n_rows, n_users])
    draws = rng.integers(0, n_users, (resamples, n_users))
    return np.stack([np.bincount(d, minlength=n_users) for d in draws]).astype(np.float64)


def weighted_auc(q: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pooled AUC of rows weighted by ``weights`` ``[B, n]``, ``[B]``: the weighted share of
    (positive, negative) pairs the positive wins, a tie counting 1/2 (all weights 1: the
    pooled AUC)."""
    order = np.argsort(q, kind="stable")
    q, y, w = q[order], y[order], weights[:, order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    pos = np.add.reduceat(w * y, starts, axis=1)           # [B, tie groups]
    neg = np.add.reduceat(w * (1.0 - y), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg                    # negatives scored strictly lower
    won = (pos * (below + 0.5 * neg)).sum(axis=1)
    total = pos.sum(axis=1) * neg.sum(axis=1)
    return np.divide(won, total, out=np.full(won.shape, np.nan), where=total > 0)


def _weighted_mean(values: np.ndarray, keep: np.ndarray, counts: np.ndarray) -> np.ndarray:
    w = counts * keep
    total = w.sum(axis=1)
    return np.divide((w * np.where(keep, values, 0.0)).sum(axis=1), total,
                     out=np.full(total.shape, np.nan), where=total > 0)


def resampled_metrics(users: np.ndarray, labels: np.ndarray, q: np.ndarray,
                      metrics, resamples: int = RESAMPLES) -> dict:
    """``{metric: [resamples] values}`` of the :data:`BOOTSTRAP_METRICS` among ``metrics`` on
    the user resamples of this test set (module doc). Arrays ``(n,)``."""
    users = np.asarray(users)
    y = np.asarray(labels, np.float64)
    q = np.asarray(q, np.float64)
    ids, row_user = np.unique(users, return_inverse=True)
    counts = user_counts(ids.size, users.size, resamples)
    out = {}
    wanted = [m for m in BOOTSTRAP_METRICS if m in metrics]
    if "auc" in wanted:   # in chunks: [resamples, rows] weights are 86 MB at Yahoo's size
        out["auc"] = np.concatenate([weighted_auc(q, y, counts[b:b + CHUNK, row_user])
                                     for b in range(0, resamples, CHUNK)])
    if "auc_user" in wanted:
        auc, both = bm.user_auc_values(users, y, q)
        out["auc_user"] = _weighted_mean(auc, both, counts)
    if {"ndcg5_ref", "ndcg5"} & set(wanted):
        per = bm.top_k_per_user(users, y, q, bm.BINARY_K)
        every = np.ones(ids.size, bool)
        if "ndcg5_ref" in wanted:
            out["ndcg5_ref"] = _weighted_mean(per["ndcg"], every, counts)
        if "ndcg5" in wanted:
            out["ndcg5"] = _weighted_mean(per["ndcg"], per["has"], counts)
    return {m: [None if math.isnan(v) else float(v) for v in out[m]] for m in wanted}


def _draws(by_seed: dict, rng: np.random.Generator) -> np.ndarray | None:
    """The ``[resamples]`` draws of the mean over resampled seeds (module doc, step 2)."""
    seeds = sorted(by_seed)
    if not seeds:
        return None
    values = np.asarray([by_seed[s] for s in seeds], np.float64)     # [seeds, resamples]
    n, b = values.shape
    pick = rng.integers(0, n, (b, n))
    return np.nanmean(values[pick, np.arange(b)[:, None]], axis=1)


def _bounds(draws: np.ndarray | None) -> tuple[float, float] | None:
    if draws is None or not np.isfinite(draws).any():
        return None
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.nanpercentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def seed_user_interval(by_seed: dict) -> tuple[float, float] | None:
    """The 95% interval of a configuration's mean over seeds and test users, from
    ``{seed: [resamples] values}`` (``None`` without any)."""
    return _bounds(_draws(by_seed, np.random.default_rng(INTERVAL_SEED)))


def paired_interval(method: dict, baseline: dict) -> tuple[float, float] | None:
    """The 95% interval of ``method - baseline`` over the seeds both have, paired by seed and
    by user resample (``{seed: [resamples] values}`` each; ``None`` without a shared seed)."""
    shared = sorted(set(method) & set(baseline))
    diff = {s: np.asarray(method[s], np.float64) - np.asarray(baseline[s], np.float64)
            for s in shared if len(method[s]) == len(baseline[s])}
    return _bounds(_draws(diff, np.random.default_rng(INTERVAL_SEED)))
