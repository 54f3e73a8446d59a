"""Metrics of the binary protocols (docs/protocols.md, "Binary metrics") on 0/1 labels and predicted
probabilities: log loss, global AUC, per-user AUC, and per-user top-K nDCG, Recall, Precision and F1.

The ICDE 2024 reference code (``haoxuanli-pku/ICDE24-MNAR``, ``real_world/utils.py``) scores a
user without a positive test item as 1 in nDCG and 0 in Recall, averages Precision over every
user and takes F1 from the averaged Precision and Recall. :func:`top_k_values` gives those values
(``*_ref``, ``precision``) and the standard ones beside them, which leave such users out
(``binary-clean``). Within a user, items are ranked by the probability with ties broken
stably in test-row order (the reference's ``np.argsort(-q)`` leaves ties to the platform's sort,
which varies with versions and CPUs).
"""

from __future__ import annotations

import numpy as np

from atrec.evaluation.metrics import _ranked, _ranking_inputs

BINARY_K = 5             # the cut-off of the binary protocols' top-K metrics (Coat and Yahoo)
LOG_LOSS_CLIP = 1e-7     # probabilities are clipped to [LOG_LOSS_CLIP, 1 - LOG_LOSS_CLIP]
TOP_K_VALUES = ("ndcg_ref", "ndcg", "recall_ref", "recall", "precision", "precision_std",
                "f1_ref", "f1")


def _binary_inputs(users, labels, q, what: str):
    """:func:`_ranking_inputs`, and ``ValueError`` unless every label is 0 or 1."""
    users, labels, q = _ranking_inputs(users, labels, q, what)
    if not np.isin(labels, (0.0, 1.0)).all():
        raise ValueError(f"{what} needs labels 0 or 1: binarise the ratings first")
    return users, labels, q


def log_loss(users: np.ndarray, labels: np.ndarray, q: np.ndarray) -> float:
    """Mean binary cross-entropy ``-(y log q + (1 - y) log(1 - q))`` over the test rows, with
    ``q`` clipped to ``[1e-7, 1 - 1e-7]`` so that a saturated probability gives a finite loss.
    Arrays ``(n,)``; ``users`` is unused (the signature every metric has)."""
    _, y, q = _binary_inputs(users, labels, q, "log loss")
    q = np.clip(q, LOG_LOSS_CLIP, 1.0 - LOG_LOSS_CLIP)
    return float(-np.mean(y * np.log(q) + (1.0 - y) * np.log(1.0 - q)))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of ``values`` (n,), tied values sharing the mean of their ranks (what
    ``scipy.stats.rankdata`` gives by default; NumPy only, so ``import atrec`` loads no SciPy)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], ordered.size]                  # each tie group [start, end)
    mean_rank = (starts + ends + 1) / 2.0                   # mean of ranks start+1 .. end
    ranks = np.empty(values.size, np.float64)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def global_auc(users: np.ndarray, labels: np.ndarray, q: np.ndarray) -> float:
    """The area under the ROC curve over all test rows pooled (not per user): the share of
    (positive, negative) pairs the positive wins, a tie counting 1/2, as scikit-learn's
    ``roc_auc_score`` computes it. From average ranks: ``(sum of the positives' ranks
    - P (P + 1) / 2) / (P N)``. NaN when the labels are all one class. Arrays ``(n,)``;
    ``users`` is unused."""
    _, y, q = _binary_inputs(users, labels, q, "AUC")
    positive = y == 1.0
    n_pos = int(positive.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = average_ranks(q)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def user_auc(users: np.ndarray, labels: np.ndarray, q: np.ndarray) -> float:
    """The mean over test users of each user's own AUC (its positives against its negatives,
    a tie counting 1/2), over the users with both a positive and a negative test item; NaN
    when there is none. Unlike :func:`global_auc` it cannot be won by a user's main effect
    (scoring every item of a more positive user higher): it asks only how each user's items
    are ordered. Arrays ``(n,)``."""
    auc, both = user_auc_values(*_binary_inputs(users, labels, q, "per-user AUC"))
    return float(auc[both].mean()) if both.any() else float("nan")


def user_auc_values(users: np.ndarray, y: np.ndarray, q: np.ndarray) -> tuple:
    """``(auc, both)``, one entry per test user in increasing id: the user's own AUC (NaN for
    a user without both classes) and whether it has a positive and a negative. Checked arrays
    ``(n,)``."""
    order = np.lexsort((q, users))
    u, v, y = users[order], q[order], y[order]
    n = u.size
    new_user = np.r_[True, u[1:] != u[:-1]]
    new_tie = new_user | np.r_[True, v[1:] != v[:-1]]
    starts = np.flatnonzero(new_tie)
    ends = np.r_[starts[1:], n]
    first = np.maximum.accumulate(np.where(new_user, np.arange(n), 0))   # the user's first row
    rank = np.repeat((starts + ends + 1) / 2.0, ends - starts) - first   # 1-based, in the user
    group = np.cumsum(new_user) - 1
    pos = np.bincount(group, weights=y)
    neg = np.bincount(group) - pos
    both = (pos > 0) & (neg > 0)
    ranks = np.bincount(group, weights=y * rank)
    auc = np.full(pos.size, np.nan)
    auc[both] = (ranks[both] - pos[both] * (pos[both] + 1) / 2.0) / (pos[both] * neg[both])
    return auc, both


def top_k_values(users: np.ndarray, labels: np.ndarray, q: np.ndarray,
                 k: int = BINARY_K) -> dict[str, float]:
    """The top-``k`` metrics of :data:`TOP_K_VALUES`, ``{key: value}``, from one sort.

    Arrays ``(n,)``, one entry per test row. Each user's rows are ranked by ``q`` descending,
    ties in test-row order; with ``h`` the user's positives among its first ``k``, ``P`` its
    positives, DCG = ``sum_{r <= k} y_(r) / log2(r + 1)`` and IDCG the same for its labels
    sorted descending:

    * ``ndcg_ref`` DCG / IDCG, a user with ``P = 0`` counting 1; ``recall_ref`` h / max(1, P);
      ``precision`` h / k; each a mean over all users (the reference code's);
    * ``ndcg``, ``recall`` (h / P), ``precision_std``: means over the users with ``P > 0``
      (NaN when there is none);
    * ``f1_ref`` = 2 / (1 / mean precision + 1 / mean recall_ref), ``f1`` the same from
      ``precision_std`` and ``recall``: from the averages, as the reference code does; 0 when
      either mean is 0.
    """
    per = top_k_per_user(users, labels, q, k)
    ndcg, recall, precision, has = (per[key] for key in ("ndcg", "recall_ref", "precision",
                                                          "has"))
    out = {"ndcg_ref": ndcg.mean(), "recall_ref": recall.mean(), "precision": precision.mean()}
    if has.any():
        out.update(ndcg=ndcg[has].mean(), recall=recall[has].mean(),
                   precision_std=precision[has].mean())
    else:
        out.update(ndcg=np.nan, recall=np.nan, precision_std=np.nan)
    out["f1_ref"] = _f1(out["precision"], out["recall_ref"])
    out["f1"] = _f1(out["precision_std"], out["recall"])
    return {key: float(out[key]) for key in TOP_K_VALUES}


def top_k_per_user(users: np.ndarray, labels: np.ndarray, q: np.ndarray,
                   k: int = BINARY_K) -> dict:
    """Each test user's top-``k`` values, one entry per user in increasing id (what
    :func:`top_k_values` averages): ``ndcg`` (1 for a user without a positive), ``recall_ref``
    (h / max(1, P)), ``precision`` (h / k) and ``has`` (whether the user has a positive)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    users, labels, q = _binary_inputs(users, labels, q, "a top-K metric")
    y, rank, group = _ranked(users, labels, q, later_first=False)
    n_groups = int(group[-1]) + 1
    top = rank < k
    hits = np.bincount(group[top], weights=y[top], minlength=n_groups)
    dcg = np.bincount(group[top], weights=y[top] / np.log2(rank[top] + 2.0), minlength=n_groups)
    positives = np.bincount(group, weights=y, minlength=n_groups)
    # a user's IDCG with binary labels: the first min(P, k) discounts
    idcg = np.r_[0.0, np.cumsum(1.0 / np.log2(np.arange(k) + 2.0))][
        np.minimum(positives, k).astype(int)]
    has = positives > 0
    ndcg = np.divide(dcg, idcg, out=np.ones(n_groups), where=has)
    recall = hits / np.maximum(positives, 1.0)
    return {"ndcg": ndcg, "recall_ref": recall, "precision": hits / k, "has": has}


def _f1(precision: float, recall: float) -> float:
    """The harmonic mean of two averages; 0 when either is 0, NaN when either is NaN."""
    if np.isnan(precision) or np.isnan(recall):
        return float("nan")
    return 0.0 if precision == 0 or recall == 0 else 2.0 / (1.0 / precision + 1.0 / recall)


def top_k_metric(users: np.ndarray, labels: np.ndarray, q: np.ndarray, key: str,
                 k: int = BINARY_K) -> float:
    """One value of :func:`top_k_values` (``key`` of :data:`TOP_K_VALUES`)."""
    if key not in TOP_K_VALUES:
        raise ValueError(f"unknown top-K value '{key}': choose from {', '.join(TOP_K_VALUES)}")
    return top_k_values(users, labels, q, k)[key]
