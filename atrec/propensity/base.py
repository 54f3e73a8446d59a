"""The contract of a propensity estimator: a named class with a table label and ``estimate``.

An estimator maps a :class:`~atrec.data.splits.Split` to the propensities of its training and
validation pairs, estimated from the training part only (PROTOCOL.md, "Propensity estimators").
A new estimator subclasses :class:`Propensity`, sets ``name``, ``label`` and ``description``,
implements :meth:`Propensity.estimate` and is registered (:mod:`atrec.propensity.registry`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from atrec.data.splits import Split


@dataclass(frozen=True)
class PairPropensities:
    """Propensities of the training and validation pairs, float32 arrays of shape ``(n,)``."""

    train: np.ndarray
    val: np.ndarray


class Propensity:
    """Base class of propensity estimators.

    Class attributes: ``name`` (the ``--propensity`` value), ``label`` (Table 1's row label),
    ``description`` (one line for ``atrec methods``), ``uses_mcar`` (True when the estimate
    reads MCAR ratings, which a practitioner does not have: such rows are marked in the tables),
    ``paper_row`` (True for the six rows of the paper's Table 1) and ``selectable`` (False for
    an estimator that only an experiment can build, e.g. Figure 2's data-level ``P(i)``; it is
    then not offered by ``--propensity``).
    """

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str] = ""
    uses_mcar: ClassVar[bool] = False
    paper_row: ClassVar[bool] = False
    selectable: ClassVar[bool] = True

    def estimate(self, split: Split) -> PairPropensities:  # pragma: no cover - abstract
        """Propensities of ``split.train`` and ``split.val`` pairs, from ``split.train`` only."""
        raise NotImplementedError


def validate_propensity_class(cls: type) -> None:
    """Raise ``ValueError`` naming the field when ``cls`` breaks the :class:`Propensity` contract."""
    if not (isinstance(cls, type) and issubclass(cls, Propensity)):
        raise ValueError(f"{cls!r} is not a subclass of atrec.propensity.base.Propensity")
    for field in ("label",):
        if not isinstance(getattr(cls, field, None), str) or not getattr(cls, field):
            raise ValueError(f"propensity class {cls.__name__} lacks a non-empty '{field}'")
    if cls.estimate is Propensity.estimate:
        raise ValueError(f"propensity class {cls.__name__} does not implement estimate(split)")
