"""The propensity-estimator contract as checks: :func:`check_propensity` runs every one.

On one split of a data set: estimates of the split's shapes, float32, in (0, 1]; the same
split giving the same estimates; estimates made from the training part only; the runner's
weights being their inverses; calibration to probabilities whose mean over all cells is the
training density; and the class's declarations. :class:`PropensityChecks` holds them one by
one, so that a test suite can run each as its own test.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from atrec.data.preprocess import load_data
from atrec.data.ratings import RatingData, Ratings
from atrec.data.splits import Split, make_split
from atrec.errors import AtrecError
from atrec.experiments.inputs import stack_inputs
from atrec.propensity.base import Propensity, validate_propensity_class
from atrec.propensity.registry import PROPENSITIES
from atrec.testing.data import check_declarations, registered, run_checks, small_data

SPLIT_SEED = 3


def _other(ratings: Ratings, num_users: int, num_items: int, seed: int) -> Ratings:
    """Ratings of the same length at other random cells with other values."""
    rng = np.random.default_rng(seed)
    n = len(ratings)
    return Ratings.from_arrays(rng.integers(0, num_users, n), rng.integers(0, num_items, n),
                               rng.integers(1, 6, n))


class PropensityChecks:
    """The checks of one estimator class on ``data``: by default :func:`small_data`, or, for
    an estimator of some datasets only (``datasets``), the first of them, preprocessed in the
    data folder. Each method is one check and raises ``AssertionError`` when the class breaks
    it."""

    def __init__(self, cls: type[Propensity], data: RatingData | None = None) -> None:
        self.cls = cls
        if data is None:
            data = small_data() if cls.datasets is None else load_data(cls.datasets[0])
        self.data = data
        self.split: Split = make_split(data, SPLIT_SEED)

    def declares_the_contract(self) -> None:
        cls = self.cls
        check_declarations(cls, validate_propensity_class, ("uses_mcar", "paper_row", "selectable"))
        assert cls.datasets is None or (isinstance(cls.datasets, tuple) and cls.datasets), (
            "datasets: None or a tuple of names")

    def shapes_and_values(self) -> None:
        """Estimates are float32 arrays of the split's parts, finite and in (0, 1]."""
        split = self.split
        est = self.cls().estimate(split)
        for part, ratings in (("train", split.train), ("val", split.val)):
            values = getattr(est, part)
            assert isinstance(values, np.ndarray) and values.dtype == np.float32, part
            assert values.shape == (len(ratings),), part
            assert np.isfinite(values).all() and (values > 0).all() and (values <= 1).all(), part

    def same_split_same_estimates(self) -> None:
        a = self.cls().estimate(self.split)
        b = self.cls().estimate(make_split(self.data, SPLIT_SEED))
        np.testing.assert_array_equal(a.train, b.train, strict=True)
        np.testing.assert_array_equal(a.val, b.val, strict=True)

    def from_training_part_only(self) -> None:
        """Other validation, test and (unless the estimator reads MCAR ratings) MCAR prior
        parts leave the training estimates where they were; a pair gets the same propensity in
        training and validation."""
        split, cls = self.split, self.cls
        nu, ni = split.num_users, split.num_items
        changed = {"val": _other(split.val, nu, ni, 1), "test": _other(split.test, nu, ni, 2)}
        if not cls.uses_mcar:
            changed["test_prior"] = _other(split.test_prior, nu, ni, 3)
            changed["test_full"] = _other(split.test_full, nu, ni, 4)
        base = cls().estimate(split)
        other = dataclasses.replace(split, **changed)
        np.testing.assert_array_equal(cls().estimate(other).train, base.train, strict=True)
        # validation pairs that are copies of training pairs get the training pairs' values
        idx = np.arange(0, len(split.train), 7)[:len(split.val)]
        copied = dataclasses.replace(split, val=split.train.take(idx))
        np.testing.assert_array_equal(cls().estimate(copied).val, base.train[idx], strict=True)

    def weights_are_inverse_propensities(self) -> None:
        """The runner's stacked weights (``atrec.experiments.inputs``) are ``1 / estimate``."""
        with registered(PROPENSITIES, self.cls):
            inputs = stack_inputs(self.data, self.cls.name, [0, 1])
        for k, sp in enumerate(inputs.splits):
            est = self.cls().estimate(sp)
            np.testing.assert_array_equal(inputs.train["weight"][k],
                                          (1.0 / est.train).astype(np.float32))
            assert (inputs.val["weight"][k] >= 1).all(), "validation weights below 1"

    def calibrated_average_the_density(self) -> None:
        """The estimator can be calibrated: ``P = p |O| / S`` in (0, 1], and (before clipping)
        the mean of ``P`` over all cells is the training density."""
        split, est = self.split, self.cls()
        cal = est.calibrated(split)
        pairs = est.estimate(split)
        assert cal.train.dtype == np.float32 and cal.train.shape == pairs.train.shape
        assert (cal.train > 0).all() and (cal.train <= 1).all() and (cal.val <= 1).all()
        assert cal.n_observed == len(split.train)
        assert cal.num_cells == split.num_users * split.num_items
        if cal.n_clipped == 0:
            np.testing.assert_allclose(cal.train, pairs.train * cal.scale, rtol=1e-6)
        try:
            cells = est.cell_propensities(split)
        except (NotImplementedError, AtrecError):  # no p per cell (NB's depends on the rating)
            return
        assert cells.shape == (split.num_users, split.num_items)
        np.testing.assert_allclose(cells.sum(), cal.cells_sum, rtol=1e-9)
        np.testing.assert_allclose((cells * cal.scale).mean(), cal.density, rtol=1e-9)
        np.testing.assert_allclose(cells[split.train.user, split.train.item], pairs.train,
                                   rtol=1e-6)


def check_propensity(cls: type[Propensity], data: RatingData | None = None) -> None:
    """Check that estimator class ``cls`` keeps atrec's propensity contract; one line in a
    plug-in's tests: ``check_propensity(MyEstimator)``.

    Parameters
    ----------
    cls:
        A :class:`~atrec.propensity.base.Propensity` subclass, registered or not.
    data:
        The data set to split and estimate on; default :func:`~atrec.testing.data.small_data`,
        or for an estimator of some datasets only the first of its ``datasets`` as
        preprocessed in the data folder (``atrec preprocess NAME`` first).

    Raises
    ------
    AssertionError
        Naming the class and the first check it fails, with the failure's message.
    """
    checks = PropensityChecks(cls, data)
    run_checks(f"propensity class {cls.__name__}", [
        ("declares_the_contract", checks.declares_the_contract),
        ("shapes_and_values", checks.shapes_and_values),
        ("same_split_same_estimates", checks.same_split_same_estimates),
        ("from_training_part_only", checks.from_training_part_only),
        ("weights_are_inverse_propensities", checks.weights_are_inverse_propensities),
        ("calibrated_average_the_density", checks.calibrated_average_the_density),
    ])
