"""Per-rating losses, weighted aggregation, and the two nDCG@k variants.

One aggregation function serves three estimators (per-sample values once, one tested definition):

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
    * ``paper`` (the authors' evaluator): DCG = (r_1 - 1) + sum_{j>=2} r_j / log2(j);
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
    users, ratings, scores = _ranking_inputs(users, ratings, scores, "nDCG")
    r_pred, rank_pred, group = _ranked(users, ratings, scores)
    r_ideal, rank_ideal, _ = _ranked(users, ratings, ratings)
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


def _ranking_inputs(users, ratings, scores, what: str):
    """The three ``(n,)`` columns of a ranking metric as arrays; ``ValueError`` when they are
    not 1-D of one length or are empty."""
    users = np.asarray(users)
    ratings = np.asarray(ratings, np.float64)
    scores = np.asarray(scores, np.float64)
    if not (users.shape == ratings.shape == scores.shape) or users.ndim != 1:
        raise ValueError("users, ratings and scores must be 1-D arrays of equal length")
    if users.size == 0:
        raise ValueError(f"cannot compute {what} on an empty test set")
    return users, ratings, scores


def _ranked(users: np.ndarray, ratings: np.ndarray, key: np.ndarray,
            later_first: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each user's test rows ranked by ``key`` descending, ties towards the later row (the
    order ``argsort()[::-1]`` leaves them in), or with ``later_first=False`` in test-row order
    (a stable sort of ``-key``). Returns ``(ratings, rank, group)`` in that
    order, shape ``(n,)`` each: the true rating, the 0-based rank within the user, and the
    user's group number (0, 1, ... in increasing user id)."""
    position = np.arange(users.size)
    order = np.lexsort((-position if later_first else position, -key, users))
    sorted_users = users[order]
    starts = np.r_[0, np.flatnonzero(sorted_users[1:] != sorted_users[:-1]) + 1]
    group = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, users.size]))
    rank = np.arange(users.size) - starts[group]
    return ratings[order], rank, group


def ndcg_exp_at_k(users: np.ndarray, ratings: np.ndarray, scores: np.ndarray,
                  k: int = 5) -> float:
    """Mean nDCG@k over users with gain ``2^(r - 1)`` (the IJCAI 2022 code's evaluator,
    ``usaito/ijcai2022-adversarial-mf``; docs/protocols.md, "ijcai2022").

    Arrays ``(n,)``, one entry per test rating. For each user, with ``r_j`` the true rating at
    predicted rank ``j`` (1-based) and ``r*_j`` at ideal rank ``j``, ``k_u = min(k, #items)``:
    ``DCG = sum_{j <= k_u} 2^(r_j - 1) / log2(j + 1)``, IDCG the same over ``r*``. Ratings
    (3, 1, 2) scored (0.1, 0.9, 0.5) with ``k = 2``: DCG = 1 + 2/log2(3), IDCG = 4 + 2/log2(3).
    Ties in ``scores`` as :func:`ndcg_at_k`.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    users, ratings, scores = _ranking_inputs(users, ratings, scores, "nDCG")
    out = []
    for key in (scores, ratings):
        r, rank, group = _ranked(users, ratings, key)
        keep = rank < k
        gain = 2.0 ** (r[keep] - 1.0) / np.log2(rank[keep] + 2.0)
        out.append(np.bincount(group[keep], weights=gain, minlength=group.max() + 1))
    return float(np.mean(out[0] / out[1]))


def rating_recall_at_k(users: np.ndarray, ratings: np.ndarray, scores: np.ndarray,
                       k: int = 5) -> float:
    """Mean rating-weighted Recall@k over users (the IJCAI 2022 code's ``Recall``): the sum of
    the true ratings of a user's top ``min(k, #items)`` items by ``scores`` over the sum of all
    that user's test ratings. Ratings (3, 1, 2) scored (0.1, 0.9, 0.5), ``k = 2``: 3 / 6.
    Arrays ``(n,)``; ties in ``scores`` as :func:`ndcg_at_k`."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    users, ratings, scores = _ranking_inputs(users, ratings, scores, "Recall")
    r, rank, group = _ranked(users, ratings, scores)
    n_groups = group.max() + 1
    top = np.bincount(group[rank < k], weights=r[rank < k], minlength=n_groups)
    return float(np.mean(top / np.bincount(group, weights=r, minlength=n_groups)))
