"""ijcai-dr (atrec.learners.ijcai_dr): the hand-written gradients are autodiff's of the code's
losses, the predictor's is the IPS gradient over a denominator enlarged by the uniform cells (the
identity that makes it not doubly robust), and the schedule alternates blocks of 20 steps."""

import numpy as np
import pytest
import tensorflow as tf

from atrec.learners import ijcai_dr, mf
from atrec.learners.base import StepContext
from atrec.methods.registry import get_method

LAM = 0.05


def tiny_params(seeds=(4, 5)):
    """Two replicas, 5 users x 4 items, dim 3, biases away from 0 so every term matters."""
    params = ijcai_dr.init_params(5, 4, 3, list(seeds))
    rng = np.random.default_rng(0)
    return tuple(tf.constant(p + rng.normal(0, 0.3, p.shape).astype(np.float32)
                             if k in (2, 3, 8) else p) for k, p in enumerate(params))


def batch():
    # 10 pairs per replica: a predictor step uses the first 7 and counts 3 uniform cells
    rng = np.random.default_rng(1)
    users = tf.constant(rng.integers(0, 5, (2, 10)), tf.int32)
    items = tf.constant(rng.integers(0, 4, (2, 10)), tf.int32)
    labels = tf.constant(rng.integers(1, 6, (2, 10)), tf.float32)
    weights = tf.constant(rng.uniform(1.0, 4.0, (2, 10)), tf.float32)
    return users, items, labels, weights


def test_split_batch_is_the_codes_int_of_07_and_03():
    assert [int(x) for x in ijcai_dr.split_batch(tf.zeros([1, 2048], tf.int32))] == [1433, 614]
    assert [int(x) for x in ijcai_dr.split_batch(tf.zeros([1, 10], tf.int32))] == [7, 3]


def test_predictor_gradient_is_autodiff_of_the_codes_loss():
    """``sum w l / sum w + lam l2(f)`` with ``l = sg(g)^2 + o ((r - f)^2 - sg(g)^2)`` over 7
    observed pairs and 3 cells (``o = 0``, ``w = 1``)."""
    params = tiny_params()
    users, items, labels, weights = batch()
    cu = tf.constant([[0, 3, 2], [4, 1, 1]])
    ci = tf.constant([[1, 1, 0], [2, 3, 0]])
    f_vars = [tf.Variable(params[i]) for i in ijcai_dr.F_IDX]
    with tf.GradientTape() as tape:
        p = list(params)
        for k, i in enumerate(ijcai_dr.F_IDX):
            p[i] = f_vars[k]
        u = tf.concat([users[:, :7], cu], 1)
        i_ = tf.concat([items[:, :7], ci], 1)
        o = tf.concat([tf.ones([2, 7]), tf.zeros([2, 3])], 1)
        w = tf.concat([weights[:, :7], tf.ones([2, 3])], 1)
        r = tf.concat([labels[:, :7], tf.zeros([2, 3])], 1)
        g2 = tf.stop_gradient(ijcai_dr.imputation_predict(tuple(p), u, i_)) ** 2
        f = ijcai_dr.predict(tuple(p), u, i_)
        per_pair = g2 + o * ((r - f) ** 2 - g2)
        U, V, bu, bi, _ = f_vars
        reg = (tf.reduce_sum(U * U, [1, 2]) + tf.reduce_sum(V * V, [1, 2])
               + tf.reduce_sum(bu * bu, 1) + tf.reduce_sum(bi * bi, 1)) / 2
        loss = tf.reduce_sum(tf.reduce_sum(w * per_pair, 1) / tf.reduce_sum(w, 1) + LAM * reg)
    want = tape.gradient(loss, f_vars)
    _, got = ijcai_dr.predictor_gradients(params, users[:, :7], items[:, :7], labels[:, :7],
                                          weights[:, :7], LAM, 1.0, 3)
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(g, w_, rtol=2e-5, atol=2e-6)


def test_predictor_data_gradient_is_ips_scaled_by_s_over_s_plus_cells():
    """Not doubly robust: the imputation model does not enter; the data term is IPS's times
    ``S / (S + cells)`` while the L2 term keeps its full weight."""
    params = tiny_params()
    users, items, labels, weights = batch()
    obs = (users[:, :7], items[:, :7], labels[:, :7], weights[:, :7])
    _, got = ijcai_dr.predictor_gradients(params, *obs, 0.0, 1.0, 3)
    _, ips = mf.gradients(ijcai_dr.mf_part(params), *obs, 0.0, 1.0)
    s = tf.reduce_sum(weights[:, :7], 1)
    scale = (s / (s + 3.0)).numpy()
    for g, w_ in zip(got, ips):
        np.testing.assert_allclose(g, w_ * scale.reshape([-1] + [1] * (len(w_.shape) - 1)),
                                   rtol=1e-5, atol=1e-7)


def test_imputation_gradient_is_autodiff():
    params = tiny_params()
    users, items, labels, weights = batch()
    g_vars = [tf.Variable(params[i]) for i in ijcai_dr.G_IDX]
    with tf.GradientTape() as tape:
        p = list(params)
        p[4], p[5] = g_vars
        resid = labels - tf.stop_gradient(ijcai_dr.predict(tuple(p), users, items))
        err = resid - ijcai_dr.imputation_predict(tuple(p), users, items)
        loss = tf.reduce_sum(tf.reduce_sum(weights * err ** 2, 1) / tf.reduce_sum(weights, 1)
                             + LAM * (tf.reduce_sum(g_vars[0] ** 2, [1, 2])
                                      + tf.reduce_sum(g_vars[1] ** 2, [1, 2])) / 2)
    want = tape.gradient(loss, g_vars)
    _, got = ijcai_dr.imputation_gradients(params, users, items, labels, weights, LAM, 1.0)
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(g, w_, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("step, moved", [(0, "g"), (19, "g"), (20, "f"), (39, "f"), (40, "g")])
def test_update_moves_one_sub_model_per_block_and_counts_its_own_steps(step, moved):
    params = tiny_params()
    zeros = tuple(tf.zeros_like(p) for p in params)
    ctx = StepContext(tf.constant([4, 5], tf.int64), tf.constant(step), 17, 5, 4)
    new, _, _ = ijcai_dr.update(params, zeros, zeros, step + 1, *batch(), LAM, 0.01, 1.0, ctx)
    f_moved = not np.array_equal(new[0], params[0])
    g_moved = not np.array_equal(new[4], params[4])
    assert (f_moved, g_moved) == ((True, False) if moved == "f" else (False, True))
    assert list(new[ijcai_dr.N_F]) == ([1.0, 1.0] if moved == "f" else [0.0, 0.0])
    assert list(new[ijcai_dr.N_G]) == ([1.0, 1.0] if moved == "g" else [0.0, 0.0])


def test_registered_and_zero_bias_capable():
    method = get_method("ijcai-dr")
    assert method.uses_propensity and method.label == "IJCAI-DR"
    assert method.learner({"dim": 3, "lam": 0.1}).bias_slots == (2, 3, 8)
