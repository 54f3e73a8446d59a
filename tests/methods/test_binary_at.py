"""AT under the binary protocols: A3's loss on a hand case (cross-entropy on A1's probability
over the pairs where |A1 - A2| <= epsilon), and a fit end to end on a tiny problem."""

import math

import numpy as np
import pytest

from atrec.experiments.fitting import compute_group
from atrec.experiments.spec import RunSpec
from atrec.learners.epochs import Batch, Group, StepState
from atrec.methods.binary.at import _a3_step
from atrec.params.lookup import HyperParams
from atrec.runtime import tf


def test_a3_learns_a1_probability_where_a1_and_a2_agree():
    # one replica, one user, 3 items; A1, A2 and A3 of size 1, so probabilities are sigmoids
    a1 = {"a1_W": [[[1.0]]], "a1_H": [[[0.0], [2.0], [-1.0]]]}       # q1 = .5, .881, .269
    a2 = {"a2_W": [[[1.0]]], "a2_H": [[[0.1], [0.0], [-1.05]]]}      # q2 = .525, .5, .259
    consts = {k: tf.constant(v) for k, v in {**a1, **a2}.items()}
    p = {"pred_W": tf.constant([[[1.0]]]), "pred_H": tf.constant([[[0.5], [1.0], [-0.5]]])}
    state = StepState(p, {"pred": {"m": {k: tf.zeros_like(v) for k, v in p.items()},
                                   "v": {k: tf.zeros_like(v) for k, v in p.items()},
                                   "t": tf.zeros([1])}},
                      {"pred": Group(("pred_W", "pred_H"))},
                      {"epsilon": tf.constant(0.05), "lr": tf.constant(0.0),
                       "lam": tf.constant(0.0)}, consts)
    pairs = tf.constant([[0, 0, 0]]), tf.constant([[0, 1, 2]])
    loss = _a3_step(state, Batch(None, None, None, None, pairs[0], pairs[1], None))
    # kept: items 0 (|.5 - .525| = .025) and 2 (|.269 - .259| = .010); item 1 disagrees.
    # A3's probabilities sigmoid(.5), sigmoid(-.5) on them; targets A1's .5 and sigmoid(-1)
    s = lambda x: 1 / (1 + math.exp(-x))
    bce = lambda q, t: -(t * math.log(q) + (1 - t) * math.log(1 - q))
    expect = (bce(s(0.5), 0.5) + bce(s(-0.5), s(-1.0))) / 2
    assert loss.numpy()[0] == pytest.approx(expect, rel=1e-5)
    assert expect != pytest.approx((bce(s(0.5), .5) + bce(s(1.0), s(2.0))
                                    + bce(s(-0.5), s(-1.0))) / 3, rel=1e-3)


def test_binary_at_trains_end_to_end_and_a3_is_evaluated(small_mnar):
    params = HyperParams.from_values({"dim": 4, "lam": 1e-4, "lr": 0.05, "batch_size": 64,
                                      "epsilon": 0.1})
    spec = RunSpec(small_mnar.name, "none", True, params, "test", (0, 1), method="mf",
                   protocol="binary-icde24")
    records, _ = compute_group(small_mnar, spec, [0, 1])
    for r in records:
        assert r["method"] == "mf+at"
        assert set(r["trace"]) >= {"train_loss", "epochs_A1", "epochs_A2"}
        assert len(r["trace"]["train_loss"]) == r["metrics"]["best_step"] + 1
        assert 0.0 < r["metrics"]["mse"] < 1.0 and np.isfinite(r["metrics"]["auc"])


def _serving():
    from atrec.methods.registry import registry_for

    registry = registry_for("binary-icde24")
    return [registry.get(n) for n in registry.names() if registry.get(n).serves_in_at]


def test_every_method_that_serves_in_at_scores_with_the_mf_a3_learns_from():
    # AT's third model learns A1's probability as sigmoid(<a1_W, a1_H>) (atrec.methods.binary.at)
    # and is scored by the method's predict: both must be the MF called pred.
    from atrec.learners import binary_models as bm

    rng = np.random.default_rng(0)
    p = {"pred_W": tf.constant(rng.normal(size=(2, 5, 3)), tf.float32),
         "pred_H": tf.constant(rng.normal(size=(2, 4, 3)), tf.float32)}
    users, items = tf.constant([[0, 4, 2]] * 2), tf.constant([[3, 0, 1]] * 2)
    want = bm.mf_prob(p, "pred", users, items).numpy()
    served = _serving()
    assert {"dr-jl", "cvib", "tdr-jl", "dt-ips", "escm2-dr", "esmm", "multi-dr"} <= {
        c.name for c in served}
    for cls in served:
        np.testing.assert_array_equal(cls().predict(p, users, items).numpy(), want,
                                      err_msg=cls.name)
        assert all(f"{k}-at" in entries for entries in cls.reference_params.values()
                   for k in entries if not k.endswith("-at")), cls.name


@pytest.mark.parametrize("method, extra", [
    ("dr-jl", {"gamma": 0.05, "prop_batch": 256, "prop_lr": 0.01, "prop_lam": 1e-4}),
    ("escm2-dr", {"gamma": 0.05, "uniform_ratio": 1, "alpha": 1.0, "beta": 1.0, "theta": 0.1,
                  "prop_lam": 1e-4, "imp_lam": 1e-4})])
def test_a_method_trained_twice_or_on_one_propensity_serves_as_a1_and_a2(small_mnar, method,
                                                                          extra):
    # dr-jl: one propensity fitted once, two predictors; escm2-dr: the whole joint method twice
    values = {"dim": 4, "lam": 1e-4, "lr": 0.05, "batch_size": 64, "epsilon": 0.1, **extra}
    spec = RunSpec(small_mnar.name, "none", True, HyperParams.from_values(values), "test",
                   (0, 1), method=method, protocol="binary-icde24")
    records, _ = compute_group(small_mnar, spec, [0, 1])
    for r in records:
        assert r["method"] == f"{method}+at"
        assert {"epochs_A1", "epochs_A2"} <= set(r["trace"])
        assert 0.0 < r["metrics"]["mse"] < 1.0 and np.isfinite(r["metrics"]["auc"])
    if method == "dr-jl":
        assert "epochs_propensity" in records[0]["trace"]
