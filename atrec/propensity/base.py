"""The contract of a propensity estimator: a named class with a table label and ``estimate``.

An estimator maps a :class:`~atrec.data.splits.Split` to the propensities of its training and
validation pairs, estimated from the training part only (PROTOCOL.md, "Propensity estimators").
A new estimator subclasses :class:`Propensity`, sets ``name``, ``label`` and ``description``,
implements :meth:`Propensity.estimate` and is registered (:mod:`atrec.propensity.registry`).

Estimators are normalised by their maximum (PROTOCOL.md). Methods whose formula needs a
probability (the DR correction without self-normalisation, MRDR's ``(1 - P) / P^2``) use the
*calibrated* propensity of BASELINES.md, ``P = min(1, c * p)``, where the factor ``c`` of a
split is :meth:`Propensity.calibration` (``|O| / sum over all cells of p``, or the naive-Bayes
form). It is optional: an estimator that cannot say returns ``None``, and a method that needs
``P`` then refuses it.
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

    def calibration(self, split: Split) -> float | None:
        """The factor ``c`` of the calibrated propensity ``P = min(1, c * p)`` (BASELINES.md,
        "Propensities: calibrated and max-normalised"), ``p`` what :meth:`estimate` gives.

        ``c = |O| / sum over all users x items of p`` with ``|O| = len(split.train)``, so the
        mean of ``c * p`` over all cells is the observed density; ``None`` (the default) when
        the estimator cannot compute that sum. Estimated from ``split.train`` only.
        """
        return None


def validate_propensity_class(cls: type) -> None:
    """Raise ``ValueError`` naming the field when ``cls`` breaks the :class:`Propensity` contract."""
    if not (isinstance(cls, type) and issubclass(cls, Propensity)):
        raise ValueError(f"{cls!r} is not a subclass of atrec.propensity.base.Propensity")
    for field in ("label",):
        if not isinstance(getattr(cls, field, None), str) or not getattr(cls, field):
            raise ValueError(f"propensity class {cls.__name__} lacks a non-empty '{field}'")
    if cls.estimate is Propensity.estimate:
        raise ValueError(f"propensity class {cls.__name__} does not implement estimate(split)")
