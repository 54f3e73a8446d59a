"""Per-rating losses, weighted aggregation, and the two nDCG@k variants.

One aggregation function serves three estimators (STYLE.md, "per-sample values once"):

* naive mean: ``weighted_mean(x)``
* IPS mean (the paper's Eq. 3): ``weighted_mean(x, weights=1/P, self_normalised=False)``
  = sum(x / P) / n
* self-normalised IPS mean (what the authors' code optimises and validates):
  ``weighted_mean(x, weights=1/P)`` = sum(x / P) / sum(1 / P)
"""

from __future__ import annotations

import numpy as np

NDCG_VARIANTS = ("paper", "standard")


def weighted_mean(values: np.ndarray, weights: np.ndarray | None = None,
                  self_normalised: bool = True) -> float:
    """Aggregate per-sample ``values`` (shape ``(n,)``) with optional ``weights``.

    ``weights=None`` is the plain mean. With weights, ``self_normalised=True`` divides by the sum
    of the weights, ``False`` by ``n``.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        raise ValueError("cannot aggregate an empty set of values")
    if weights is None:
        return float(values.mean())
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != values.shape:
        raise ValueError(f"weights shape {weights.shape} differs from values shape {values.shape}")
    total = float((values * weights).sum())
    return total / float(weights.sum()) if self_normalised else total / values.size


def squared_errors(ratings: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """Per-rating squared errors, shape ``(n,)``."""
    return (np.asarray(ratings, np.float64) - np.asarray(predictions, np.float64)) ** 2


def absolute_errors(ratings: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """Per-rating absolute errors, shape ``(n,)``."""
    return np.abs(np.asarray(ratings, np.float64) - np.asarray(predictions, np.float64))


def ndcg_at_k(users: np.ndarray, ratings: np.ndarray, scores: np.ndarray, k: int = 3,
              variant: str = "paper") -> float:
    """Mean nDCG@k over users, ranking each user's test items by ``scores``.

    All arrays have shape ``(n,)``: one entry per test rating. A user with fewer than ``k`` test
    items is cut at that number. With ``r_j`` the true rating at predicted rank ``j`` (1-based)
    and ``r*_j`` at ideal rank ``j``:

    * ``standard``: DCG = sum_j (2^r_j - 1) / log2(j + 1); IDCG the same over ``r*``.
    * ``paper`` (the authors' evaluator, PROTOCOL.md): DCG = (r_1 - 1) + sum_{j>=2} r_j / log2(j);
      IDCG = (2^{r*_1} - 1) + sum_{j>=2} r*_j / log2(j). It mixes gains, so it is not 1 for a
      perfect ranking: ratings (5, 4, 3, 1) ranked perfectly give 0.268.

    Ties in ``scores`` are broken towards the later test row, as ``argsort()[::-1]`` does.
    """
    return ndcg_variants(users, ratings, scores, k, (variant,))[variant]


def ndcg_variants(users: np.ndarray, ratings: np.ndarray, scores: np.ndarray, k: int = 3,
                  variants: tuple[str, ...] = NDCG_VARIANTS) -> dict[str, float]:
    """:func:`ndcg_at_k` for each of ``variants``, ``{variant: value}``; the two rankings
    (predicted and ideal) are sorted once for all of them."""
    for variant in variants:
        if variant not in NDCG_VARIANTS:
            raise ValueError(f"unknown nDCG variant '{variant}': choose from "
                             f"{', '.join(NDCG_VARIANTS)}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    users = np.asarray(users)
    ratings = np.asarray(ratings, np.float64)
    scores = np.asarray(scores, np.float64)
    if not (users.shape == ratings.shape == scores.shape) or users.ndim != 1:
        raise ValueError("users, ratings and scores must be 1-D arrays of equal length")
    if users.size == 0:
        raise ValueError("cannot compute nDCG on an empty test set")
    position = np.arange(users.size)

    def ranked_gains(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # sort by user, then key descending, then later row first (argsort()[::-1] tie rule)
        order = np.lexsort((-position, -key, users))
        sorted_users = users[order]
        starts = np.r_[0, np.flatnonzero(sorted_users[1:] != sorted_users[:-1]) + 1]
        group = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, users.size]))
        rank = np.arange(users.size) - starts[group]  # 0-based rank within user
        return ratings[order], rank, group

    r_pred, rank_pred, group = ranked_gains(scores)
    r_ideal, rank_ideal, _ = ranked_gains(ratings)
    n_groups = group.max() + 1

    def dcg(r: np.ndarray, rank: np.ndarray, ideal: bool, variant: str) -> np.ndarray:
        keep = rank < k
        r, rank, g = r[keep], rank[keep], group[keep]
        if variant == "standard":
            gain = (2.0 ** r - 1.0) / np.log2(rank + 2.0)
        else:
            first = (2.0 ** r - 1.0) if ideal else (r - 1.0)
            gain = np.where(rank == 0, first, r / np.log2(np.maximum(rank, 1) + 1.0))
        return np.bincount(g, weights=gain, minlength=n_groups)

    return {v: float(np.mean(dcg(r_pred, rank_pred, False, v) / dcg(r_ideal, rank_ideal, True, v)))
            for v in variants}
