"""atrec's own propensity estimators: the paper's six (section 5.1.2; docs/protocol.md,
"Propensities") and Figure 2's.

Each estimator (a :class:`~atrec.propensity.base.Propensity`) maps a split to per-pair
propensities of its training and validation ratings, estimated from the training part only.
With ``O`` the observed training matrix and ``n_u`` / ``n_i`` the training ratings of user ``u``
/ item ``i``:

========== =========================================================================
uniform    P = 1 (MF-IPS is then plain MF)
user       P(u) = n_u / max_u n_u
item       P(i) = n_i / max_i n_i
user-item  P(u) * P(i)
nb-uniform P(R=r | O=1) / max_r P(R=r | O=1)          (naive Bayes, uniform prior)
nb-true    [P(R=r | O=1) / P(R=r)] normalised by its max, P(R=r) from the 5% MCAR slice
========== =========================================================================

(Saito 2020, Eq. in section 5.1.2; the NB forms follow Schnabel et al. 2016.)

Cells (for calibration, :mod:`atrec.propensity.calibrated`): uniform, user, item and user-item
are outer products ``a_u * b_i``, so the sum over all cells is ``sum(a) * sum(b)``. The NB
estimators depend on the unknown rating of an unobserved cell: they give no cell matrix, and their
sum over all cells is its expectation under their rating prior (uniform 1/5 for NB (uniform),
the MCAR slice's shares for NB (true)), which makes the calibrated value
``P(r | O=1) * rho / P(r)``. ``nb-true`` needs
MCAR data, so it is not usable in practice; the paper reports it for reference.

Counts are floored at 1 so that an id or rating value absent from the training part (or from the
MCAR slice) gets a small, finite propensity instead of a division by zero. On Coat and Yahoo every
user, item and rating value is present, so the floor never acts there.
"""

from __future__ import annotations

import numpy as np

from atrec.data.ratings import Ratings
from atrec.data.splits import Split
from atrec.errors import AtrecError
from atrec.propensity.base import PairPropensities, Propensity
from atrec.propensity.calibrated import expected_cells_sum


def _relative(counts: np.ndarray) -> np.ndarray:
    counts = np.maximum(counts.astype(np.float64), 1.0)
    return counts / counts.max()


def _rating_shares(ratings: Ratings) -> np.ndarray:
    """Counts of ratings 1..5 as float64, shape ``(5,)``, floored at 1."""
    return np.maximum(ratings.histogram().astype(np.float64), 1.0)


def _ones(split: Split) -> PairPropensities:
    return PairPropensities(np.ones(len(split.train), np.float32),
                            np.ones(len(split.val), np.float32))


class Uniform(Propensity):
    name, label, paper_row = "uniform", "uniform", True
    description = "P = 1 for every pair (MF-IPS is then plain MF)"

    def estimate(self, split: Split) -> PairPropensities:
        return _ones(split)

    def cell_propensities(self, split: Split) -> np.ndarray:
        return np.ones((split.num_users, split.num_items))

    def cells_sum(self, split: Split) -> float:
        return float(split.num_users * split.num_items)


class _Counts(Propensity):
    """P(u) and P(i) from training counts, relative to their maximum."""

    def pair_values(self, p_user: np.ndarray, p_item: np.ndarray, r: Ratings) -> np.ndarray:
        """``p`` of the pairs of ``r``: the product of their cell factors (a factor of 1 is
        exact, so ``user`` and ``item`` give their counts' values unchanged)."""
        a, b = self.cell_factors(p_user, p_item)
        return a[r.user] * b[r.item]

    def cell_factors(self, p_user: np.ndarray, p_item: np.ndarray) -> tuple:
        """``(a, b)`` with ``p(u, i) = a[u] * b[i]``."""
        raise NotImplementedError

    def _relative_counts(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        train = split.train
        return (_relative(np.bincount(train.user, minlength=split.num_users)),
                _relative(np.bincount(train.item, minlength=split.num_items)))

    def estimate(self, split: Split) -> PairPropensities:
        p_user, p_item = self._relative_counts(split)
        return PairPropensities(self.pair_values(p_user, p_item, split.train).astype(np.float32),
                                self.pair_values(p_user, p_item, split.val).astype(np.float32))

    def cell_propensities(self, split: Split) -> np.ndarray:
        a, b = self.cell_factors(*self._relative_counts(split))
        return np.outer(a, b)

    def cells_sum(self, split: Split) -> float:
        a, b = self.cell_factors(*self._relative_counts(split))
        return float(np.sum(a) * np.sum(b))


class User(_Counts):
    name, label, paper_row = "user", "user", True
    description = "P(u) = n_u / max n_u (training ratings per user)"

    def cell_factors(self, p_user, p_item):
        return p_user, np.ones_like(p_item)


class Item(_Counts):
    name, label, paper_row = "item", "item", True
    description = "P(i) = n_i / max n_i (training ratings per item)"

    def cell_factors(self, p_user, p_item):
        return np.ones_like(p_user), p_item


class UserItem(_Counts):
    name, label, paper_row = "user-item", "user-item", True
    description = "P(u) * P(i)"

    def cell_factors(self, p_user, p_item):
        return p_user, p_item


class _PerRating(Propensity):
    """Naive-Bayes estimators: a propensity per rating value (Schnabel et al. 2016)."""

    def per_rating_value(self, split: Split) -> np.ndarray:
        """P indexed by rating value - 1, shape ``(5,)``."""
        raise NotImplementedError

    def rating_prior(self, split: Split) -> np.ndarray:
        """``P(R=r)``, shares of ratings 1..5 summing to 1, shape ``(5,)``."""
        raise NotImplementedError

    def cell_propensities(self, split: Split) -> np.ndarray:
        raise AtrecError(f"propensity '{self.name}' depends on the rating, which is unknown for "
                         f"unobserved cells: it has no cell matrix (use calibrated(split))")

    def cells_sum(self, split: Split) -> float:
        """The expected sum over all cells under :meth:`rating_prior` (module docstring)."""
        return expected_cells_sum(self.per_rating_value(split), self.rating_prior(split),
                                  split.num_users * split.num_items)

    def estimate(self, split: Split) -> PairPropensities:
        table = self.per_rating_value(split)
        return PairPropensities(
            table[split.train.rating.astype(np.int64) - 1].astype(np.float32),
            table[split.val.rating.astype(np.int64) - 1].astype(np.float32),
        )


class NBUniform(_PerRating):
    name, label, paper_row = "nb-uniform", "NB (uniform)", True
    description = "P(R=r | O=1) / max, naive Bayes with a uniform rating prior"

    def per_rating_value(self, split: Split) -> np.ndarray:
        return _relative(_rating_shares(split.train))

    def rating_prior(self, split: Split) -> np.ndarray:
        return np.full(5, 0.2)


class NBTrue(_PerRating):
    name, label, paper_row, uses_mcar = "nb-true", "NB (true)", True, True
    description = "P(R=r | O=1) / P(R=r), P(R=r) from the 5% MCAR slice (reference only)"

    def per_rating_value(self, split: Split) -> np.ndarray:
        ratio = _rating_shares(split.train) / _rating_shares(split.test_prior)
        return ratio / ratio.max()

    def rating_prior(self, split: Split) -> np.ndarray:
        counts = _rating_shares(split.test_prior)
        return counts / counts.sum()


class DataItem(Propensity):
    """Figure 2's item propensity ``P(i) = n_i / max_j n_j`` counted on the whole filtered
    ML-100K data (the paper's ``ml_pscore``), which also shaped that experiment's test set.

    ``item_propensity``: shape ``(num_items,)``, values in (0, 1]
    (:attr:`atrec.data.ml100k.VarianceData.item_propensity`). Only ``atrec variance`` builds it.
    """

    name, label, selectable = "data-item", "P(i) on the data", False
    description = "Figure 2: P(i) counted on the whole filtered ML-100K data (atrec variance)"

    def __init__(self, item_propensity: np.ndarray) -> None:
        p = np.asarray(item_propensity)
        if p.ndim != 1 or not len(p) or not ((p > 0) & (p <= 1)).all():
            raise ValueError("item_propensity must be a non-empty 1-D array of values in (0, 1]")
        self.item_propensity = p

    def estimate(self, split: Split) -> PairPropensities:
        """``P(i)`` of every pair of ``split.train`` and ``split.val``, float32 ``(n,)``."""
        p = np.asarray(self.item_propensity, dtype=np.float32)
        return PairPropensities(p[split.train.item], p[split.val.item])

    def cell_propensities(self, split: Split) -> np.ndarray:
        p = np.asarray(self.item_propensity, dtype=np.float32).astype(np.float64)
        return np.outer(np.ones(split.num_users), p)

    def cells_sum(self, split: Split) -> float:
        return float(split.num_users * np.sum(self.cell_propensities(split)[0]))


BUILT_IN = (Uniform, User, Item, UserItem, NBUniform, NBTrue, DataItem)
