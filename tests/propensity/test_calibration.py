"""The calibrated propensity ``P = min(1, c * p)`` (docs/methods.md, "Calibrated propensities"):
``c`` from :meth:`Propensity.estimate_with_calibration`, checked against the full users x items
matrix of ``p`` (count estimators) and against the naive-Bayes formula ``P(r | O=1) * rho /
P(r)``."""

import numpy as np
import pytest

from atrec.data.splits import make_split
from atrec.experiments.inputs import stack_inputs
from atrec.propensity.builtin import DataItem
from atrec.propensity.registry import get_estimator


def full_matrix(name, split):
    """``p`` of every user x item cell, from the estimator's own pair values."""
    est = get_estimator(name)
    if name == "uniform":
        return np.ones((split.num_users, split.num_items))
    p_user, p_item = est._relative_counts(split)
    u, i = np.meshgrid(np.arange(split.num_users), np.arange(split.num_items), indexing="ij")

    class Cells:
        user, item = u.ravel(), i.ravel()

    return est.pair_values(p_user, p_item, Cells).reshape(u.shape)


@pytest.mark.parametrize("name", ["uniform", "user", "item", "user-item"])
def test_count_estimators_calibrate_to_the_observed_density(name, small_mnar):
    split = make_split(small_mnar, 3)
    c = get_estimator(name).estimate_with_calibration(split)[1]
    p = full_matrix(name, split)
    density = len(split.train) / (split.num_users * split.num_items)
    assert np.isclose((c * p).mean(), density, rtol=1e-12)
    np.testing.assert_allclose(c * get_estimator(name).estimate(split).train,
                               c * p[split.train.user, split.train.item], rtol=1e-6)


@pytest.mark.parametrize("name", ["nb-uniform", "nb-true"])
def test_naive_bayes_calibrates_to_bayes_rule(name, small_mnar):
    split = make_split(small_mnar, 3)
    est = get_estimator(name)
    c = est.estimate_with_calibration(split)[1]
    rho = len(split.train) / (split.num_users * split.num_items)
    seen = np.maximum(split.train.histogram(), 1.0)
    prior = (np.full(5, 0.2) if name == "nb-uniform"
             else np.maximum(split.test_prior.histogram(), 1.0) / np.maximum(
                 split.test_prior.histogram(), 1.0).sum())
    bayes = seen / seen.sum() * rho / prior                       # P(O=1 | r), r = 1..5
    np.testing.assert_allclose(c * est.per_rating_value(split), bayes, rtol=1e-12)


def test_data_item_calibrates_over_all_users(small_mnar):
    split = make_split(small_mnar, 0)
    p = np.linspace(0.1, 1.0, split.num_items)
    c = DataItem(p).estimate_with_calibration(split)[1]
    assert np.isclose(c * p.mean(), len(split.train) / (split.num_users * split.num_items))


def test_stack_inputs_carries_one_factor_per_seed(small_mnar):
    inputs = stack_inputs(small_mnar, "item", [0, 1])
    factors = inputs.train["calibration"]
    assert factors.shape == (2,)
    for k, sp in enumerate(inputs.splits):
        assert factors[k] == get_estimator("item").estimate_with_calibration(sp)[1]


def test_an_estimator_without_calibration_stacks_none(small_mnar):
    class Plain:
        def estimate(self, split):
            return get_estimator("item").estimate(split)

    inputs = stack_inputs(small_mnar, "item", [0], estimator=Plain())
    assert "calibration" not in inputs.train
