"""The contract of a propensity estimator: a named class with a table label and ``estimate``.

An estimator maps a :class:`~atrec.data.splits.Split` to the propensities of its training and
validation pairs, estimated from the training part only (docs/protocol.md, "Propensities").
A new estimator subclasses :class:`Propensity`, sets ``name``, ``label`` and ``description``,
implements :meth:`Propensity.estimate` and is registered (:mod:`atrec.propensity.registry`).

Scale: ``estimate`` gives the max-normalised ``p`` (largest over all cells 1), which suits the
self-normalised losses. Methods that need probabilities call :meth:`Propensity.calibrated`
(:mod:`atrec.propensity.calibrated`), which needs ``S``, the sum of ``p`` over all cells:
:meth:`Propensity.cells_sum`, by default the sum of :meth:`Propensity.cell_propensities`.
An estimator that gives neither cannot be calibrated (a one-line error says so); every built-in
gives both. An estimator that fits a model may leave a ``diagnostics`` dict (iterations,
objective, ...) after ``estimate``; the runner stores it in each record's protocol as
``propensity_fit``.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from atrec.data.splits import Split
from atrec.errors import AtrecError
from atrec.propensity.calibrated import PairPropensities, calibrate_pairs  # noqa: F401  (re-exported)


class Propensity:
    """Base class of propensity estimators.

    Class attributes: ``name`` (the ``--propensity`` value), ``label`` (Table 1's row label),
    ``description`` (one line for ``atrec methods``), ``uses_mcar`` (True when the estimate
    reads MCAR ratings, which a practitioner does not have: such rows are marked in the tables),
    ``paper_row`` (True for the six rows of the paper's Table 1), ``selectable`` (False for
    an estimator that only an experiment can build, e.g. Figure 2's data-level ``P(i)``; it is
    then not offered by ``--propensity``) and ``datasets`` (the datasets it applies to, because
    it reads their side data; ``None``: any dataset).
    """

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str] = ""
    uses_mcar: ClassVar[bool] = False
    paper_row: ClassVar[bool] = False
    selectable: ClassVar[bool] = True
    datasets: ClassVar[tuple[str, ...] | None] = None

    def estimate(self, split: Split) -> PairPropensities:  # pragma: no cover - abstract
        """Propensities of ``split.train`` and ``split.val`` pairs, from ``split.train`` only."""
        raise NotImplementedError

    def cell_propensities(self, split: Split) -> np.ndarray:
        """``p`` of every cell, float64 ``(num_users, num_items)``, on the scale of
        :meth:`estimate` (a pair's value is its cell's). Optional: raises
        ``NotImplementedError`` where it is not given (or ``p`` depends on the rating)."""
        raise NotImplementedError

    def cells_sum(self, split: Split) -> float:
        """``S``, the sum over all cells of ``p`` (the calibration's denominator); by default
        from :meth:`cell_propensities`. Structured estimators override it with a cheap form."""
        return float(np.sum(self.cell_propensities(split)))

    def estimate_with_calibration(self, split: Split) -> tuple[PairPropensities, float | None]:
        """:meth:`estimate` and the factor ``c`` of the calibrated propensity
        ``P = min(1, c * p)`` (docs/methods.md, "Calibrated propensities"), ``c = |O| / S`` with
        ``|O| = len(split.train)``: the mean of ``c * p`` over all cells is the observed density.
        ``c`` is ``None`` when the estimator gives no ``S``. What the runner stacks, so a fitted
        model fits once."""
        try:
            factor = len(split.train) / self.cells_sum(split)
        except NotImplementedError:
            factor = None
        return self.estimate(split), factor

    def calibrated(self, split: Split, min_propensity: float | None = None):
        """Calibrated probabilities ``P = clip(p * |O| / S, min_propensity, 1)`` of the
        training and validation pairs, ``|O| = len(split.train)``: a
        :class:`~atrec.propensity.calibrated.CalibratedPropensities` (also carrying ``S``)."""
        try:
            total = self.cells_sum(split)
        except NotImplementedError:
            raise AtrecError(f"propensity '{self.name}' gives no sum over all cells, so it "
                             f"cannot be calibrated") from None
        return calibrate_pairs(self.estimate(split), total, len(split.train),
                               split.num_users * split.num_items, min_propensity)

    def check_dataset(self, split: Split) -> None:
        """One-line :class:`AtrecError` when ``split.dataset`` is not one of ``datasets``."""
        if self.datasets is not None and split.dataset not in self.datasets:
            raise AtrecError(f"propensity '{self.name}' does not apply to dataset "
                             f"'{split.dataset}': it supports {', '.join(self.datasets)} only")


def validate_propensity_class(cls: type) -> None:
    """Raise ``ValueError`` naming the field when ``cls`` breaks the :class:`Propensity` contract."""
    if not (isinstance(cls, type) and issubclass(cls, Propensity)):
        raise ValueError(f"{cls!r} is not a subclass of atrec.propensity.base.Propensity")
    for field in ("label",):
        if not isinstance(getattr(cls, field, None), str) or not getattr(cls, field):
            raise ValueError(f"propensity class {cls.__name__} lacks a non-empty '{field}'")
    if cls.estimate is Propensity.estimate:
        raise ValueError(f"propensity class {cls.__name__} does not implement estimate(split)")
