"""Calibrated propensities: probabilities of observation, for methods whose formula needs them.

atrec's estimators give a **max-normalised** ``p`` (its largest value over all cells is 1),
which is all a self-normalised loss needs: such losses do not change when ``p`` is rescaled.
Methods whose formula needs a probability (the ``(1 - P)`` of MRDR, the DR correction without
self-normalisation) use the **calibrated** propensity (docs/methods.md,
"Calibrated propensities")::

    P(u, i) = clip( p(u, i) * |O| / S,  min_propensity,  1 ),   S = sum over all cells of p

``|O|`` is the number of *training* ratings of the split (the observed cells the estimate was
fitted on; validation pairs are unobserved for it) and the cells are the ``num_users x
num_items`` grid. Before clipping, the mean of ``P`` over all cells is the training density
``rho = |O| / (num_users * num_items)``: ``P`` rescales ``p`` so that its expected number of
observed cells is the number observed.

For the naive-Bayes estimators ``p`` depends on the rating ``r``, which is unknown for
unobserved cells, so ``S`` is its expectation under the estimator's rating prior ``P(r)``:
``S = num_cells * sum_r P(r) p(r)``. With ``p(r)`` proportional to ``P(r | O=1) / P(r)`` this
gives exactly ``P(O=1 | r) = P(r | O=1) * rho / P(r)`` (Bayes' rule;
``P(r)`` uniform for NB (uniform), the 5% MCAR slice's shares for NB (true)).

``min_propensity`` (default ``None``: no lower clip) is an option a run records with its
results, as is the number of pairs the clipping changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PairPropensities:
    """Propensities of the training and validation pairs, float32 arrays of shape ``(n,)``."""

    train: np.ndarray
    val: np.ndarray


@dataclass(frozen=True)
class CalibratedPropensities(PairPropensities):
    """Calibrated ``P`` of the training and validation pairs (float32 ``(n,)``) and what made
    them: ``cells_sum`` (``S``, the sum over all cells of the max-normalised ``p``),
    ``n_observed`` (``|O|``, the training ratings), ``num_cells``, ``min_propensity`` and
    ``n_clipped`` (training and validation pairs whose value the clipping changed)."""

    cells_sum: float = float("nan")
    n_observed: int = 0
    num_cells: int = 0
    min_propensity: float | None = None
    n_clipped: int = 0

    @property
    def scale(self) -> float:
        """``|O| / S``: the factor from ``p`` to ``P`` (before clipping)."""
        return self.n_observed / self.cells_sum

    @property
    def density(self) -> float:
        """``|O| / num_cells``: the mean of ``P`` over all cells before clipping."""
        return self.n_observed / self.num_cells

    def as_dict(self) -> dict:
        """The settings and sums, for a record (no arrays)."""
        return {"cells_sum": self.cells_sum, "n_observed": self.n_observed,
                "num_cells": self.num_cells, "min_propensity": self.min_propensity,
                "n_clipped": self.n_clipped}


def calibrate(p: np.ndarray, cells_sum: float, n_observed: int,
              min_propensity: float | None = None) -> np.ndarray:
    """``clip(p * n_observed / cells_sum, min_propensity, 1)`` as float64, any shape."""
    if not cells_sum > 0:
        raise ValueError(f"the sum of p over all cells must be positive, got {cells_sum!r}")
    if min_propensity is not None and not 0 < min_propensity <= 1:
        raise ValueError(f"min_propensity must be in (0, 1], got {min_propensity!r}")
    out = np.asarray(p, dtype=np.float64) * (n_observed / cells_sum)
    return np.clip(out, min_propensity if min_propensity is not None else 0.0, 1.0)


def calibrate_pairs(pairs: PairPropensities, cells_sum: float, n_observed: int, num_cells: int,
                    min_propensity: float | None = None) -> CalibratedPropensities:
    """The calibrated ``P`` of the pairs of ``pairs`` (see :func:`calibrate`)."""
    parts, clipped = [], 0
    for values in (pairs.train, pairs.val):
        raw = np.asarray(values, dtype=np.float64) * (n_observed / cells_sum)
        out = calibrate(values, cells_sum, n_observed, min_propensity)
        clipped += int(np.count_nonzero(out != raw))
        parts.append(out.astype(np.float32))
    return CalibratedPropensities(parts[0], parts[1], float(cells_sum), int(n_observed),
                                  int(num_cells), min_propensity, clipped)


def expected_cells_sum(per_rating: np.ndarray, rating_prior: np.ndarray, num_cells: int) -> float:
    """``num_cells * sum_r P(r) p(r)``: the expected sum over all cells of a propensity that
    depends on the rating only (``per_rating`` and ``rating_prior`` indexed by ``r - 1``)."""
    prior = np.asarray(rating_prior, dtype=np.float64)
    if prior.shape != (5,) or (prior < 0).any() or not np.isclose(prior.sum(), 1.0):
        raise ValueError("rating_prior must be 5 non-negative shares summing to 1")
    return float(num_cells * np.dot(prior, np.asarray(per_rating, dtype=np.float64)))
