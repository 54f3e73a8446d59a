import numpy as np
import pytest

from atrec.evaluation.metrics import (
    absolute_errors,
    ndcg_at_k,
    ndcg_variants,
    squared_errors,
    weighted_mean,
)

LOG2_3 = np.log2(3.0)


def test_golden_perfect_ranking_of_5_4_3_1():
    users = np.zeros(4, int)
    ratings = np.array([5, 4, 3, 1])
    scores = np.array([0.9, 0.7, 0.5, 0.1])
    assert ndcg_at_k(users, ratings, scores, 3, "standard") == pytest.approx(1.0)
    # by hand: DCG = (5-1) + 4/1 + 3/log2(3); IDCG = (2^5-1) + 4/1 + 3/log2(3)
    paper = (4 + 4 + 3 / LOG2_3) / (31 + 4 + 3 / LOG2_3)
    assert paper == pytest.approx(0.268, abs=5e-4)
    assert ndcg_at_k(users, ratings, scores, 3, "paper") == pytest.approx(paper)


def test_golden_reversed_ranking_and_two_users():
    # user 0 ranked worst-first: predicted order 1, 3, 4 (then 5)
    u = np.array([0, 0, 0, 0, 1, 1])
    r = np.array([5, 4, 3, 1, 2, 4])
    s = np.array([0.1, 0.5, 0.7, 0.9, 0.3, 0.2])  # user 1: order 2, 4 (only 2 items, k cut to 2)
    std0 = ((2 ** 1 - 1) + (2 ** 3 - 1) / LOG2_3 + (2 ** 4 - 1) / 2) / (31 + 15 / LOG2_3 + 7 / 2)
    std1 = ((2 ** 2 - 1) + (2 ** 4 - 1) / LOG2_3) / (15 + 3 / LOG2_3)
    assert ndcg_at_k(u, r, s, 3, "standard") == pytest.approx((std0 + std1) / 2)
    pap0 = ((1 - 1) + 3 / 1 + 4 / LOG2_3) / (31 + 4 + 3 / LOG2_3)
    pap1 = ((2 - 1) + 4 / 1) / ((2 ** 4 - 1) + 2 / 1)
    assert ndcg_at_k(u, r, s, 3, "paper") == pytest.approx((pap0 + pap1) / 2)
    # both variants from one pair of sorts (what the records use)
    both = ndcg_variants(u, r, s, 3)
    assert both == pytest.approx({"paper": (pap0 + pap1) / 2, "standard": (std0 + std1) / 2})


def test_ndcg_does_not_depend_on_row_order():
    rng = np.random.default_rng(0)
    u = np.repeat(np.arange(5), 6)
    r = rng.integers(1, 6, u.size)
    s = rng.normal(size=u.size)
    perm = rng.permutation(u.size)
    for variant in ("paper", "standard"):
        assert ndcg_at_k(u, r, s, 3, variant) == pytest.approx(ndcg_at_k(u[perm], r[perm], s[perm], 3, variant))


@pytest.mark.parametrize("kwargs, message", [
    (dict(variant="dcg"), "unknown nDCG variant 'dcg'"),
    (dict(k=0), "k must be >= 1"),
])
def test_ndcg_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ndcg_at_k(np.zeros(2, int), np.array([1, 2]), np.array([0.1, 0.2]), **kwargs)
    if "variant" in kwargs:
        with pytest.raises(ValueError, match=message):
            ndcg_variants(np.zeros(2, int), np.array([1, 2]), np.array([0.1, 0.2]), 3,
                          ("paper", kwargs["variant"]))


def test_weighted_mean_three_estimators():
    x = np.array([1.0, 4.0, 9.0])
    p = np.array([0.5, 1.0, 0.25])
    w = 1 / p  # 2, 1, 4
    assert weighted_mean(x) == pytest.approx(14 / 3)
    assert weighted_mean(x, w, self_normalised=False) == pytest.approx((2 + 4 + 36) / 3)
    assert weighted_mean(x, w) == pytest.approx((2 + 4 + 36) / 7)
    assert weighted_mean(x, np.ones(3)) == pytest.approx(weighted_mean(x))


def test_errors_per_rating():
    assert list(squared_errors([5, 1], [4.5, 2])) == [0.25, 1.0]
    assert list(absolute_errors([5, 1], [4.5, 2])) == [0.5, 1.0]
    with pytest.raises(ValueError, match="empty"):
        weighted_mean(np.array([]))
