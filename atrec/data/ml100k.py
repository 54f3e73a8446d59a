"""The Figure-2 data of the paper: MovieLens 100K with a test set of uniform item exposure.

docs/protocol.md, "The other experiments", and the paper's section 5.1.1 (no code was published;
this is atrec's reading of the text):

1. Keep the movies rated by at least ``min_items`` users; re-index the remaining users and
   items to ``0..n-1`` (ascending original id).
2. ``P(i) = n_i / max_j n_j`` with ``n_i`` the ratings of movie ``i`` in the filtered data
   (the paper's Eq. ``ml_pscore``).
3. A random 50% of the filtered ratings (``floor(n / 2)``, seeded) is put aside as candidate
   test ratings; the other half is the MNAR training part.
4. Re-sampling rule: each candidate rating of movie ``i`` is kept independently with
   probability ``min_j P(j) / P(i)`` (that is, ``min_j n_j / n_i``). A movie's candidates
   number about ``n_i / 2``, so every movie keeps about ``min_j n_j / 2`` test ratings in
   expectation: each movie is equally likely to be observed in the test set, as the paper asks.

``min_relative_propensity = min_i P(i)``; the paper quotes 0.0017 at ``min_items = 1`` and 0.0859
at 50.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from atrec.data.ratings import RatingData, Ratings

MIN_ITEMS_GRID = (1, 2, 5, 10, 20, 50)  # the paper's footnote on min_items


@dataclass(frozen=True)
class VarianceData:
    """One Figure-2 dataset.

    ``data``: training part (MNAR) and re-sampled test part (uniform item exposure), compact ids.
    ``item_propensity``: ``P(i)`` per re-indexed movie, shape ``(data.num_items,)``.
    ``min_relative_propensity``: ``min_i P(i)``.
    """

    data: RatingData
    min_relative_propensity: float
    item_propensity: np.ndarray
    min_items: int
    seed: int


def build_variance_data(ratings: Ratings, min_items: int, seed: int,
                        checksums: dict | None = None) -> VarianceData:
    """Build the Figure-2 data from all of ``ratings`` (ML-100K ``u.data``: the ``train`` part
    of ``load_data("ml-100k")``); the module doc gives the rule.

    ``num_users`` / ``num_items`` are the sizes after filtering (every id of both parts is
    below them). ``checksums`` (the source files' SHA-256) is copied into the result for
    provenance. Raises ``ValueError`` for ``min_items < 1``, a negative seed, or when no movie
    has ``min_items`` ratings.
    """
    if int(min_items) != min_items or min_items < 1:
        raise ValueError(f"min_items must be a positive integer, got {min_items!r}")
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    counts = np.bincount(ratings.item)
    keep = counts[ratings.item] >= min_items
    if not keep.any():
        raise ValueError(f"no movie has at least min_items={min_items} ratings")
    kept = ratings.take(np.flatnonzero(keep))
    _, user = np.unique(kept.user, return_inverse=True)
    item_ids, item = np.unique(kept.item, return_inverse=True)
    n_i = counts[item_ids].astype(np.float64)
    propensity = n_i / n_i.max()

    rng = np.random.default_rng(seed)
    n = len(kept)
    order = rng.permutation(n)
    candidate = np.sort(order[: n // 2])
    train_pos = np.sort(order[n // 2:])
    keep_prob = propensity.min() / propensity[item[candidate]]
    test_pos = candidate[rng.random(len(candidate)) < keep_prob]

    def part(pos: np.ndarray) -> Ratings:
        return Ratings.from_arrays(user[pos], item[pos], kept.rating[pos])

    data = RatingData(f"ml-100k-min{min_items}", part(train_pos), part(test_pos),
                      int(user.max()) + 1, len(item_ids), dict(checksums or {}))
    return VarianceData(data, float(propensity.min()), propensity, int(min_items), int(seed))
