import numpy as np
import pytest

from atrec.data.ratings import Ratings
from atrec.data.splits import Split
from atrec.errors import AtrecError
from atrec.propensity import get_estimator


def _split():
    # train: user 0 has 3 ratings, user 1 has 1; item 0 has 2, item 1 has 1, item 2 has 1
    train = Ratings.from_arrays([0, 0, 0, 1], [0, 1, 2, 0], [5, 5, 1, 3])
    val = Ratings.from_arrays([1, 0], [1, 2], [5, 3])
    prior = Ratings.from_arrays([0, 1, 1, 0], [0, 0, 1, 1], [1, 1, 3, 5])
    return Split("toy", 0, train, val, prior, prior, prior, 2, 3)


def test_hand_computed_values():
    sp = _split()
    est = {name: get_estimator(name).estimate(sp) for name in
           ("uniform", "user", "item", "user-item", "nb-uniform", "nb-true")}
    np.testing.assert_allclose(est["uniform"].train, [1, 1, 1, 1])
    np.testing.assert_allclose(est["user"].train, [1, 1, 1, 1 / 3])
    np.testing.assert_allclose(est["user"].val, [1 / 3, 1])
    np.testing.assert_allclose(est["item"].train, [1, 0.5, 0.5, 1])
    np.testing.assert_allclose(est["user-item"].val, [1 / 3 * 0.5, 0.5])
    # train histogram over 1..5: [1, 0->1 floor, 1, 0->1, 2]; normalised by its max (2)
    np.testing.assert_allclose(est["nb-uniform"].train, [1, 1, 0.5, 0.5])
    # prior histogram [2, 0->1, 1, 0->1, 1]; ratio train/prior = [0.5, 1, 1, 1, 2] -> /2
    np.testing.assert_allclose(est["nb-true"].train, [1, 1, 0.25, 0.5])
    np.testing.assert_allclose(est["nb-true"].val, [1, 0.5])


def test_estimates_use_the_training_part_only():
    sp = _split()
    a = get_estimator("item").estimate(sp)
    changed = Split("toy", 0, sp.train, Ratings.from_arrays([1, 1], [1, 1], [5, 5]), sp.test,
                    sp.test_prior, sp.test_full, 2, 3)
    b = get_estimator("item").estimate(changed)
    np.testing.assert_array_equal(a.train, b.train)


def test_unknown_name():
    with pytest.raises(AtrecError, match="choose from uniform, user, item"):
        get_estimator("pop")
    assert get_estimator("nb-true").label == "NB (true)"
