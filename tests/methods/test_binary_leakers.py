"""DR-BIAS, DR-MSE and Stable-DR (atrec.methods.binary.dr_bias, .stable_dr, .naive_bayes): the
naive-Bayes propensity and every loss against hand computations, autodiff against finite
differences, the reference code's weight misalignment, and which test labels each reads: exactly
the protocol's 5% slice under binary-icde24, none of the evaluated test set under binary-clean."""

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from atrec.data.ratings import Ratings
from atrec.experiments.inputs import stack_inputs
from atrec.experiments.fitting import compute_group
from atrec.experiments.spec import RunSpec
from atrec.learners import binary_models as bm
from atrec.learners.epochs import Group, StepState
from atrec.methods.base import FitProblem
from atrec.methods.binary import dr_bias, stable_dr
from atrec.methods.binary import naive_bayes as nb
from atrec.methods.binary.base import BinaryRun
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.names import NO_PROPENSITY
from atrec.protocols import get_protocol
from atrec.protocols.binary import EpochSettings, leak_positions
from atrec.params.lookup import HyperParams
from atrec.runtime import tf
from atrec.testing.data import small_data

LN = math.log


def bce(q, t):
    return -(t * LN(q) + (1 - t) * LN(1 - q))


def tiny_run(users, items, labels, corrected=False, leak=0.25, num_items=3):
    """A stand-in for BinaryRun with one replica's training list."""
    train = {"user": np.array([users]), "item": np.array([items]),
             "rating": np.array([labels], np.float32)}
    problem = SimpleNamespace(train=train)
    return SimpleNamespace(problem=problem, replicas=1, seeds=[7], num_items=num_items,
                           num_users=3, corrected=corrected,
                           leak_mean=lambda: np.array([leak], np.float32))


# --- the naive-Bayes propensity ------------------------------------------------------------------

def test_naive_bayes_propensity_by_hand_divides_by_the_product_of_the_max_ids():
    # 4 pairs, 3 positives, max user id 2 and max item id 2 (3 x 3 ids, but 2 x 2 = 4 cells)
    run = tiny_run([0, 1, 2, 2], [1, 0, 2, 1], [1, 0, 1, 1], leak=0.25)
    c = nb.counts(run)
    assert c["nb_cells"].numpy()[0] == 4.0 and c["nb_pos"].numpy()[0] == 3.0
    p1, p0 = nb.propensities(c)
    # P(o=1) = 4/4, P(y=1|o=1) = 3/4, P(y=1) = 1/4: p1 = 3/4 / (1/4), p0 = 1/4 / (3/4)
    assert p1.numpy()[0] == pytest.approx(3.0) and p0.numpy()[0] == pytest.approx(1 / 3)
    # mu = 1: P(o=1) = 5/6, P(y=1|o=1) = 4/6
    p1, p0 = nb.propensities(c, tf.constant([1.0]))
    assert p1.numpy()[0] == pytest.approx(20 / 9, rel=1e-6)
    assert p0.numpy()[0] == pytest.approx(10 / 27, rel=1e-6)
    w = nb.weights(p1, p0, tf.constant([[1.0, 0.0]])).numpy()
    np.testing.assert_allclose(w, [[9 / 20, 27 / 10]], rtol=1e-6)   # not clipped


# --- losses by hand ------------------------------------------------------------------------------

def test_dr_bias_predictor_loss_by_hand_in_both_forms():
    q, y, qh, w = [0.8, 0.4], [1.0, 0.0], [0.6, 0.5], [2.0, 3.0]
    args = [tf.constant([v]) for v in (q, y, qh, w)] + [tf.constant([[0.5]]),
                                                        tf.constant([[0.25]])]
    xent = 2 * -LN(0.8) + 3 * -LN(0.6)
    corr = bce(0.8, 0.6) + bce(0.4, 0.5)
    direct = LN(2.0)                        # BCE(0.5, 0.25) = ln 2 whatever the target
    loss, stop_term = dr_bias.predictor_loss(*args, corrected=False)
    assert loss.numpy()[0] == pytest.approx((xent - corr) / 2 + direct, rel=1e-6)
    assert stop_term.numpy()[0] == pytest.approx(xent, rel=1e-6)
    # corrected: the correction weighted by w, the direct term scaled (by N / n in training)
    loss, _ = dr_bias.predictor_loss(*args, corrected=True, direct_scale=12.5)
    corr_w = 2 * bce(0.8, 0.6) + 3 * bce(0.4, 0.5)
    assert loss.numpy()[0] == pytest.approx((xent - corr_w) / 2 + 12.5 * direct, rel=1e-6)


@pytest.mark.parametrize("lam, v", [(1.0, 36.0), (0.0, 12.0), (0.5, 24.0)])
def test_dr_mse_imputation_weight_and_loss_by_hand(lam, v):
    # w = 4: bias w^3 (1 - 1/w)^2 = 64 * 9/16 = 36, MRDR w^2 (1 - 1/w) = 16 * 3/4 = 12
    got = dr_bias.imputation_weight(tf.constant([[4.0]]), tf.constant(lam)).numpy()[0, 0]
    assert got == pytest.approx(v, rel=1e-6)
    e = -LN(0.8)
    reversed_ = bce(0.6, 0.8)                # the code's BCE(q_hat, q)
    in_order = bce(0.8, 0.6)                 # the corrected BCE(q, q_hat)
    for corrected, e_hat in ((False, reversed_), (True, in_order)):
        loss = dr_bias.imputation_loss(tf.constant([[0.8]]), tf.constant([[1.0]]),
                                       tf.constant([[0.6]]), tf.constant([[v]]), corrected)
        assert loss.numpy()[0] == pytest.approx(v * (e - e_hat) ** 2, rel=1e-5)


def test_stable_dr_losses_by_hand():
    # the mu step: sum_D BCE(p, o) + eta (sum_D (1 - o/p)(e_hat - mean e_hat))^2
    loss = stable_dr.mu_loss(tf.constant([[0.1, 0.2, 0.2]]), tf.constant([[1.0, 0.0, 0.0]]),
                             tf.constant([[1.0, 2.0, 3.0]]), 10.0)
    # (1 - 10)(1 - 2) + (1)(0) + (1)(1) = 10
    assert loss.numpy()[0] == pytest.approx(-LN(0.1) - 2 * LN(0.8) + 10 * 100, rel=1e-6)
    # the imputation step: sum_O w (e - e_hat)^2
    e = -LN(0.8)
    for corrected, e_hat in ((False, bce(0.6, 0.8)), (True, bce(0.8, 0.6))):
        got = stable_dr.imputation_loss(tf.constant([[0.8]]), tf.constant([[1.0]]),
                                        tf.constant([[0.6]]), tf.constant([[2.0]]), corrected)
        assert got.numpy()[0] == pytest.approx(2 * (e - e_hat) ** 2, rel=1e-5)


# --- autodiff against finite differences (float64) -----------------------------------------------

def _finite_difference(f, x, idx, h=1e-6):
    up, down = x.copy(), x.copy()
    up[idx] += h
    down[idx] -= h
    return (f(up) - f(down)) / (2 * h)


def test_mu_gradient_matches_finite_differences():
    c = {"nb_n": tf.constant([6960.0, 50.0], tf.float64),
         "nb_cells": tf.constant([289.0 * 299, 400.0], tf.float64),
         "nb_pos": tf.constant([3620.0, 20.0], tf.float64),
         "nb_py1": tf.constant([0.4, 0.3], tf.float64)}
    cell = tf.constant([[2.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 0.0]], tf.float64)
    o = tf.cast(cell > 0.5, tf.float64)
    e_hat = tf.constant([[0.3, 1.2, 0.7, 0.1], [0.9, 0.2, 0.4, 2.0]], tf.float64)

    def f(mu):
        p1, p0 = nb.propensities(c, mu)
        return stable_dr.mu_loss(tf.where(cell > 1.5, p1[:, None], p0[:, None]), o, e_hat, 3.0)

    mu = np.array([0.5, 2.0])
    x = tf.constant(mu)
    with tf.GradientTape() as tape:
        tape.watch(x)
        total = tf.reduce_sum(f(x))
    grad = tape.gradient(total, x).numpy()
    for r in range(2):
        num = _finite_difference(lambda m: float(tf.reduce_sum(f(tf.constant(m)))), mu, r)
        assert grad[r] == pytest.approx(num, rel=1e-5)


def test_dr_predictor_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    params = {"pred_W": rng.normal(size=(2, 4, 3)), "pred_H": rng.normal(size=(2, 5, 3))}
    users, items = tf.constant([[0, 1, 3], [2, 2, 0]]), tf.constant([[4, 0, 1], [3, 1, 1]])
    du, di = tf.constant([[1, 2], [3, 0]]), tf.constant([[2, 2], [4, 0]])
    y = tf.constant([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], tf.float64)
    qh = tf.constant([[0.3, 0.6, 0.8], [0.5, 0.2, 0.9]], tf.float64)
    qhd = tf.constant([[0.4, 0.7], [0.1, 0.5]], tf.float64)
    w = tf.constant([[2.0, 1.5, 4.0], [1.0, 3.0, 2.5]], tf.float64)

    def loss(p):
        return dr_bias.predictor_loss(bm.mf_prob(p, "pred", users, items), y, qh, w,
                                      bm.mf_prob(p, "pred", du, di), qhd, corrected=True,
                                      direct_scale=7.0)[0]

    tensors = {k: tf.constant(v) for k, v in params.items()}
    state = StepState(tensors, {}, {"pred": Group(("pred_W", "pred_H"))}, {}, {})
    _, grads = state.gradients(("pred_W", "pred_H"), loss)
    for name, value in params.items():
        total = lambda x, name=name: float(tf.reduce_sum(loss({**tensors,
                                                               name: tf.constant(x)})))
        for idx in [(0, 1, 2), (1, 2, 0), (0, 3, 1), (1, 0, 1)]:
            assert grads[name].numpy()[idx] == pytest.approx(
                _finite_difference(total, value, idx), rel=1e-5, abs=1e-8)


# --- Stable-DR's weight misalignment -------------------------------------------------------------

def test_weights_follow_row_major_order_of_the_cells_not_the_list():
    # the list is not in row-major order: cells 5, 1, 7 (num_items 3) hold labels 1, 0, 0
    users, items, labels = [1, 0, 2], [2, 1, 1], [1, 0, 0]
    ref = stable_dr.weight_labels(tiny_run(users, items, labels))
    np.testing.assert_array_equal(ref, [[0, 1, 0]])      # the labels in cell order 1, 5, 7
    fixed = stable_dr.weight_labels(tiny_run(users, items, labels, corrected=True))
    np.testing.assert_array_equal(fixed, [labels])


def test_weights_are_aligned_on_a_row_major_list_and_misaligned_on_a_shuffled_one():
    rng = np.random.default_rng(1)
    cells = np.sort(rng.choice(300, 60, replace=False))
    users, items = (cells // 20).tolist(), (cells % 20).tolist()
    labels = rng.integers(0, 2, 60).tolist()
    coat = stable_dr.weight_labels(tiny_run(users, items, labels, num_items=20))
    np.testing.assert_array_equal(coat, [labels])        # Coat: row-major, so aligned
    perm = rng.permutation(60)                           # Yahoo: binary-icde24 shuffles it
    shuffled = stable_dr.weight_labels(tiny_run([users[i] for i in perm],
                                                [items[i] for i in perm],
                                                [labels[i] for i in perm], num_items=20))
    np.testing.assert_array_equal(shuffled, [labels])    # rank r's class at list position r
    assert (shuffled[0] != np.array(labels)[perm]).sum() > 10   # not the pairs' own


# --- what each method reads of the test set ------------------------------------------------------

PARAMS = {"dim": 2, "lam": 1e-3, "lr": 0.05, "batch_size": 64, "uniform_ratio": 1,
          "mse_lambda": 0.5, "eta": 10.0, "mu_lr": 0.01, "stop": 5}
SEEDS = (3, 4)


def problem(data, protocol):
    inputs = stack_inputs(data, NO_PROPENSITY, list(SEEDS), split=get_protocol(protocol).split)
    full = inputs.splits[0].test_full
    return FitProblem(data.num_users, data.num_items, SEEDS, inputs.train, inputs.val,
                      inputs.test, {"user": full.user, "item": full.item,
                                    "rating": full.rating}, inputs.splits)


def with_test_labels_flipped(data, rows):
    rating = data.test.rating.copy()
    rating[rows] = np.where(rating[rows] >= 3, 1, 5)
    return replace(data, test=Ratings(data.test.user, data.test.item, rating))


def scores(cls, data, protocol, forms):
    settings = EpochSettings(stopping="validation" if protocol == "binary-clean" else
                             "reference", forms=forms, max_epochs=2)
    params = {h.name: PARAMS[h.name] for h in cls.hyperparameters}
    return cls().fit(problem(data, protocol), params, settings).scores


def test_the_slice_read_under_binary_icde24_is_the_protocols_5_percent():
    data = small_data()
    prob = problem(data, "binary-icde24")
    run = BinaryRun(prob, PARAMS, EpochSettings(), leaks=True)
    y = (data.test.rating >= 3).astype(np.float64)
    expect = [y[leak_positions(len(y), s)].mean() for s in SEEDS]
    np.testing.assert_allclose(run.leak_mean(), expect, rtol=1e-6)
    np.testing.assert_allclose(nb.counts(run)["nb_py1"].numpy(), expect, rtol=1e-6)
    assert len(leak_positions(len(y), 3)) == int(0.05 * len(y))


@pytest.mark.parametrize("cls", [dr_bias.DRBias, stable_dr.StableDR])
def test_under_binary_icde24_only_the_slice_of_the_test_labels_changes_training(cls):
    data = small_data()
    base = scores(cls, data, "binary-icde24", "coded")
    n = len(data.test.rating)
    inside = set(leak_positions(n, SEEDS[0])) | set(leak_positions(n, SEEDS[1]))
    outside = np.array(sorted(set(range(n)) - inside))
    same = scores(cls, with_test_labels_flipped(data, outside), "binary-icde24", "coded")
    np.testing.assert_array_equal(base, same)
    moved = scores(cls, with_test_labels_flipped(data, leak_positions(n, SEEDS[0])),
                   "binary-icde24", "coded")
    assert not np.array_equal(base[0], moved[0])


def test_under_binary_clean_no_evaluated_test_label_reaches_training():
    data = small_data()
    prob = problem(data, "binary-clean")
    evaluated = {(u, i) for u, i in zip(prob.test["user"], prob.test["item"])}
    sliced = prob.splits[0].test_prior
    assert evaluated.isdisjoint(zip(sliced.user, sliced.item))
    index = {(u, i): r for r, (u, i) in enumerate(zip(data.test.user, data.test.item))}
    rows = np.array([index[p] for p in evaluated])
    for cls in (dr_bias.DRMSE, stable_dr.StableDR):
        base = scores(cls, data, "binary-clean", "corrected")
        flipped = scores(cls, with_test_labels_flipped(data, rows), "binary-clean", "corrected")
        np.testing.assert_array_equal(base, flipped)


def test_registered_leaking_with_a_form_option_and_the_old_names_as_aliases():
    from atrec.methods.registry import canonical, resolve

    for base in ("dr-bias", "dr-mse", "stable-dr"):
        cls = BINARY_METHODS.get(base)
        assert cls.leaks and cls.uses_mcar and cls.serves_in_at
        assert [o.name for o in cls.options] == ["form"]
        assert set(cls.reference_params) == {"coat", "yahoo"}
        for suffix, form in {"-corrected": "corrected", "-coded": "coded"}.items():
            assert resolve(base + suffix, "binary-icde24") == (cls, {"form": form})
        assert canonical(base + "-coded", "binary-icde24") == base
        assert canonical(base + "-coded", "binary-clean") == base + "+form=coded"
        assert canonical(base + "-corrected", "binary-icde24") == base + "+form=corrected"


def test_the_predictor_serves_as_a1_and_a2_of_at(small_mnar):
    name = "stable-dr"      # dr-bias shares its A1/A2 code (dr_bias.at_predictors)
    cls = BINARY_METHODS.get(name)
    values = {h.name: PARAMS[h.name] for h in cls.hyperparameters}
    spec = RunSpec(small_mnar.name, "none", True, HyperParams.from_values(
        {**values, "epsilon": 0.1}), "test", (0, 1), method=name, protocol="binary-icde24")
    records, _ = compute_group(small_mnar, spec, [0, 1])
    for r in records:
        assert r["method"] == f"{name}+at"
        assert set(r["trace"]) >= {"train_loss", "epochs_A1", "epochs_A2"}
        assert 0.0 < r["metrics"]["mse"] < 1.0 and np.isfinite(r["metrics"]["auc"])
