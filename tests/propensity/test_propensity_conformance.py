"""One contract over every selectable propensity estimator, built-in or installed plug-in
(STYLE.md item 11): found through :data:`PROPENSITIES`, each is checked for shapes and dtype,
values in (0, 1], determinism, and estimating from the training part only."""

import dataclasses

import numpy as np
import pytest

from atrec.data.ratings import Ratings
from atrec.data.splits import make_split
from atrec.experiments.runner import stack_inputs
from atrec.propensity.registry import PROPENSITIES, get_estimator, propensity_names

# collected now: the registry loads the installed plug-ins on this first use
NAMES = propensity_names()


@pytest.fixture(scope="module")
def split(small_mnar):
    return make_split(small_mnar, 3)


def _other(ratings: Ratings, num_users: int, num_items: int, seed: int) -> Ratings:
    """Ratings of the same length at other random cells with other values."""
    rng = np.random.default_rng(seed)
    n = len(ratings)
    return Ratings.from_arrays(rng.integers(0, num_users, n), rng.integers(0, num_items, n),
                               rng.integers(1, 6, n))


@pytest.mark.parametrize("name", NAMES)
def test_estimates_have_the_splits_shapes_and_values_in_0_1(name, split):
    est = get_estimator(name).estimate(split)
    for part, ratings in (("train", split.train), ("val", split.val)):
        values = getattr(est, part)
        assert isinstance(values, np.ndarray) and values.dtype == np.float32, part
        assert values.shape == (len(ratings),), part
        assert np.isfinite(values).all() and (values > 0).all() and (values <= 1).all(), part


@pytest.mark.parametrize("name", NAMES)
def test_the_same_split_gives_the_same_estimates(name, small_mnar, split):
    a = get_estimator(name).estimate(split)
    b = get_estimator(name).estimate(make_split(small_mnar, 3))
    np.testing.assert_array_equal(a.train, b.train, strict=True)
    np.testing.assert_array_equal(a.val, b.val, strict=True)


@pytest.mark.parametrize("name", NAMES)
def test_estimates_come_from_the_training_part_only(name, split):
    """Other validation, test and (unless the estimator reads MCAR ratings) MCAR prior parts
    leave the training estimates where they were; a pair gets the same propensity in train and
    validation."""
    cls = PROPENSITIES.get(name)
    nu, ni = split.num_users, split.num_items
    changed = {"val": _other(split.val, nu, ni, 1), "test": _other(split.test, nu, ni, 2)}
    if not cls.uses_mcar:
        changed["test_prior"] = _other(split.test_prior, nu, ni, 3)
        changed["test_full"] = _other(split.test_full, nu, ni, 4)
    base = get_estimator(name).estimate(split)
    other = dataclasses.replace(split, **changed)
    np.testing.assert_array_equal(get_estimator(name).estimate(other).train, base.train,
                                  strict=True)
    # validation pairs that are copies of training pairs get the training pairs' values
    idx = np.arange(0, len(split.train), 7)[:len(split.val)]
    copied = dataclasses.replace(split, val=split.train.take(idx))
    np.testing.assert_array_equal(get_estimator(name).estimate(copied).val, base.train[idx],
                                  strict=True)


@pytest.mark.parametrize("name", NAMES)
def test_stacked_weights_are_inverse_propensities(name, small_mnar):
    inputs = stack_inputs(small_mnar, name, [0, 1])
    for k, sp in enumerate(inputs.splits):
        est = get_estimator(name).estimate(sp)
        np.testing.assert_array_equal(inputs.train["weight"][k], (1.0 / est.train).astype(np.float32))
        assert (inputs.val["weight"][k] >= 1).all()


@pytest.mark.parametrize("name", NAMES)
def test_registered_class_declares_the_contract(name):
    entry = PROPENSITIES.entry(name)
    cls = entry.cls
    assert cls.name == name and isinstance(cls.label, str) and cls.label
    assert isinstance(cls.description, str) and cls.description
    assert isinstance(cls.uses_mcar, bool) and isinstance(cls.paper_row, bool)
    assert cls.selectable is True and isinstance(entry.origin, str) and entry.origin
