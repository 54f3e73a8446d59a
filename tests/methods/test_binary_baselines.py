"""The binary protocols' simple baselines: the popularity score against rates worked out by hand,
and biased MF's global bias free of weight decay (the contract itself is checked over the
registry, tests/methods/test_binary_conformance.py)."""

import dataclasses

import numpy as np
import pytest

from atrec.methods.binary.baselines import BinaryBiasedMF, Popularity, positive_rates
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.testing.binary import epoch_settings, fit_problem


def test_rates_are_shrunk_towards_the_overall_rate_by_hand():
    # users 0,0,1 items 0,1,1 labels 1,0,1: overall 2/3; one pseudo-count
    user, item, overall = positive_rates(np.array([0, 0, 1]), np.array([0, 1, 1]),
                                         np.array([1, 0, 1]), 3, 2, prior=1.0)
    logit = lambda p: np.log(p / (1 - p))
    np.testing.assert_allclose(user, logit(np.array([5 / 9, 5 / 6, 2 / 3])))   # user 2: none
    np.testing.assert_allclose(item, logit(np.array([5 / 6, 5 / 9])))
    assert overall == pytest.approx(logit(2 / 3))


def test_the_popularity_score_is_the_odds_of_independent_main_effects(small_mnar):
    problem = fit_problem(small_mnar, "binary-clean", (0,))
    res = Popularity().fit(problem, {"dim": 1, "lam": 1.0}, epoch_settings("binary-clean"))
    t = problem.train
    user, item, overall = positive_rates(t["user"][0], t["item"][0], t["rating"][0],
                                         problem.num_users, problem.num_items, 1.0)
    test = problem.test
    odds = np.exp(user[test["user"]] + item[test["item"]] - overall)
    np.testing.assert_allclose(res.scores[0], odds / (1 + odds), rtol=1e-5)
    assert res.best_step.tolist() == [0] and res.selection_trace.shape == (1, 1)


def test_biased_mf_decays_its_tables_and_biases_but_not_the_global_bias(small_mnar):
    """At a weight decay that pins the tables and the user and item biases to 0, the fit
    predicts the training positive rate everywhere (a decayed global bias would be pulled to
    1/2)."""
    problem = fit_problem(small_mnar, "binary-icde24", (0,))
    settings = dataclasses.replace(epoch_settings("binary-icde24"), max_epochs=200)
    values = {"dim": 2, "lam": 5.0, "lr": 0.05, "batch_size": 64}
    res = BinaryBiasedMF().fit(problem, values, settings)
    rate = problem.train["rating"][0].mean()
    assert abs(rate - 0.5) > 0.05                        # the check can tell the two apart
    np.testing.assert_allclose(res.scores[0], rate, atol=0.02)


def test_both_baselines_are_ordinary_binary_methods():
    names = BINARY_METHODS.names()
    assert {"mf-bias", "popularity"} <= set(names)
    assert not BinaryBiasedMF.uses_mcar and not Popularity.uses_mcar
