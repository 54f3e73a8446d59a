"""Metrics against a known truth: every cell's true rate ``c`` in place of a drawn 0/1 label
(the ``binary-truth`` protocols, :mod:`atrec.protocols.truth`; docs/semisynthetic.md,
"Learning with known truth").

Each metric is the expectation, over the labels ``y ~ Bernoulli(c)`` of every cell, of a
binary metric's numerator and denominator, so no label draw adds noise to the score:

* :func:`expected_log_loss`: ``mean -(c log q + (1 - c) log(1 - q))``; the oracle ``q = c``
  scores the mean binary entropy of ``c``, the least any prediction can;
* :func:`weighted_auc`: every ordered pair of distinct cells ``(i, j)`` counts with weight
  ``c_i (1 - c_j)`` (``i`` positive, ``j`` negative), a win when ``q_i > q_j`` and half one on a
  tie. Ranking by ``c`` wins every pair whose weight exceeds its mirror's, so the oracle scores
  the most; a constant score scores exactly 1/2;
* :func:`user_auc`: the same within each user, averaged over users;
* :func:`top_k_truth`: per-user nDCG@k and Recall@k with gains ``c``: DCG
  ``sum_{r <= k} c_(r) / log2(r + 1)`` over the user's items ranked by ``q`` (ties in row
  order), IDCG the same for ``c`` sorted descending; Recall ``sum of c over the top k / sum of
  c over all the user's items`` (the expected hits over the expected positives). The oracle
  scores nDCG 1 and the largest Recall there is; a random order scores Recall ``k / n_items``
  on average.

Arrays are ``(n,)``: ``users`` (ids), ``rates`` (``c`` in [0, 1]) and ``q`` (scores; for the
log loss, probabilities). The AUCs are exact: one sort, cumulative sums of the weights.
"""

from __future__ import annotations

import numpy as np

from atrec.evaluation.binary_metrics import BINARY_K, LOG_LOSS_CLIP
from atrec.evaluation.metrics import _ranked, _ranking_inputs

TRUTH_TOP_K = ("ndcg", "recall")


def _truth_inputs(users, rates, q, what: str):
    """:func:`_ranking_inputs`, and ``ValueError`` unless every rate lies in [0, 1]."""
    users, rates, q = _ranking_inputs(users, rates, q, what)
    if not ((rates >= 0.0) & (rates <= 1.0)).all():
        raise ValueError(f"{what} needs true rates in [0, 1]")
    return users, rates, q


def expected_log_loss(users: np.ndarray, rates: np.ndarray, q: np.ndarray) -> float:
    """The cross-entropy of ``q`` (clipped to ``[1e-7, 1 - 1e-7]``) expected under
    ``y ~ Bernoulli(c)``, averaged over the cells (module doc); ``users`` is unused."""
    _, c, q = _truth_inputs(users, rates, q, "the expected log loss")
    q = np.clip(q, LOG_LOSS_CLIP, 1.0 - LOG_LOSS_CLIP)
    return float(-np.mean(c * np.log(q) + (1.0 - c) * np.log(1.0 - q)))


def _group_auc(group: np.ndarray, c: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The weighted AUC (module doc) of each group of cells, ``(n_groups,)``, NaN where no
    pair has weight; ``group`` holds 0-based group numbers.

    Cells sorted by (group, q): within a block of tied scores ``b`` with sums ``C_b`` of ``c``,
    ``D_b`` of ``1 - c`` and ``S_b`` of ``c (1 - c)``, the pairs won are ``C_b`` times the
    ``1 - c`` of the group's lower blocks, plus half the tied pairs, ``(C_b D_b - S_b) / 2``
    (a cell is not paired with itself); the weight of all pairs is ``C D - S`` per group.
    """
    order = np.lexsort((q, group))
    g, c, q = group[order], c[order], q[order]
    d = 1.0 - c
    new = np.r_[True, (g[1:] != g[:-1]) | (q[1:] != q[:-1])]
    block = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    cb = np.bincount(block, weights=c)
    db = np.bincount(block, weights=d)
    sb = np.bincount(block, weights=c * d)
    gb = g[first]
    below = np.cumsum(db) - db                   # 1 - c of every earlier block
    start = np.r_[True, gb[1:] != gb[:-1]]
    below -= np.repeat(below[start], np.diff(np.r_[np.flatnonzero(start), gb.size]))
    n_groups = int(group.max()) + 1
    won = np.bincount(gb, weights=cb * below + 0.5 * (cb * db - sb), minlength=n_groups)
    total = (np.bincount(g, weights=c, minlength=n_groups)
             * np.bincount(g, weights=d, minlength=n_groups)
             - np.bincount(g, weights=c * d, minlength=n_groups))
    out = np.full(n_groups, np.nan)
    has = total > 1e-12 * np.maximum(1.0, np.bincount(g, minlength=n_groups)) ** 2
    out[has] = won[has] / total[has]
    return out


def weighted_auc(users: np.ndarray, rates: np.ndarray, q: np.ndarray) -> float:
    """The AUC over all cells pooled, each (positive, negative) pair weighted by
    ``c_i (1 - c_j)`` (module doc); NaN when no pair has weight. ``users`` is unused."""
    _, c, q = _truth_inputs(users, rates, q, "the weighted AUC")
    return float(_group_auc(np.zeros(c.size, np.int64), c, q)[0])


def user_auc(users: np.ndarray, rates: np.ndarray, q: np.ndarray) -> float:
    """The weighted AUC within each user, averaged over the users with a weighted pair (NaN
    when none has)."""
    users, c, q = _truth_inputs(users, rates, q, "the per-user AUC")
    _, group = np.unique(users, return_inverse=True)
    per_user = _group_auc(group.ravel(), c, q)
    per_user = per_user[~np.isnan(per_user)]
    return float(per_user.mean()) if per_user.size else float("nan")


def top_k_truth(users: np.ndarray, rates: np.ndarray, q: np.ndarray,
                k: int = BINARY_K) -> dict[str, float]:
    """``{"ndcg": ..., "recall": ...}``: per-user nDCG@k and Recall@k with gains ``c``
    (module doc), means over the users whose rates are not all 0 (NaN when there is none)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    users, c, q = _truth_inputs(users, rates, q, "a top-K metric")
    discount = lambda rank: 1.0 / np.log2(rank + 2.0)  # noqa: E731
    gains, rank, group = _ranked(users, c, q, later_first=False)
    top = rank < k
    n_groups = int(group[-1]) + 1
    dcg = np.bincount(group[top], weights=gains[top] * discount(rank[top]), minlength=n_groups)
    hits = np.bincount(group[top], weights=gains[top], minlength=n_groups)
    ideal, irank, igroup = _ranked(users, c, c, later_first=False)
    itop = irank < k
    idcg = np.bincount(igroup[itop], weights=ideal[itop] * discount(irank[itop]),
                       minlength=n_groups)
    positives = np.bincount(group, weights=gains, minlength=n_groups)
    has = positives > 0
    if not has.any():
        return {"ndcg": float("nan"), "recall": float("nan")}
    return {"ndcg": float(np.mean(dcg[has] / idcg[has])),
            "recall": float(np.mean(hits[has] / positives[has]))}


def truth_top_k_metric(users: np.ndarray, rates: np.ndarray, q: np.ndarray, key: str,
                       k: int = BINARY_K) -> float:
    """One value of :func:`top_k_truth` (``key`` of :data:`TRUTH_TOP_K`)."""
    if key not in TRUTH_TOP_K:
        raise ValueError(f"unknown top-K value '{key}': choose from {', '.join(TRUTH_TOP_K)}")
    return top_k_truth(users, rates, q, k)[key]
