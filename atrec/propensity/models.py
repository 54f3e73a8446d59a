"""The field's standard propensity baselines (docs/methods.md, "More propensity estimators").

Each fits (or reads) a probability of observation ``P(u, i)`` for every cell, from the training
part only: the observation matrix ``Y`` has a 1 at each ``split.train`` pair and 0 at every
other cell (validation pairs included: they are not training data). As with atrec's other
estimators, :meth:`estimate` returns the max-normalised ``p = P / max over all cells of P`` at
the training and validation pairs, and :meth:`calibrated` the calibrated probability
``P' = p * |O| / sum(p)`` (:mod:`atrec.propensity.calibrated`), which rescales ``P`` to the
split's own number of training ratings. ``diagnostics`` (a dict, set by every call) tells how
the fit went; the runner stores it with each record as ``protocol.propensity_fit``.

========== ==================================================================================
coat-shipped Coat's own ``propensities.ascii`` (Schnabel et al. 2016, learned from user and item
           features for Coat's whole training matrix). Coat only. The calibrated values are the
           shipped ones times ``|O_train| / sum(shipped)`` (about 0.9: atrec trains on 90%).
logistic   Schnabel et al.'s logistic regression of "observed" on user and item features
           (one-hot main effects, :func:`~atrec.propensity.solvers.fit_feature_logistic`, L2
           ``lam = 1`` on the summed log-likelihood, the scale of scikit-learn's default
           ``C = 1``), then clipped below at 0.05. The 0.05 is the clipping value reported for
           the reference code; it was not re-checked against that code here.
           Datasets with features: coat, ml-100k (:mod:`atrec.data.features`).
1bit-mc    1-bit matrix completion of ``Y`` (Ma and Chen, NeurIPS 2019): the nuclear-norm-
           constrained logistic fit :func:`~atrec.propensity.solvers.fit_onebit_mc`, solved to a
           duality gap of at most 1e-5 of the objective. Radius ``1.5 |logit(rho)| sqrt(m n)``
           (:func:`~atrec.propensity.solvers.default_radius`): Ma and Chen's assumption
           ``|Z|_* <= tau sqrt(m n)`` with ``tau`` in units of the constant (MCAR) fit
           ``logit(rho)``, whose nuclear norm is ``|logit(rho)| sqrt(m n)``; the ball holds it
           and half as much again for structure. The factor 1.5 was chosen on a synthetic
           rank-2 logistic model (300 x 290, density about 0.1: error of P 0.060 at 1.3-1.5,
           0.065 at 2, 0.071 at 1, uniform 0.086); it is the ``radius_scale`` option. ``sigmoid(Z)`` is floored
           at 1e-6 only so that no value rounds to 0 in float32 (on Coat and ML-100K the
           smallest fitted value is far above it). Any dataset.
========== ==================================================================================
"""

from __future__ import annotations

import time

import numpy as np

from atrec.data.features import (
    FEATURE_DATASETS,
    SHIPPED_PROPENSITY_DATASETS,
    load_features,
    load_shipped_propensities,
)
from atrec.data.splits import Split
from atrec.propensity.base import PairPropensities, Propensity
from atrec.propensity.calibrated import calibrate_pairs
from atrec.propensity.solvers import (
    default_radius,
    fit_feature_logistic,
    fit_onebit_mc,
    observation_matrix,
    sigmoid,
)

LOGISTIC_CLIP = 0.05
ONEBIT_FLOOR = 1e-6


class _CellModel(Propensity):
    """An estimator defined by a probability matrix over all cells (:meth:`fit_cells`)."""

    def __init__(self) -> None:
        self.diagnostics: dict = {}

    def fit_cells(self, split: Split) -> np.ndarray:
        """``P`` of every cell, float64 ``(num_users, num_items)`` in (0, 1]; sets
        ``self.diagnostics``."""
        raise NotImplementedError

    def cell_propensities(self, split: Split) -> np.ndarray:
        self.check_dataset(split)
        cells = self.fit_cells(split)
        return cells / cells.max()

    @staticmethod
    def _pairs(cells: np.ndarray, split: Split) -> PairPropensities:
        return PairPropensities(cells[split.train.user, split.train.item].astype(np.float32),
                                cells[split.val.user, split.val.item].astype(np.float32))

    def estimate(self, split: Split) -> PairPropensities:
        return self._pairs(self.cell_propensities(split), split)

    def cells_sum(self, split: Split) -> float:
        return float(self.cell_propensities(split).sum())

    def estimate_with_calibration(self, split: Split) -> tuple[PairPropensities, float]:
        cells = self.cell_propensities(split)  # one fit for the pairs and the sum
        return self._pairs(cells, split), len(split.train) / float(cells.sum())

    def calibrated(self, split: Split, min_propensity: float | None = None):
        cells = self.cell_propensities(split)  # one fit for the pairs and the sum
        return calibrate_pairs(self._pairs(cells, split), float(cells.sum()), len(split.train),
                               cells.size, min_propensity)


def _observed(split: Split) -> np.ndarray:
    return observation_matrix(split.num_users, split.num_items, split.train.user,
                              split.train.item)


class CoatShipped(_CellModel):
    name, label = "coat-shipped", "Coat (shipped)"
    description = "Coat's own propensities.ascii (Schnabel et al. 2016; Coat only)"
    datasets = SHIPPED_PROPENSITY_DATASETS

    def fit_cells(self, split: Split) -> np.ndarray:
        cells = load_shipped_propensities(split.dataset)
        if cells.shape != (split.num_users, split.num_items):
            raise ValueError(f"shipped propensities are {cells.shape}, the split "
                             f"{(split.num_users, split.num_items)}")
        self.diagnostics = {"source": "propensities.ascii", "shipped_sum": float(cells.sum())}
        return cells


class Logistic(_CellModel):
    name, label = "logistic", "logistic (features)"
    description = "logistic regression of observed on user and item features, clipped at 0.05"
    datasets = FEATURE_DATASETS

    def __init__(self, lam: float = 1.0, clip: float = LOGISTIC_CLIP, tol: float = 1e-10,
                 max_iter: int = 100) -> None:
        super().__init__()
        self.lam, self.clip, self.tol, self.max_iter = lam, clip, tol, max_iter

    def fit_cells(self, split: Split) -> np.ndarray:
        features = load_features(split.dataset)
        start = time.perf_counter()
        fit = fit_feature_logistic(_observed(split), features.user, features.item, self.lam,
                                   self.tol, self.max_iter)
        prob = sigmoid(fit.logits())
        self.diagnostics = {
            "solver": "newton", "lam": self.lam, "clip": self.clip, "tol": self.tol,
            "max_iter": self.max_iter, "iterations": fit.iterations, "converged": fit.converged,
            "objective": fit.objective, "newton_decrement": fit.decrement,
            "n_features": int(len(fit.w) + len(fit.v)),
            "clipped_cells": int(np.count_nonzero(prob < self.clip)),
            "seconds": time.perf_counter() - start}
        return np.maximum(prob, self.clip)


class OneBitMC(_CellModel):
    name, label = "1bit-mc", "1-bit MC"
    description = "1-bit matrix completion of the observation matrix (Ma and Chen 2019)"

    def __init__(self, radius_scale: float = 1.5, tol: float = 1e-5, max_iter: int = 500) -> None:
        super().__init__()
        self.radius_scale, self.tol, self.max_iter = radius_scale, tol, max_iter

    def fit_cells(self, split: Split) -> np.ndarray:
        y = _observed(split)
        radius = default_radius(split.num_users, split.num_items, len(split.train),
                                self.radius_scale)
        fit = fit_onebit_mc(y, radius, self.tol, self.max_iter)
        self.diagnostics = {
            "solver": "mfista", "radius": fit.radius, "radius_scale": self.radius_scale,
            "tol": self.tol, "max_iter": self.max_iter, "iterations": fit.iterations,
            "converged": fit.converged, "objective_start": fit.objectives[0],
            "objective": fit.objective, "duality_gap": fit.duality_gap, "rank": fit.rank,
            "seconds": fit.seconds}
        return np.maximum(sigmoid(fit.z), ONEBIT_FLOOR)


BASELINES = (CoatShipped, Logistic, OneBitMC)
