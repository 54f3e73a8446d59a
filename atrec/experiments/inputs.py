"""The stacked inputs of a group of seeds: each seed's train/validation split and propensity
weights, as ``[R, n]`` columns with the replica axis first, and the shared MCAR test set.

What every fit of the experiment runner (:mod:`atrec.experiments.fitting`), the tuning
objective and the benchmarks start from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from atrec.data.ratings import RatingData
from atrec.data.splits import Split, make_split
from atrec.names import NO_PROPENSITY
from atrec.propensity.registry import get_estimator


@dataclass
class Inputs:
    """Stacked per-seed inputs: ``[R, n]`` train/val columns, shared ``[n]`` test columns."""

    splits: list[Split]
    train: dict
    val: dict
    test: dict
    # per split: the estimator's ``diagnostics`` after its estimate (empty when it has none)
    propensity_fit: list = field(default_factory=list)

    def take(self, rows: list[int]) -> Inputs:
        """The inputs of the replicas ``rows`` (indices, repeats allowed), in that order."""
        idx = np.asarray(rows)
        pick = lambda part: {k: np.asarray(v)[idx] for k, v in part.items()}  # noqa: E731
        fits = [self.propensity_fit[k] for k in rows] if self.propensity_fit else []
        return Inputs([self.splits[k] for k in rows], pick(self.train), pick(self.val),
                      self.test, fits)


def stack_inputs(data: RatingData, propensity: str, seeds: list[int], estimator=None,
                 split=make_split) -> Inputs:
    """Build the splits of ``seeds`` and stack their columns with weights ``1 / P``.

    ``estimator`` (an object with ``estimate(split)``) replaces the estimator named ``propensity``;
    :data:`~atrec.names.NO_PROPENSITY` (a method that weights nothing) gives weights 1. When the
    estimator gives a calibration factor for every split
    (:meth:`~atrec.propensity.base.Propensity.estimate_with_calibration`),
    ``train["calibration"]`` holds them,
    float64 ``[R]``; the other columns, and so MF-IPS, do not depend on it. Its ``diagnostics``
    after each estimate, if any, are kept per split for the records. ``split(data, seed)``
    makes each seed's :class:`~atrec.data.splits.Split` (a protocol's, :mod:`atrec.protocols`;
    default the paper's).
    """
    if estimator is None:
        estimator = get_estimator("uniform" if propensity == NO_PROPENSITY else propensity)
    splits = [split(data, s) for s in seeds]
    props, factors, fits = [], [], []
    for sp in splits:
        if hasattr(estimator, "estimate_with_calibration"):
            pairs, factor = estimator.estimate_with_calibration(sp)
        else:   # an object with estimate() alone (e.g. a test's), which cannot be calibrated
            pairs, factor = estimator.estimate(sp), None
        props.append(pairs)
        factors.append(factor)
        fits.append(dict(getattr(estimator, "diagnostics", None) or {}))

    def stack(part: str, weights) -> dict:
        cols = {c: np.stack([getattr(getattr(sp, part), c) for sp in splits]).astype(
            np.float32 if c == "rating" else np.int32) for c in ("user", "item", "rating")}
        cols["weight"] = np.stack([1.0 / w for w in weights]).astype(np.float32)
        return cols

    test = splits[0].test
    train = stack("train", [p.train for p in props])
    if all(c is not None for c in factors):
        train["calibration"] = np.asarray(factors, np.float64)
    return Inputs(
        splits=splits,
        train=train,
        val=stack("val", [p.val for p in props]),
        test={"user": test.user.astype(np.int32), "item": test.item.astype(np.int32),
              "rating": test.rating.astype(np.float32)},
        propensity_fit=fits,
    )
