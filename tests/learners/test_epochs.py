"""The binary protocols' engine against hand computations: the cross-entropy forms, PyTorch's
Adam, the reference stopping rule on a scripted loss sequence, early stopping, and autodiff
against finite differences (atrec.learners.losses, atrec.learners.epochs)."""

import math

import numpy as np
import pytest

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import (
    Group,
    Patience,
    ReferenceRule,
    StepState,
    torch_adam,
)
from atrec.runtime import tf


def test_cross_entropies_by_hand():
    q = tf.constant([0.8, 0.25, 1.0, 0.0])
    t = tf.constant([1.0, 0.0, 0.0, 1.0])
    # -log 0.8, -log 0.75, a saturated wrong answer costs 100 (each log clamped at -100), twice
    np.testing.assert_allclose(losses.bce(q, t).numpy(),
                               [0.22314355, 0.28768207, 100.0, 100.0], rtol=1e-6)
    np.testing.assert_allclose(losses.bce_eps(q, t).numpy(),
                               [-math.log(0.8 + 1e-6), -math.log(0.75 + 1e-6),
                                -math.log(1e-6), -math.log(1e-6)], rtol=1e-5)
    # the logit form: log(1 + e^-2) for t = 1 at logit 2
    assert losses.bce_logits(tf.constant([2.0]), tf.constant([1.0])).numpy()[0] == \
        pytest.approx(math.log1p(math.exp(-2.0)), rel=1e-6)


def test_clamped_cross_entropy_passes_no_gradient_when_saturated():
    logit = tf.constant([30.0, 0.5])      # sigmoid(30) is 1.0 in float32
    with tf.GradientTape() as tape:
        tape.watch(logit)
        loss = tf.reduce_sum(losses.bce(tf.sigmoid(logit), tf.constant([0.0, 0.0])))
    g = tape.gradient(loss, logit).numpy()
    assert g[0] == 0.0                               # PyTorch: zero gradient at q == 1
    assert g[1] == pytest.approx(1 / (1 + math.exp(-0.5)), rel=1e-5)   # q - t elsewhere


def test_weighted_means_by_hand():
    v, w = tf.constant([[1.0, 2.0, 3.0]]), tf.constant([[2.0, 1.0, 1.0]])
    assert losses.weighted_mean(v, w).numpy()[0] == pytest.approx(7 / 3)
    assert losses.self_normalised(v, w).numpy()[0] == pytest.approx(7 / 4)


def test_torch_adam_two_steps_by_hand():
    p, g, lr, wd = 1.0, 0.5, 0.1, 0.01
    m = v = 0.0
    expect = p
    for t in (1, 2):     # torch.optim.Adam: g += wd p; bias-corrected; eps after the sqrt
        gg = g + wd * expect
        m = 0.9 * m + 0.1 * gg
        v = 0.999 * v + 0.001 * gg * gg
        expect = expect - lr / (1 - 0.9 ** t) * m / (math.sqrt(v) / math.sqrt(1 - 0.999 ** t)
                                                     + 1e-8)
    P, M, V = tf.constant([1.0]), tf.constant([0.0]), tf.constant([0.0])
    for t in (1.0, 2.0):
        P, M, V = torch_adam(P, M, V, tf.constant([g]), tf.constant(t), lr, wd)
    assert P.numpy()[0] == pytest.approx(expect, rel=1e-6)


def test_reference_rule_on_a_scripted_sequence():
    # epochs 2, 4 and 5 are flat (counter 0 -> 1 -> 2 -> 3); epoch 6 is flat with the counter
    rule = ReferenceRule(1, tol=1e-4, stop=2)
    seq = [10.0, 5.0, 5.0, 2.5, 2.5, 2.5, 2.5, 2.5]
    done = [bool(rule.update(np.array([x]))[0]) for x in seq]
    # already 3 > stop 2: it stops there (the 4th non-improving epoch; never reset)
    assert done[:7] == [False] * 6 + [True]


def test_reference_rule_counts_a_loss_increase_and_never_resets():
    rule = ReferenceRule(2, tol=1e-4, stop=0)
    out = [rule.update(np.array(x)) for x in ([4.0, 4.0], [5.0, 3.0], [4.0, 2.0], [4.5, 1.0])]
    # replica 0: rises at epoch 1 (counter 1), improves at 2, rises at 3 with counter 1 > 0
    assert [bool(o[0]) for o in out] == [False, False, False, True]
    assert not any(bool(o[1]) for o in out)


def test_patience_keeps_the_best_epoch():
    rule = Patience(1, patience=2)
    done = [bool(rule.update(np.array([v]), e)[0]) for e, v in enumerate([3.0, 2.0, 2.5, 2.1])]
    assert done == [False, False, False, True]
    assert rule.best_epoch[0] == 1 and rule.best[0] == 2.0


def test_autodiff_of_an_ips_loss_matches_finite_differences():
    rng = np.random.default_rng(0)
    params = {k: tf.constant(v, tf.float64) for k, v in {
        "pred_W": rng.normal(size=(2, 4, 3)), "pred_H": rng.normal(size=(2, 5, 3))}.items()}
    users = tf.constant([[0, 1, 3], [2, 2, 0]])
    items = tf.constant([[4, 0, 1], [3, 1, 1]])
    labels = tf.constant([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], tf.float64)
    w = tf.constant([[2.0, 1.5, 4.0], [1.0, 3.0, 2.5]], tf.float64)

    def loss(p):
        return losses.weighted_mean(losses.bce_eps(bm.mf_prob(p, "pred", users, items), labels), w)

    state = StepState(params, {}, {"pred": Group(("pred_W", "pred_H"))}, {}, {})
    _, grads = state.gradients(("pred_W", "pred_H"), loss)
    h = 1e-6
    for name in ("pred_W", "pred_H"):
        base = params[name].numpy()
        for idx in [(0, 1, 2), (1, 2, 0), (0, 0, 1), (1, 1, 1)]:
            up, down = base.copy(), base.copy()
            up[idx] += h
            down[idx] -= h
            num = (tf.reduce_sum(loss({**params, name: tf.constant(up)}))
                   - tf.reduce_sum(loss({**params, name: tf.constant(down)}))).numpy() / (2 * h)
            assert grads[name].numpy()[idx] == pytest.approx(num, rel=1e-5, abs=1e-8)


def _central_difference(loss, params, name, value, index, h=1e-6):
    """``d sum(loss) / d params[name][index]`` by central differences, ``value`` being that
    parameter as a float64 array."""
    up, down = value.copy(), value.copy()
    up[index] += h
    down[index] -= h
    at = lambda x: tf.reduce_sum(loss({**params, name: tf.constant(x, tf.float64)})).numpy()
    return (at(up) - at(down)) / (2 * h)


def test_the_ncf_propensity_by_hand_and_its_gradient_by_finite_differences():
    """``sigmoid(a . [W_u ; H_i] + b)``, taken as one scalar per user and item then gathered
    (atrec.learners.binary_models.ncf_logit), against the concatenation written out."""
    rng = np.random.default_rng(4)
    raw = {"prop_W": rng.normal(size=(2, 4, 3)), "prop_H": rng.normal(size=(2, 5, 3)),
           "prop_a": rng.normal(size=(2, 6)), "prop_b": rng.normal(size=(2,))}
    users, items = np.array([[0, 3, 3], [1, 2, 0]]), np.array([[4, 0, 4], [1, 1, 3]])
    want = np.stack([[raw["prop_a"][r] @ np.concatenate([raw["prop_W"][r, u], raw["prop_H"][r, i]])
                      + raw["prop_b"][r] for u, i in zip(users[r], items[r])] for r in range(2)])
    params = {k: tf.constant(v, tf.float64) for k, v in raw.items()}
    got = bm.ncf_logit(params, tf.constant(users), tf.constant(items)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)

    def loss(p):
        return tf.reduce_sum(tf.square(bm.ncf_prob(p, tf.constant(users), tf.constant(items))
                                       - 0.3), axis=-1)

    state = StepState(params, {}, {"prop": Group(tuple(raw))}, {}, {})
    _, grads = state.gradients(tuple(raw), loss)
    for name, value in raw.items():
        for index in np.ndindex(value.shape):
            diff = _central_difference(loss, params, name, value, index)
            assert abs(grads[name].numpy()[index] - diff) < 1e-6, (name, index)


def test_the_rows_form_of_the_ncf_logit_by_hand_and_its_gradient_by_finite_differences():
    """``a . [W_u ; H_i] + b`` with the rows gathered (binary_models.ncf_logit_rows, TDR's
    logistic propensity on frozen tables) against the concatenation written out, and the
    gradients of ``a`` and ``b``, the parameters that train, against finite differences."""
    rng = np.random.default_rng(5)
    raw = {"tprop_W": rng.normal(size=(2, 4, 3)), "tprop_H": rng.normal(size=(2, 5, 3)),
           "tprop_a": rng.normal(size=(2, 6)), "tprop_b": rng.normal(size=(2,))}
    users, items = np.array([[0, 3, 3], [1, 2, 0]]), np.array([[4, 0, 4], [1, 1, 3]])
    want = np.stack([[raw["tprop_a"][r] @ np.concatenate([raw["tprop_W"][r, u],
                                                          raw["tprop_H"][r, i]])
                      + raw["tprop_b"][r] for u, i in zip(users[r], items[r])]
                     for r in range(2)])
    params = {k: tf.constant(v, tf.float64) for k, v in raw.items()}
    u, i = tf.constant(users), tf.constant(items)
    got = bm.ncf_logit_rows(params, u, i, "tprop").numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, bm.ncf_logit(params, u, i, "tprop").numpy(), rtol=1e-12)

    def loss(p):
        q = tf.sigmoid(bm.ncf_logit_rows(p, u, i, "tprop"))
        return tf.reduce_mean(tf.square(q - 0.3), axis=-1)

    trained = ("tprop_a", "tprop_b")
    state = StepState(params, {}, {"logit": Group(trained)}, {}, {})
    _, grads = state.gradients(trained, loss)
    for name in trained:
        for index in np.ndindex(raw[name].shape):
            diff = _central_difference(loss, params, name, raw[name], index)
            assert abs(grads[name].numpy()[index] - diff) < 1e-7, (name, index)
