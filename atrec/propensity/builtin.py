"""atrec's own propensity estimators: the paper's six (section 5.1.2, PROTOCOL.md) and Figure 2's.

Each estimator (a :class:`~atrec.propensity.base.Propensity`) maps a split to per-pair
propensities of its training and validation ratings, estimated from the training part only. With ``O`` the observed training
matrix and ``n_u`` / ``n_i`` the training ratings of user ``u`` / item ``i``:

========== =========================================================================
uniform    P = 1 (MF-IPS is then plain MF)
user       P(u) = n_u / max_u n_u
item       P(i) = n_i / max_i n_i
user-item  P(u) * P(i)
nb-uniform P(R=r | O=1) / max_r P(R=r | O=1)          (naive Bayes, uniform prior)
nb-true    [P(R=r | O=1) / P(R=r)] normalised by its max, P(R=r) from the 5% MCAR slice
========== =========================================================================

(Saito 2020, Eq. in section 5.1.2; the NB forms follow Schnabel et al. 2016.) ``nb-true`` needs
MCAR data, so it is not usable in practice; the paper reports it for reference.

Calibration (:meth:`~atrec.propensity.base.Propensity.calibration`, BASELINES.md): the factor
``c`` of ``P = min(1, c * p)``. For the count estimators ``c = |O| / sum over all cells of p``,
a sum that factorises: ``|U| |I|`` (uniform), ``|I| sum_u P(u)``, ``|U| sum_i P(i)``,
``sum_u P(u) sum_i P(i)``. For naive Bayes, ``P(O=1 | r) = P(r | O=1) * rho / P(r)`` with the
density ``rho = |O| / (|U| |I|)`` and ``P(r)`` uniform (1/5, NB (uniform)) or from the 5% MCAR
slice (NB (true)); that is again ``p`` times a constant, which is ``c``.

Counts are floored at 1 so that an id or rating value absent from the training part (or from the
MCAR slice) gets a small, finite propensity instead of a division by zero. On Coat and Yahoo every
user, item and rating value is present, so the floor never acts there.
"""

from __future__ import annotations

import numpy as np

from atrec.data.ratings import Ratings
from atrec.data.splits import Split
from atrec.propensity.base import PairPropensities, Propensity


def _relative(counts: np.ndarray) -> np.ndarray:
    counts = np.maximum(counts.astype(np.float64), 1.0)
    return counts / counts.max()


def _rating_shares(ratings: Ratings) -> np.ndarray:
    """Counts of ratings 1..5 as float64, shape ``(5,)``, floored at 1."""
    return np.maximum(ratings.histogram().astype(np.float64), 1.0)


def _ones(split: Split) -> PairPropensities:
    return PairPropensities(np.ones(len(split.train), np.float32),
                            np.ones(len(split.val), np.float32))


def _density(split: Split) -> float:
    """``rho = |O| / (|U| |I|)`` of the training part."""
    return len(split.train) / (split.num_users * split.num_items)


class Uniform(Propensity):
    name, label, paper_row = "uniform", "uniform", True
    description = "P = 1 for every pair (MF-IPS is then plain MF)"

    def estimate(self, split: Split) -> PairPropensities:
        return _ones(split)

    def calibration(self, split: Split) -> float:
        return _density(split)


class _Counts(Propensity):
    """P(u) and P(i) from training counts, relative to their maximum."""

    def pair_values(self, p_user: np.ndarray, p_item: np.ndarray, r: Ratings) -> np.ndarray:
        raise NotImplementedError

    def cell_sum(self, p_user: np.ndarray, p_item: np.ndarray) -> float:
        """``sum over all users x items`` of the pair values."""
        raise NotImplementedError

    def _tables(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        train = split.train
        return (_relative(np.bincount(train.user, minlength=split.num_users)),
                _relative(np.bincount(train.item, minlength=split.num_items)))

    def estimate(self, split: Split) -> PairPropensities:
        p_user, p_item = self._tables(split)
        return PairPropensities(self.pair_values(p_user, p_item, split.train).astype(np.float32),
                                self.pair_values(p_user, p_item, split.val).astype(np.float32))

    def calibration(self, split: Split) -> float:
        return len(split.train) / float(self.cell_sum(*self._tables(split)))


class User(_Counts):
    name, label, paper_row = "user", "user", True
    description = "P(u) = n_u / max n_u (training ratings per user)"

    def pair_values(self, p_user, p_item, r):
        return p_user[r.user]

    def cell_sum(self, p_user, p_item):
        return len(p_item) * p_user.sum()


class Item(_Counts):
    name, label, paper_row = "item", "item", True
    description = "P(i) = n_i / max n_i (training ratings per item)"

    def pair_values(self, p_user, p_item, r):
        return p_item[r.item]

    def cell_sum(self, p_user, p_item):
        return len(p_user) * p_item.sum()


class UserItem(_Counts):
    name, label, paper_row = "user-item", "user-item", True
    description = "P(u) * P(i)"

    def pair_values(self, p_user, p_item, r):
        return p_user[r.user] * p_item[r.item]

    def cell_sum(self, p_user, p_item):
        return p_user.sum() * p_item.sum()


class _PerRating(Propensity):
    """Naive-Bayes estimators: a propensity per rating value (Schnabel et al. 2016)."""

    def per_rating_value(self, split: Split) -> np.ndarray:
        """P indexed by rating value - 1, shape ``(5,)``."""
        raise NotImplementedError

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

    def calibration(self, split: Split) -> float:
        # P = (s_r / S) * rho / (1/5) and p = s_r / max s, s the (floored) training counts
        s = _rating_shares(split.train)
        return 5.0 * _density(split) * s.max() / s.sum()


class NBTrue(_PerRating):
    name, label, paper_row, uses_mcar = "nb-true", "NB (true)", True, True
    description = "P(R=r | O=1) / P(R=r), P(R=r) from the 5% MCAR slice (reference only)"

    def per_rating_value(self, split: Split) -> np.ndarray:
        ratio = _rating_shares(split.train) / _rating_shares(split.test_prior)
        return ratio / ratio.max()

    def calibration(self, split: Split) -> float:
        # P = (s_r / S) * rho / (q_r / Q) and p = (s_r / q_r) / max(s / q)
        s, q = _rating_shares(split.train), _rating_shares(split.test_prior)
        return _density(split) * (s / q).max() * q.sum() / s.sum()


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

    def calibration(self, split: Split) -> float:
        p = np.asarray(self.item_propensity, dtype=np.float64)
        return len(split.train) / (split.num_users * p.sum())


BUILT_IN = (Uniform, User, Item, UserItem, NBUniform, NBTrue, DataItem)
