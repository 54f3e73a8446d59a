"""CausE (atrec.methods.cause, atrec.learners.cause): the penalty-free case is MF-IPS bit for
bit, the hand-written gradients are autodiff's with the stop-gradients where docs/methods.md puts
them, and the control model learns from the MCAR slice only."""

import numpy as np
import pytest
import tensorflow as tf

from atrec.errors import AtrecError
from atrec.experiments.inputs import stack_inputs
from atrec.learners import cause, mf
from atrec.learners.base import MF
from atrec.methods.base import FitProblem
from atrec.methods.cause import CausE
from atrec.methods.mf_ips import MFIPS
from atrec.names import NO_PROPENSITY
from atrec.run_settings import TrainSettings
from atrec.params.lookup import get_params

SEEDS = (0, 1, 2)


def make_problem(data, seeds=SEEDS, propensity="uniform") -> FitProblem:
    inp = stack_inputs(data, propensity, list(seeds))
    full = inp.splits[0].test_full
    return FitProblem(data.num_users, data.num_items, tuple(seeds), inp.train, inp.val,
                      inp.test, {"user": full.user, "item": full.item, "rating": full.rating},
                      inp.splits)


@pytest.mark.parametrize("dim", [5, 40])
def test_zero_penalty_is_mf_ips_with_uniform_propensity_bit_for_bit(small_mnar, dim):
    """cause_pen = 0: the control model trains, but its pull on f is exactly 0, so f follows
    MF-IPS's trajectory (same batches, same Adam) to the last bit."""
    problem = make_problem(small_mnar)
    settings = TrainSettings(steps=60, batch_size=64)
    ours = CausE().fit(problem, {"dim": dim, "lam": 1e-3, "cause_pen": 0.0}, settings)
    theirs = MFIPS().fit(problem, {"dim": dim, "lam": 1e-3}, settings)
    np.testing.assert_array_equal(ours.scores, theirs.scores)    # the final parameters
    for field in ("mae", "mse", "best_step", "best_val_loss"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field), err_msg=field)
    # MF-IPS's own loop sums the validation dot products column by column
    # (mf._predict_rows), a learner's loop by tf.reduce_sum: the same losses up to the order of
    # float additions. The loop with MF as a learner gives CausE's trace exactly.
    np.testing.assert_allclose(ours.selection_trace, theirs.selection_trace, rtol=1e-6)
    seeds = list(problem.seeds)
    as_learner = mf.fit(mf.init_params(problem.num_users, problem.num_items, dim, seeds),
                        problem.train, problem.val, problem.test, 1e-3, settings,
                        mf.batch_positions(settings, problem.train["user"].shape[1], seeds),
                        learner=MF, streams=np.asarray(seeds),
                        cells=(problem.num_users, problem.num_items))
    np.testing.assert_array_equal(ours.selection_trace, as_learner.val_trace)


# --- gradients on a tiny case -------------------------------------------------------------------

def tiny_params(pen=0.3, seeds=(4, 5)):
    """Two replicas, 5 users x 4 items, dim 3, a slice of 3 ratings (the second replica's slice
    has 2, plus one padding entry)."""
    slices = (np.array([[0, 2, 4], [1, 3, 0]]), np.array([[1, 3, 0], [2, 2, 0]]),
              np.array([[5, 2, 4], [1, 3, 0]]), np.array([[1, 1, 1], [1, 1, 0]]))
    params = cause.init_params(5, 4, 3, list(seeds), slices, pen)
    rng = np.random.default_rng(0)   # biases away from ~0, so every term matters
    params = tuple(p + rng.normal(0, 0.3, p.shape).astype(np.float32) if k in (2, 3, 11) else p
                   for k, p in enumerate(params))
    return tuple(tf.constant(p) for p in params)


def batch():
    users = tf.constant([[0, 1, 1, 4], [2, 2, 3, 0]])
    items = tf.constant([[0, 3, 3, 2], [1, 0, 2, 2]])
    labels = tf.constant([[4.0, 2.0, 2.0, 5.0], [1.0, 3.0, 4.0, 5.0]])
    return users, items, labels, tf.ones([2, 4])


def formula_losses(params, users, items, labels, lam):
    """L_f and L_c written from docs/methods.md with tf ops (not the module's code)."""
    U, V, bu, bi, Uc, Vc, su, si, sr, sw, pen, b = params
    half = lambda x: tf.reduce_sum(x * x, axis=list(range(1, x.shape.rank))) / 2  # noqa: E731
    f = (tf.einsum("rnd,rnd->rn", tf.gather(U, users, batch_dims=1),
                   tf.gather(V, items, batch_dims=1))
         + tf.gather(bu, users, batch_dims=1) + tf.gather(bi, items, batch_dims=1) + b[:, None])
    loss_f = (tf.reduce_mean((labels - f) ** 2, axis=1)
              + lam * (half(U) + half(V) + half(bu) + half(bi))
              + pen * (half(U - tf.stop_gradient(Uc)) + half(V - tf.stop_gradient(Vc))))
    su, si = tf.cast(su, tf.int32), tf.cast(si, tf.int32)
    c = tf.einsum("rnd,rnd->rn", tf.gather(Uc, su, batch_dims=1), tf.gather(Vc, si, batch_dims=1))
    loss_c = (tf.reduce_sum(sw * (sr - c) ** 2, axis=1) / tf.reduce_sum(sw, axis=1)
              + lam * (half(Uc) + half(Vc)))
    return loss_f, loss_c


def test_gradients_are_the_formulas_with_their_stop_gradients():
    params = tiny_params()
    users, items, labels, weights = batch()
    lam = 0.05
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(params)
        loss_f, loss_c = formula_losses(params, users, items, labels, lam)
    want_f = tape.gradient(loss_f, params)
    want_c = tape.gradient(loss_c, params)
    got_loss_f, got_f = cause.predictor_gradients(params, users, items, labels, weights, lam, 1.0)
    got_loss_c, got_c = cause.control_gradients(params, lam)
    np.testing.assert_allclose(got_loss_f, loss_f, rtol=1e-5)
    np.testing.assert_allclose(got_loss_c, loss_c, rtol=1e-5)
    for k, g in zip(cause.F_IDX, got_f):
        np.testing.assert_allclose(g, want_f[k], rtol=1e-5, atol=1e-6, err_msg=str(k))
    for k, g in zip(cause.C_IDX, got_c):
        np.testing.assert_allclose(g, want_c[k], rtol=1e-5, atol=1e-6, err_msg=str(k))
    # the stop-gradients: f's loss reaches no control parameter, c's loss no predictor one
    assert all(want_f[k] is None for k in cause.C_IDX)
    assert all(want_c[k] is None for k in cause.F_IDX)
    # the joint form puts each model's own gradient in its slots, zeros for the constants
    loss, joint = cause.gradients(params, users, items, labels, weights, lam, 1.0)
    np.testing.assert_allclose(loss, loss_f + loss_c, rtol=1e-5)
    for k, g in enumerate(joint):
        want = want_f[k] if k in cause.F_IDX else want_c[k] if k in cause.C_IDX else 0 * g
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6, err_msg=str(k))


def _step(params, labels=None, lam=0.05):
    users, items, default, weights = batch()
    zeros = tuple(tf.zeros_like(p) for p in params)
    new, _, _ = cause.update(params, zeros, zeros, 1, users, items,
                             default if labels is None else labels, weights, lam, 0.01, 1.0)
    return [p.numpy() for p in new]


def test_the_control_model_learns_from_the_mcar_slice_only():
    params = tiny_params()
    base = _step(params)
    for k in cause.C_IDX:      # the control tables moved
        assert not np.array_equal(base[k], params[k].numpy())
    for k in range(6, 11):     # the slice and cause_pen are constants
        assert np.array_equal(base[k], params[k].numpy())
    # other MNAR ratings: the same control model, another predictor
    other = _step(params, labels=tf.constant([[1.0, 5.0, 1.0, 1.0], [5.0, 1.0, 1.0, 2.0]]))
    for k in cause.C_IDX:
        np.testing.assert_array_equal(other[k], base[k])
    assert not np.array_equal(other[0], base[0])
    # other MCAR slice ratings: another control model
    changed = list(params)
    changed[8] = tf.constant([[1.0, 5.0, 1.0], [5.0, 1.0, 3.0]])
    moved = _step(tuple(changed))
    for k in cause.C_IDX:
        assert not np.array_equal(moved[k], base[k])


def test_the_slice_comes_from_each_split_padded(small_mnar):
    problem = make_problem(small_mnar, seeds=(0, 7))
    su, si, sr, sw = cause.slice_arrays(problem.splits)
    prior = problem.splits[1].test_prior
    assert su.shape == (2, len(prior.rating)) and sw.all()
    np.testing.assert_array_equal(su[1], prior.user)
    np.testing.assert_array_equal(si[1], prior.item)
    np.testing.assert_array_equal(sr[1], prior.rating)
    with pytest.raises(ValueError, match="problem it trains on"):
        CausE().learner({"dim": 5, "lam": 1e-3, "cause_pen": 0.1}).init(5, 4, 3, [0])


def test_published_values_exist_without_at_only():
    params, label = get_params("published", "coat", NO_PROPENSITY, False, "cause")
    assert (params.dim, params.lam, dict(params.extra)["cause_pen"]) == (40, 5.68e-3, 2.89e-2)
    params, _ = get_params("published", "yahoo", NO_PROPENSITY, False, "cause")
    assert dict(params.extra)["cause_pen"] == 8.95e-8
    with pytest.raises(AtrecError, match="tune --method cause --dataset coat --with-at"):
        get_params("published", "coat", NO_PROPENSITY, True, "cause")
