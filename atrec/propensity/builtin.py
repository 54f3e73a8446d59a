"""The six propensity estimators of the paper (section 5.1.2) and PROTOCOL.md.

Each estimator maps a :class:`~atrec.data.splits.Split` to per-pair propensities of its training and
validation ratings, estimated from the training part only. With ``O`` the observed training
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

Counts are floored at 1 so that an id or rating value absent from the training part (or from the
MCAR slice) gets a small, finite propensity instead of a division by zero. On Coat and Yahoo every
user, item and rating value is present, so the floor never acts there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from atrec.errors import AtrecError
from atrec.names import PROPENSITIES, PROPENSITY_LABELS
from atrec.data.ratings import Ratings
from atrec.data.splits import Split


@dataclass(frozen=True)
class PairPropensities:
    """Propensities of the training and validation pairs, float32 arrays of shape ``(n,)``."""

    train: np.ndarray
    val: np.ndarray


def _relative(counts: np.ndarray) -> np.ndarray:
    counts = np.maximum(counts.astype(np.float64), 1.0)
    return counts / counts.max()


def _rating_shares(ratings: Ratings) -> np.ndarray:
    """Counts of ratings 1..5 as float64, shape ``(5,)``, floored at 1."""
    return np.maximum(ratings.histogram().astype(np.float64), 1.0)


@dataclass(frozen=True)
class PropensityEstimator:
    """One propensity model, named as on the command line (``item``, ``nb-true``, ...)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in PROPENSITIES:
            raise ValueError(
                f"unknown propensity '{self.name}': choose from {', '.join(PROPENSITIES)}"
            )

    @property
    def label(self) -> str:
        """The row label of the paper's Table 1, e.g. ``NB (true)``."""
        return PROPENSITY_LABELS[self.name]

    def per_rating_value(self, split: Split) -> np.ndarray | None:
        """For the NB estimators, P indexed by rating value - 1, shape ``(5,)``; else ``None``."""
        if self.name == "nb-uniform":
            return _relative(_rating_shares(split.train))
        if self.name == "nb-true":
            ratio = _rating_shares(split.train) / _rating_shares(split.test_prior)
            return ratio / ratio.max()
        return None

    def estimate(self, split: Split) -> PairPropensities:
        """Propensities of ``split.train`` and ``split.val`` pairs, from ``split.train`` only."""
        train, val = split.train, split.val
        if self.name == "uniform":
            return PairPropensities(np.ones(len(train), np.float32), np.ones(len(val), np.float32))
        if self.name in ("user", "item", "user-item"):
            p_user = _relative(np.bincount(train.user, minlength=split.num_users))
            p_item = _relative(np.bincount(train.item, minlength=split.num_items))

            def pairs(r: Ratings) -> np.ndarray:
                if self.name == "user":
                    return p_user[r.user]
                if self.name == "item":
                    return p_item[r.item]
                return p_user[r.user] * p_item[r.item]

            return PairPropensities(pairs(train).astype(np.float32), pairs(val).astype(np.float32))
        table = self.per_rating_value(split)
        return PairPropensities(
            table[train.rating.astype(np.int64) - 1].astype(np.float32),
            table[val.rating.astype(np.int64) - 1].astype(np.float32),
        )


def get_estimator(name: str) -> PropensityEstimator:
    """The estimator called ``name``; an unknown name is a one-line :class:`AtrecError`."""
    try:
        return PropensityEstimator(name)
    except ValueError as exc:
        raise AtrecError(str(exc)) from None
