"""A synthetic MNAR rating generator with known full ratings and known propensities.

The generator mimics Yahoo! R3 (docs/data.md, "Yahoo! R3"): a self-selected (MNAR) training part and
an MCAR test part of a few random items for a subset of users.

1. Full ratings (``num_users x num_items``): a rank-``dim`` model plus user and item biases plus
   Gaussian noise, quantised to 1..5 at the quantiles that give the ``rating_shares`` marginal
   (default: Yahoo's MCAR test shares, docs/data.md).
2. Observation weight of a cell: ``rating_odds[r - 1] * popularity[i]``. The default odds are
   Yahoo's train share / test share per rating (its histograms): about
   (0.60, 0.53, 1.10, 2.49, 9.64), so training counts come out U-shaped like Yahoo's (1s and 5s
   far more common than 3s) and the training mean is above the MCAR mean. ``popularity`` is
   log-normal with ``popularity_sigma``.
3. Exactly ``n_train`` distinct training cells are drawn without replacement with probability
   proportional to the weights (Efraimidis-Spirakis: the ``n_train`` smallest of
   ``Exp(1) / weight``). The stored propensities are ``min(1, n_train * w / sum(w))``, the
   inclusion probabilities of Poisson sampling with the same expected size; they are the
   first-order approximation of the exact inclusion probabilities of the fixed-size draw.
4. MCAR test: ``n_test_users`` random users, each with ``test_per_user`` random items that are
   not in their training part.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from atrec.data.ratings import RatingData, Ratings

# Yahoo! R3 rating shares (docs/data.md, "Rating shift between the parts").
YAHOO_TRAIN_SHARES = (0.3139, 0.1272, 0.1576, 0.1555, 0.2457)
YAHOO_TEST_SHARES = (0.5262, 0.2419, 0.1439, 0.0624, 0.0255)
YAHOO_RATING_ODDS = tuple(p / q for p, q in zip(YAHOO_TRAIN_SHARES, YAHOO_TEST_SHARES))

# Sizes for ``make_synthetic(**PRESET, seed=s)``.
YAHOO_SIZE = dict(num_users=15_400, num_items=1_000, n_train=311_704, n_test_users=5_400,
                  test_per_user=10, dim=10)
SMALL_SIZE = dict(num_users=200, num_items=150, n_train=3_000, n_test_users=100,
                  test_per_user=10, dim=5)

SOURCE = "synthetic"
"""The source-file name under which a store holding generated data names its generator:
``checksums={SOURCE: "YAHOO_SIZE, seed 0"}`` instead of each raw file's SHA-256. Records copy
a store's checksums into their provenance, so a report can say that a dataset's numbers came
from synthetic data (:func:`synthetic_source`)."""


def synthetic_source(checksums: dict | None) -> str | None:
    """The generator a store's (or a record's) ``checksums`` name (:data:`SOURCE`), else
    ``None``: the data came from the raw files."""
    value = (checksums or {}).get(SOURCE)
    return None if value is None else str(value)


@dataclass(frozen=True)
class SyntheticData:
    """A generated dataset and the truth behind it.

    ``data``: the MNAR training part and MCAR test part (``num_users`` / ``num_items`` are the
    generator's sizes; every id is below them). ``full_ratings``: ``(num_users, num_items)`` int8
    in 1..5, the rating every user would give every item. ``propensity``: ``(num_users,
    num_items)`` float32, the probability that a cell is in the training part (see module doc).
    """

    data: RatingData
    full_ratings: np.ndarray
    propensity: np.ndarray

    def train_propensity(self) -> np.ndarray:
        """Propensities of the training ratings, shape ``(n_train,)``, in their order."""
        return self.propensity[self.data.train.user, self.data.train.item]


def _check(num_users, num_items, n_train, n_test_users, test_per_user, dim, noise,
           rating_shares, rating_odds, popularity_sigma) -> None:
    for label, value in (("num_users", num_users), ("num_items", num_items),
                         ("n_train", n_train), ("n_test_users", n_test_users),
                         ("test_per_user", test_per_user), ("dim", dim)):
        if int(value) != value or value < 1:
            raise ValueError(f"{label} must be a positive integer, got {value!r}")
    if n_train > num_users * num_items:
        raise ValueError(f"n_train={n_train} exceeds num_users * num_items = "
                         f"{num_users * num_items}")
    if n_test_users > num_users:
        raise ValueError(f"n_test_users={n_test_users} exceeds num_users={num_users}")
    if test_per_user > num_items:
        raise ValueError(f"test_per_user={test_per_user} exceeds num_items={num_items}")
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    if not popularity_sigma >= 0:
        raise ValueError(f"popularity_sigma must be >= 0, got {popularity_sigma!r}")
    if len(rating_shares) != 5 or min(rating_shares) <= 0:
        raise ValueError(f"rating_shares must be 5 positive numbers, got {rating_shares!r}")
    if len(rating_odds) != 5 or min(rating_odds) <= 0:
        raise ValueError(f"rating_odds must be 5 positive numbers, got {rating_odds!r}")


def _full_ratings(rng: np.random.Generator, num_users: int, num_items: int, dim: int,
                  noise: float, rating_shares) -> np.ndarray:
    """Low-rank scores plus biases and noise, quantised to 1..5; ``(num_users, num_items)`` int8."""
    theta = rng.standard_normal((num_users, dim), dtype=np.float32)
    beta = rng.standard_normal((num_items, dim), dtype=np.float32) / np.float32(np.sqrt(dim))
    score = theta @ beta.T
    score += (0.5 * rng.standard_normal(num_users, dtype=np.float32))[:, None]
    score += (0.5 * rng.standard_normal(num_items, dtype=np.float32))[None, :]
    score += np.float32(noise) * rng.standard_normal(score.shape, dtype=np.float32)
    cum = np.cumsum(np.asarray(rating_shares, dtype=np.float64))
    cuts = np.quantile(score, cum[:4] / cum[4])
    return (np.searchsorted(cuts, score.ravel()).reshape(score.shape) + 1).astype(np.int8)


def make_synthetic(num_users: int, num_items: int, n_train: int, n_test_users: int,
                   test_per_user: int, dim: int, seed: int, *, noise: float = 0.5,
                   rating_shares=YAHOO_TEST_SHARES, rating_odds=YAHOO_RATING_ODDS,
                   popularity_sigma: float = 0.5, name: str = "synthetic") -> SyntheticData:
    """Generate an MNAR training part and an MCAR test part with known truth (module doc).

    ``seed`` fixes everything: the same arguments give identical arrays. Yahoo size
    (:data:`YAHOO_SIZE`) takes a few seconds and a few hundred MB. Raises ``ValueError`` naming
    a bad argument, or when some test user has fewer than ``test_per_user`` untrained items.
    """
    _check(num_users, num_items, n_train, n_test_users, test_per_user, dim, noise,
           rating_shares, rating_odds, popularity_sigma)
    rng = np.random.default_rng(seed)
    full = _full_ratings(rng, num_users, num_items, dim, noise, rating_shares)

    popularity = np.exp(popularity_sigma * rng.standard_normal(num_items)).astype(np.float32)
    weight = np.asarray(rating_odds, dtype=np.float32)[full - 1]
    weight *= popularity[None, :]
    propensity = weight * np.float32(n_train / float(weight.sum(dtype=np.float64)))
    np.minimum(propensity, 1.0, out=propensity)
    keys = rng.standard_exponential(weight.shape, dtype=np.float32)
    keys /= weight
    del weight
    chosen = np.sort(np.argpartition(keys.ravel(), n_train - 1)[:n_train])
    del keys
    t_user, t_item = np.divmod(chosen, num_items)
    train = Ratings.from_arrays(t_user, t_item, full[t_user, t_item])

    test_users = np.sort(rng.choice(num_users, n_test_users, replace=False))
    in_train = np.zeros((num_users, num_items), dtype=bool)
    in_train[t_user, t_item] = True
    free = (~in_train[test_users]).sum(axis=1)
    if free.min() < test_per_user:
        raise ValueError(f"test_per_user={test_per_user} exceeds the {int(free.min())} untrained "
                         f"items of some test user: lower n_train or test_per_user")
    draw = rng.random((n_test_users, num_items))
    draw[in_train[test_users]] = np.inf
    picked = np.sort(np.argpartition(draw, test_per_user - 1, axis=1)[:, :test_per_user], axis=1)
    s_user = np.repeat(test_users, test_per_user)
    s_item = picked.ravel()
    test = Ratings.from_arrays(s_user, s_item, full[s_user, s_item])

    label = (f"make_synthetic(num_users={num_users}, num_items={num_items}, n_train={n_train}, "
             f"n_test_users={n_test_users}, test_per_user={test_per_user}, dim={dim}, "
             f"seed={seed}, noise={noise}, popularity_sigma={popularity_sigma})")
    data = RatingData(name, train, test, num_users, num_items, {"generator": label})
    return SyntheticData(data, full, propensity)
