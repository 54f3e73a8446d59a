"""The metrics against a known truth (atrec.evaluation.truth_metrics) on hand-made matrices:
values computed by hand, the oracle q = c at the best value, a random or constant score at the
chance value, and the fast AUC against the pair-by-pair definition."""

import itertools
import math

import numpy as np
import pytest

from atrec.evaluation import truth_metrics as tm
from atrec.evaluation.registry import get_metric, ranking_values

C3 = np.array([0.9, 0.5, 0.1])
ONE = np.zeros(3, np.int64)


def _pairwise_auc(c, q):
    """The definition, pair by pair: ordered pairs of distinct cells, weight c_i (1 - c_j)."""
    won = total = 0.0
    for i, j in itertools.permutations(range(len(c)), 2):
        w = c[i] * (1 - c[j])
        total += w
        won += w * (1.0 if q[i] > q[j] else 0.5 if q[i] == q[j] else 0.0)
    return won / total


@pytest.mark.parametrize("q, won", [
    ([0.3, 0.2, 0.1], 0.45 + 0.81 + 0.45),            # perfect order: (0,1), (0,2), (1,2)
    ([0.1, 0.2, 0.3], 0.05 + 0.01 + 0.05),            # reversed
    ([0.3, 0.3, 0.1], 0.81 + 0.45 + 0.5 * (0.45 + 0.05)),   # 0 and 1 tied
    ([0.7, 0.7, 0.7], 0.5 * 1.82),                    # all tied
])
def test_weighted_auc_by_hand(q, won):
    # weights c_i (1 - c_j): .45 .81 | .05 .45 | .01 .05, total 1.82
    assert tm.weighted_auc(ONE, C3, np.array(q)) == pytest.approx(won / 1.82, abs=1e-12)


def test_weighted_auc_matches_the_pairwise_definition_with_ties():
    rng = np.random.default_rng(0)
    c = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], 40)
    q = rng.choice([0.2, 0.4, 0.6], 40)                # many ties
    assert tm.weighted_auc(np.zeros(40), c, q) == pytest.approx(_pairwise_auc(c, q), abs=1e-12)


def test_oracle_has_the_best_auc_and_any_order_averages_one_half():
    c = np.array([0.1, 0.9, 0.5, 0.3, 0.7])
    users = np.zeros(5)
    values = [tm.weighted_auc(users, c, np.array(p, float))
              for p in itertools.permutations(range(5))]
    oracle = tm.weighted_auc(users, c, c)
    assert oracle == pytest.approx(max(values), abs=1e-12)
    assert oracle < 1.0                                 # the truth itself loses some pairs
    assert np.mean(values) == pytest.approx(0.5, abs=1e-12)   # a random order's expectation
    assert tm.weighted_auc(users, c, np.full(5, 0.3)) == pytest.approx(0.5, abs=1e-12)


def test_weighted_auc_is_nan_without_a_weighted_pair():
    assert math.isnan(tm.weighted_auc(np.zeros(3), np.ones(3), np.arange(3.0)))


def test_user_auc_averages_users():
    users = np.array([0, 0, 0, 1, 1])
    c = np.array([0.9, 0.5, 0.1, 0.2, 0.6])
    q = np.array([0.3, 0.2, 0.1, 0.9, 0.1])            # user 1 ranked the wrong way round
    # user 0: 1.71 / 1.82; user 1: pairs (3,4) .2*.4 = .08 won, (4,3) .6*.8 = .48 lost
    expected = (1.71 / 1.82 + 0.08 / 0.56) / 2
    assert tm.user_auc(users, c, q) == pytest.approx(expected, abs=1e-12)
    assert tm.user_auc(users, c, c) == pytest.approx((1.71 / 1.82 + 0.48 / 0.56) / 2)
    assert tm.user_auc(users, c, np.zeros(5)) == pytest.approx(0.5)


def test_top_k_by_hand_and_at_the_oracle():
    users = np.zeros(4)
    c = np.array([0.1, 0.9, 0.5, 0.3])
    q = np.array([0.4, 0.3, 0.2, 0.1])                 # top 2: items 0 and 1
    idcg = 0.9 + 0.5 / math.log2(3)
    got = tm.top_k_truth(users, c, q, k=2)
    assert got["ndcg"] == pytest.approx((0.1 + 0.9 / math.log2(3)) / idcg)
    assert got["recall"] == pytest.approx(1.0 / 1.8)
    oracle = tm.top_k_truth(users, c, c, k=2)
    assert oracle["ndcg"] == pytest.approx(1.0)
    assert oracle["recall"] == pytest.approx(1.4 / 1.8)   # the most any ranking can hold
    everything = [tm.top_k_truth(users, c, np.array(p, float), k=2)
                  for p in itertools.permutations(range(4))]
    assert max(v["recall"] for v in everything) == pytest.approx(oracle["recall"])
    # a random order: expected DCG = mean c x the discounts; Recall = k / n_items
    chance_dcg = c.mean() * (1 + 1 / math.log2(3))
    assert np.mean([v["ndcg"] for v in everything]) == pytest.approx(chance_dcg / idcg)
    assert np.mean([v["recall"] for v in everything]) == pytest.approx(0.5)


def test_top_k_leaves_out_a_user_without_any_rate():
    users = np.array([0, 0, 1, 1])
    c = np.array([0.9, 0.1, 0.0, 0.0])
    got = tm.top_k_truth(users, c, np.array([0.1, 0.9, 0.5, 0.4]), k=1)
    assert got == pytest.approx({"ndcg": 0.1 / 0.9, "recall": 0.1})


def test_expected_log_loss_oracle_is_the_entropy_and_one_half_is_log_two():
    c = np.array([0.9, 0.1, 0.5])
    entropy = -np.mean(c * np.log(c) + (1 - c) * np.log(1 - c))
    assert tm.expected_log_loss(np.zeros(3), c, c) == pytest.approx(entropy)
    assert tm.expected_log_loss(np.zeros(3), c, np.full(3, 0.5)) == pytest.approx(math.log(2))
    for shift in (-0.05, 0.05):
        assert tm.expected_log_loss(np.zeros(3), c, np.clip(c + shift, 0, 1)) > entropy


@pytest.mark.parametrize("rates, message", [
    ([0.5, 1.5], "rates in \\[0, 1\\]"),
    ([], "empty"),
])
def test_bad_rates_are_one_line_errors(rates, message):
    n = len(rates)
    with pytest.raises(ValueError, match=message):
        tm.weighted_auc(np.zeros(n), np.array(rates), np.zeros(n))


def test_registered_metrics_read_the_same_functions():
    users = np.array([0, 0, 0, 1, 1])
    c = np.array([0.9, 0.5, 0.1, 0.2, 0.6])
    q = np.array([0.3, 0.2, 0.1, 0.9, 0.1])
    names = ["truth_logloss", "truth_auc", "truth_ndcg5", "truth_recall5", "truth_user_auc"]
    got = ranking_values(names, users, c, q)
    assert got["truth_auc"] == tm.weighted_auc(users, c, q)
    assert got["truth_user_auc"] == tm.user_auc(users, c, q)
    assert got["truth_ndcg5"] == tm.top_k_truth(users, c, q)["ndcg"]
    assert get_metric("truth_logloss").lower_is_better
    assert not get_metric("truth_auc").lower_is_better
