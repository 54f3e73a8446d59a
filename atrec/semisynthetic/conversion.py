"""Conversion rates from a completed rating matrix, by rank (the reference's ``convert.py``).

All ``N`` predictions are sorted ascending (a stable sort: ties keep their cell order) and
cut by rank: the lowest ``int(N * cuts[0])`` cells get ``RATES[0]``, the next up to
``int(N * cuts[1])`` ``RATES[1]``, and so on; the cells above the last cut get ``RATES[-1]``.

``CODE_CUTS`` are the reference code's cuts (53%, 24%, 14%, 7% and the top 2% at 0.9);
``MARGINAL_CUTS`` are the ones its comment states, Yahoo! R3's MCAR marginal (53%, 24%, 14%, 6%,
3%). The code's cut is the reference form's default; the cuts are a parameter of every form.
"""

from __future__ import annotations

import numpy as np

RATES = (0.1, 0.3, 0.5, 0.7, 0.9)
CODE_CUTS = (0.53, 0.77, 0.91, 0.98)
MARGINAL_CUTS = (0.53, 0.77, 0.91, 0.97)


def check_cuts(cuts) -> tuple[float, ...]:
    """``cuts`` as a tuple of ``len(RATES) - 1`` increasing fractions in (0, 1), or
    ``ValueError`` naming the bad value."""
    cuts = tuple(float(c) for c in cuts)
    if len(cuts) != len(RATES) - 1:
        raise ValueError(f"cuts must be {len(RATES) - 1} cumulative fractions, got {cuts}")
    if not all(0.0 < c < 1.0 for c in cuts) or any(b <= a for a, b in zip(cuts, cuts[1:])):
        raise ValueError(f"cuts must increase strictly inside (0, 1), got {cuts}")
    return cuts


def rank_levels(prediction: np.ndarray, cuts, levels) -> np.ndarray:
    """``levels[k]`` for the cells whose rank (ascending, stable) lies between
    ``int(N * cuts[k - 1])`` and ``int(N * cuts[k])`` (float64, the shape of
    ``prediction.ravel()``); ``len(levels) = len(cuts) + 1``. Row-major: cell ``(u, i)`` is
    element ``u * num_items + i``."""
    flat = np.asarray(prediction).ravel()
    n = flat.size
    order = np.argsort(flat, kind="stable")
    by_rank = np.empty(n, dtype=np.float64)
    bounds = [0, *(int(n * c) for c in cuts), n]
    for level, lo, hi in zip(levels, bounds, bounds[1:]):
        by_rank[lo:hi] = level
    out = np.empty(n, dtype=np.float64)
    out[order] = by_rank
    return out


def to_rates(prediction: np.ndarray, cuts=CODE_CUTS) -> np.ndarray:
    """The conversion-rate vector (float64, shape of ``prediction.ravel()``) of a prediction
    matrix (module doc), by :func:`rank_levels`."""
    return rank_levels(prediction, check_cuts(cuts), RATES)
