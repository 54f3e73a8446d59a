"""The metric registry: every built-in metric on a hand-computed case, its direction, and
which metrics records carry."""

import math

import numpy as np
import pytest

from atrec.errors import AtrecError
from atrec.evaluation.registry import (
    DIRECTIONS,
    LABELS,
    METRICS,
    Metric,
    get_metric,
    metric_names,
    metrics_in,
    ranking_values,
)

# two users: user 0 rates (3, 1, 2) and its items are scored (0.1, 0.9, 0.5), so the predicted
# order is ratings 1, 2, 3; user 1 has a single item (rating 4)
USERS = np.array([0, 0, 0, 1])
RATINGS = np.array([3.0, 1.0, 2.0, 4.0])
SCORES = np.array([0.1, 0.9, 0.5, 0.3])


def test_mse_and_mae_by_hand():
    r, p = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 5.0])
    assert get_metric("mse").compute(None, r, p) == pytest.approx(5 / 3)
    assert get_metric("mae").compute(None, r, p) == pytest.approx(1.0)


def test_ijcai_ndcg_by_hand_with_k_cut_at_the_users_items():
    # user 0, k = 2: DCG = 2^0/log2(2) + 2^1/log2(3); IDCG = 2^2/log2(2) + 2^1/log2(3);
    # user 1 has one item, so k = min(k, 1) and its nDCG is 1
    user0 = (1 + 2 / math.log2(3)) / (4 + 2 / math.log2(3))
    from atrec.evaluation.metrics import ndcg_exp_at_k

    assert ndcg_exp_at_k(USERS, RATINGS, SCORES, k=2) == pytest.approx((user0 + 1) / 2)
    # k = 5 covers user 0's three items: 1 + 2/log2(3) + 4/log2(4) over 4 + 2/log2(3) + 1/2
    full0 = (1 + 2 / math.log2(3) + 4 / 2) / (4 + 2 / math.log2(3) + 1 / 2)
    assert get_metric("ndcg5_ijcai").compute(USERS, RATINGS, SCORES) == pytest.approx(
        (full0 + 1) / 2)


def test_rating_weighted_recall_by_hand():
    from atrec.evaluation.metrics import rating_recall_at_k

    # user 0's top 2 hold ratings 1 and 2 of its 3 + 1 + 2 = 6; user 1: 4 / 4
    assert rating_recall_at_k(USERS, RATINGS, SCORES, k=2) == pytest.approx((3 / 6 + 1) / 2)
    # top 5 holds everything: recall 1 for both users
    assert get_metric("recall5_ijcai").compute(USERS, RATINGS, SCORES) == pytest.approx(1.0)


def test_ties_follow_argsort_reversed():
    # numpy's argsort()[::-1] puts the later of two equal scores first
    scores = np.array([0.5, 0.5])
    assert list(scores.argsort()[::-1]) == [1, 0]
    users, ratings = np.array([0, 0]), np.array([1.0, 5.0])
    from atrec.evaluation.metrics import ndcg_exp_at_k, rating_recall_at_k

    assert ndcg_exp_at_k(users, ratings, scores, k=1) == pytest.approx(1.0)
    assert rating_recall_at_k(users, ratings, scores, k=1) == pytest.approx(5 / 6)


def test_paper_and_standard_ndcg_registered_with_their_golden_values():
    # by hand: (5, 4, 3, 1) ranked perfectly: standard nDCG@3 1.0, the paper's variant 0.268
    users, ratings = np.zeros(4, int), np.array([5.0, 4.0, 3.0, 1.0])
    scores = np.array([4.0, 3.0, 2.0, 1.0])
    out = ranking_values(["ndcg3_paper", "ndcg3_standard"], users, ratings, scores)
    assert out["ndcg3_standard"] == pytest.approx(1.0)
    assert out["ndcg3_paper"] == pytest.approx((4 + 4 + 3 / math.log2(3))
                                               / (31 + 4 + 3 / math.log2(3)))
    assert round(out["ndcg3_paper"], 3) == 0.268


def test_directions_and_labels():
    assert [DIRECTIONS[m] for m in metric_names()[:6]] == [True, True, False, False, False,
                                                            False]
    assert LABELS["ndcg5_ijcai"] == "nDCG@5" and LABELS["recall5_ijcai"] == "Recall@5"


def test_metrics_in_keeps_registry_order_and_skips_other_keys():
    records = [{"metrics": {"recall5_ijcai": 1, "mse": 1, "best_step": 3}},
               {"metrics": {"mae": 1}}]
    assert metrics_in(records) == ("mae", "mse", "recall5_ijcai")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"kind": "other"}, ValueError, "kind must be one of"),
    ({"compute": 3}, TypeError, "compute must be callable"),
    ({"label": ""}, ValueError, "non-empty label"),
])
def test_bad_metric_definitions(kwargs, error, message):
    base = {"name": "x", "label": "X", "lower_is_better": True, "kind": "selected",
            "compute": lambda u, r, v: 0.0}
    with pytest.raises(error, match=message):
        Metric(**{**base, **kwargs})


def test_unknown_metric_is_one_line():
    with pytest.raises(AtrecError, match="unknown metric 'nope'"):
        get_metric("nope")
    assert "ndcg5_ijcai" in METRICS.names()
