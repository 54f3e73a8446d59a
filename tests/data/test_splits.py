import numpy as np

from atrec.data.ratings import RatingData, Ratings
from atrec.data.splits import make_split, shuffle_cut


def _data(n_train=50, n_test=40):
    rng = np.random.default_rng(0)
    train = Ratings.from_arrays(rng.integers(0, 7, n_train), rng.integers(0, 9, n_train),
                                rng.integers(1, 6, n_train))
    test = Ratings.from_arrays(rng.integers(0, 7, n_test), rng.integers(0, 9, n_test),
                               rng.integers(1, 6, n_test))
    return RatingData("toy", train, test, 7, 9, {})


def test_shuffle_cut_sizes_follow_ceil_convention():
    rest, cut = shuffle_cut(6960, 0.1, 0)
    assert (len(rest), len(cut)) == (6264, 696)
    rest, cut = shuffle_cut(4640, 0.95, 12345)
    assert (len(rest), len(cut)) == (232, 4408)
    rest, cut = shuffle_cut(11, 0.1, 3)  # ceil(1.1) = 2
    assert len(cut) == 2 and sorted(np.r_[rest, cut]) == list(range(11))


def test_shuffle_cut_is_the_seeded_permutation():
    # The cut side is the head of RandomState(seed).permutation(n) (scikit-learn convention).
    perm = np.random.RandomState(7).permutation(20)
    rest, cut = shuffle_cut(20, 0.25, 7)
    assert list(cut) == list(perm[:5]) and list(rest) == list(perm[5:])


def test_split_is_deterministic_and_partitions():
    data = _data()
    a, b = make_split(data, 3), make_split(data, 3)
    for part in ("train", "val", "test", "test_prior"):
        for col in ("user", "item", "rating"):
            assert np.array_equal(getattr(getattr(a, part), col), getattr(getattr(b, part), col))
    assert len(a.train) + len(a.val) == 50
    assert len(a.test) + len(a.test_prior) == 40 and len(a.test_full) == 40
    c = make_split(data, 4)
    assert not np.array_equal(a.val.user, c.val.user) or not np.array_equal(a.val.item, c.val.item)
    # the MCAR cut does not depend on the seed
    assert np.array_equal(a.test.user, c.test.user)

