"""The synthetic MNAR generator: sizes, ranges, no overlap, the MNAR direction, determinism."""

import numpy as np
import pytest

from atrec.data.synthetic import SMALL_SIZE, YAHOO_RATING_ODDS, YAHOO_SIZE, make_synthetic


@pytest.fixture(scope="module")
def small():
    return make_synthetic(**SMALL_SIZE, seed=3)


def test_sizes_and_ranges(small):
    d = small.data
    assert (d.num_users, d.num_items) == (200, 150)
    assert len(d.train) == 3_000 and len(d.test) == 100 * 10
    for part in (d.train, d.test):
        assert part.user.min() >= 0 and part.user.max() < 200
        assert part.item.min() >= 0 and part.item.max() < 150
        assert set(np.unique(part.rating)) <= {1, 2, 3, 4, 5}
        dtypes = (part.user.dtype, part.item.dtype, part.rating.dtype)
        assert dtypes == (np.int32, np.int32, np.int8)
    assert small.full_ratings.shape == (200, 150) and small.full_ratings.dtype == np.int8
    assert small.propensity.shape == (200, 150)
    assert small.propensity.min() > 0 and small.propensity.max() <= 1


def test_pairs_are_distinct_and_test_is_mcar_shaped(small):
    d = small.data
    train_keys = d.train.user.astype(np.int64) * 150 + d.train.item
    test_keys = d.test.user.astype(np.int64) * 150 + d.test.item
    assert len(np.unique(train_keys)) == len(train_keys)
    assert len(np.unique(test_keys)) == len(test_keys)
    assert not np.intersect1d(train_keys, test_keys).size
    users, per_user = np.unique(d.test.user, return_counts=True)
    assert len(users) == 100 and set(per_user) == {10}
    # the observed ratings are the known full ratings of those cells
    assert np.array_equal(d.train.rating, small.full_ratings[d.train.user, d.train.item])
    assert np.array_equal(d.test.rating, small.full_ratings[d.test.user, d.test.item])


def test_mnar_direction(small):
    d = small.data
    assert d.train.rating.mean() > d.test.rating.mean() + 0.5
    # propensity grows with the rating value, as the odds say
    by_rating = [small.propensity[small.full_ratings == r].mean() for r in range(1, 6)]
    assert by_rating[4] > by_rating[3] > by_rating[2] > by_rating[0]
    assert small.train_propensity().shape == (3_000,)


def test_yahoo_size_looks_like_yahoo():
    d = make_synthetic(**YAHOO_SIZE, seed=0).data
    assert (d.num_users, d.num_items, len(d.train), len(d.test)) == (15_400, 1_000, 311_704, 54_000)
    train, test = d.train.histogram() / len(d.train), d.test.histogram() / len(d.test)
    assert train[0] > train[2] and train[4] > train[2]  # U-shaped training counts, like Yahoo
    # close to Yahoo's own shares (docs/data.md): the odds were taken from them
    assert np.abs(train - [0.3139, 0.1272, 0.1576, 0.1555, 0.2457]).max() < 0.03
    assert np.abs(test - [0.5262, 0.2419, 0.1439, 0.0624, 0.0255]).max() < 0.01


def test_observed_frequency_follows_the_propensity():
    # Cells with a higher propensity are observed more often, at about the stated rate
    # (binned by propensity quintile).
    big = make_synthetic(num_users=400, num_items=300, n_train=6_000, n_test_users=50,
                         test_per_user=5, dim=5, seed=11)
    observed = np.zeros(big.propensity.shape, dtype=bool)
    observed[big.data.train.user, big.data.train.item] = True
    p = big.propensity.ravel()
    bins = np.quantile(p, np.linspace(0, 1, 6))
    rate = [observed.ravel()[(p >= lo) & (p < hi)].mean() for lo, hi in zip(bins[:-1], bins[1:])]
    mean_p = [p[(p >= lo) & (p < hi)].mean() for lo, hi in zip(bins[:-1], bins[1:])]
    assert all(a < b for a, b in zip(rate, rate[1:]))
    assert np.allclose(rate, mean_p, rtol=0.25)


def test_determinism_by_seed(small):
    again = make_synthetic(**SMALL_SIZE, seed=3)
    other = make_synthetic(**SMALL_SIZE, seed=4)
    for col in ("user", "item", "rating"):
        assert np.array_equal(getattr(small.data.train, col), getattr(again.data.train, col))
        assert np.array_equal(getattr(small.data.test, col), getattr(again.data.test, col))
    assert np.array_equal(small.propensity, again.propensity)
    assert not np.array_equal(small.full_ratings, other.full_ratings)


def test_presets_and_odds():
    assert YAHOO_SIZE == dict(num_users=15_400, num_items=1_000, n_train=311_704,
                              n_test_users=5_400, test_per_user=10, dim=10)
    # train share / test share of Yahoo! R3 (docs/data.md): 0.3139 / 0.5262 for rating 1
    assert YAHOO_RATING_ODDS[0] == pytest.approx(0.3139 / 0.5262)
    assert YAHOO_RATING_ODDS[4] == pytest.approx(0.2457 / 0.0255)


@pytest.mark.parametrize("change, fragment", [
    (dict(num_users=0), "num_users must be a positive integer"),
    (dict(dim=2.5), "dim must be a positive integer"),
    (dict(n_train=200 * 150 + 1), "exceeds num_users"),
    (dict(n_test_users=201), "n_test_users=201 exceeds"),
    (dict(test_per_user=151), "test_per_user=151 exceeds num_items"),
    (dict(n_train=200 * 150 - 5), "untrained items"),
    (dict(noise=-1.0), "noise must be >= 0"),
    (dict(rating_odds=(1, 1, 1, 1)), "rating_odds must be 5"),
])
def test_bad_arguments(change, fragment):
    with pytest.raises(ValueError, match=fragment):
        make_synthetic(**{**SMALL_SIZE, "seed": 0, **change})
