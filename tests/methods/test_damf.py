"""DAMF (atrec.methods.damf, atrec.learners.damf): with pen = 0 the predictor is MF on the
batches of its own steps, the hand-written gradients are autodiff's with the stop-gradients
where docs/methods.md puts them, and the schedule moves one model per block of 20 steps."""

import numpy as np
import pytest
import tensorflow as tf

from atrec.errors import AtrecError
from atrec.experiments.inputs import stack_inputs
from atrec.learners import damf, mf
from atrec.learners.base import MF, StepContext, uniform_cells
from atrec.methods.base import FitProblem
from atrec.methods.damf import DAMF
from atrec.names import NO_PROPENSITY
from atrec.run_settings import TrainSettings
from atrec.params.lookup import get_params

SEEDS = (0, 1, 2)


def make_problem(data, seeds=SEEDS) -> FitProblem:
    inp = stack_inputs(data, "uniform", list(seeds))
    full = inp.splits[0].test_full
    return FitProblem(data.num_users, data.num_items, tuple(seeds), inp.train, inp.val,
                      inp.test, {"user": full.user, "item": full.item, "rating": full.rating},
                      inp.splits)


def tiny_params(pen=0.4, seeds=(4, 5)):
    """Two replicas, 5 users x 4 items, dim 3; biases away from ~0 so every term matters."""
    params = damf.init_params(5, 4, 3, list(seeds), pen)
    rng = np.random.default_rng(0)
    return tuple(tf.constant(p + rng.normal(0, 0.3, p.shape).astype(np.float32)
                             if k in (2, 3, 9) else p) for k, p in enumerate(params))


def batch():
    users = tf.constant([[0, 1, 1, 4], [2, 2, 3, 0]])
    items = tf.constant([[0, 3, 3, 2], [1, 0, 2, 2]])
    labels = tf.constant([[4.0, 2.0, 2.0, 5.0], [1.0, 3.0, 4.0, 5.0]])
    return users, items, labels, tf.ones([2, 4])


def ctx(step, streams=(4, 5)):
    return StepContext(tf.constant(streams, tf.int64), tf.constant(step), 17, 5, 4)


# --- pen = 0 is MF ----------------------------------------------------------------------------

def test_zero_pen_predictor_gradient_is_mf_gradient_bit_for_bit():
    params = tiny_params(pen=0.0)
    users, items, labels, weights = batch()
    cu, ci = uniform_cells(ctx(0), 4)
    loss, grads = damf.predictor_gradients(params, users, items, labels, weights, 0.05, 1.0,
                                           cu, ci)
    want_loss, want = mf.gradients(damf.mf_part(params), users, items, labels, weights, 0.05,
                                   1.0)
    for g, w in zip(grads, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-6)  # + 0 * D


@pytest.mark.parametrize("dim", [5, 40])
def test_zero_pen_is_mf_ips_on_the_predictor_steps_batches(small_mnar, dim):
    """Steps 0-19 and 40-59 move f with MF's gradient and its own Adam count; steps 20-39 leave
    it alone. So f after 60 steps is MF-IPS (uniform propensity) trained on the batches of
    those 40 steps, bit for bit: a stand-alone fit takes its steps a block at a time
    (``Learner.phases``), with no choice inside a step, so XLA compiles the predictor's step as
    it compiles MF-IPS's. (Until the block-wise loop, the step ran inside a per-step
    ``tf.cond`` and some elements differed in the last bit.) The validation losses agree to
    rounding only: MF-IPS's loop sums the dot products in another order (``_predict_rows``).
    """
    problem = make_problem(small_mnar)
    settings = TrainSettings(steps=60, batch_size=64)
    ours = DAMF().fit(problem, {"dim": dim, "lam": 1e-3, "pen": 0.0}, settings)
    seeds = list(problem.seeds)
    pos = mf.batch_positions(settings, problem.train["user"].shape[1], seeds)
    turns = np.r_[0:20, 40:60]
    ref = mf.fit(mf.init_params(problem.num_users, problem.num_items, dim, seeds),
                 problem.train, problem.val, problem.test, 1e-3, settings,
                 np.ascontiguousarray(pos[:, turns]))
    full = problem.test_full
    np.testing.assert_array_equal(ours.scores, MF.scores(ref.params, full["user"], full["item"]))
    np.testing.assert_allclose(ours.selection_trace[turns], ref.val_trace, rtol=1e-6)
    # the adversary's steps leave f, so its validation loss, unchanged
    np.testing.assert_array_equal(ours.selection_trace[20:40], ours.selection_trace[[19] * 20])
    np.testing.assert_array_equal(ours.best_step, turns[ref.best_step])
    np.testing.assert_array_equal(ours.mae, ref.mae)
    np.testing.assert_array_equal(ours.mse, ref.mse)


# --- gradients on a tiny case -------------------------------------------------------------------

def formula_losses(params, users, items, labels, cu, ci, lam):
    """L_f and L_h written from docs/methods.md with tf ops (not the module's code)."""
    U, V, bu, bi, G, H, pen, _, _, b = params
    half = lambda x: tf.reduce_sum(x * x, axis=list(range(1, x.shape.rank))) / 2  # noqa: E731

    def f(u, i):
        return (tf.einsum("rnd,rnd->rn", tf.gather(U, u, batch_dims=1),
                          tf.gather(V, i, batch_dims=1))
                + tf.gather(bu, u, batch_dims=1) + tf.gather(bi, i, batch_dims=1) + b[:, None])

    def h(u, i):
        return tf.einsum("rnd,rnd->rn", tf.gather(G, u, batch_dims=1),
                         tf.gather(H, i, batch_dims=1))

    def D(hu, fu, ho, fo):
        return tf.reduce_mean((hu - fu) ** 2, axis=1) - tf.reduce_mean((ho - fo) ** 2, axis=1)

    sg = tf.stop_gradient
    loss_f = (tf.reduce_mean((labels - f(users, items)) ** 2, axis=1)
              + pen * D(sg(h(cu, ci)), f(cu, ci), sg(h(users, items)), f(users, items))
              + lam * (half(U) + half(V) + half(bu) + half(bi)))
    loss_h = (-D(h(cu, ci), sg(f(cu, ci)), h(users, items), sg(f(users, items)))
              + 0.1 * (half(G) + half(H)))
    return loss_f, loss_h


def test_gradients_are_the_formulas_with_their_stop_gradients():
    params = tiny_params()
    users, items, labels, weights = batch()
    cu, ci = uniform_cells(ctx(3), 4)
    lam = 0.05
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(params)
        loss_f, loss_h = formula_losses(params, users, items, labels, cu, ci, lam)
    want_f, want_h = tape.gradient(loss_f, params), tape.gradient(loss_h, params)
    got_loss_f, got_f = damf.predictor_gradients(params, users, items, labels, weights, lam,
                                                 1.0, cu, ci)
    got_loss_h, got_h = damf.adversary_gradients(params, users, items, cu, ci)
    np.testing.assert_allclose(got_loss_f, loss_f, rtol=1e-5)
    np.testing.assert_allclose(got_loss_h, loss_h, rtol=1e-5)
    for k, g in zip(damf.F_IDX, got_f):
        np.testing.assert_allclose(g, want_f[k], rtol=1e-5, atol=1e-6, err_msg=str(k))
    for k, g in zip(damf.H_IDX, got_h):
        np.testing.assert_allclose(g, want_h[k], rtol=1e-5, atol=1e-6, err_msg=str(k))
    # the stop-gradients: f's loss reaches no adversary parameter, h's loss no predictor one
    assert all(want_f[k] is None for k in damf.H_IDX)
    assert all(want_h[k] is None for k in damf.F_IDX)
    # the joint form (cells from ctx) puts each model's gradient in its slots
    loss, joint = damf.gradients(params, users, items, labels, weights, lam, 1.0, ctx(3))
    np.testing.assert_allclose(loss, loss_f + loss_h, rtol=1e-5)
    for k, g in enumerate(joint):
        want = want_f[k] if k in damf.F_IDX else want_h[k] if k in damf.H_IDX else 0 * g
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6, err_msg=str(k))


# --- the schedule -------------------------------------------------------------------------------

def test_blocks_of_twenty_predictor_first_each_model_counting_its_own_updates():
    params = tiny_params()
    m = v = tuple(tf.zeros_like(p) for p in params)
    users, items, labels, weights = batch()
    update = tf.function(damf.update, jit_compile=True, autograph=False)
    start = params
    for step in range(40):
        prev = params
        params, m, v = update(params, m, v, tf.constant(step + 1), users, items, labels,
                              weights, 0.05, 0.01, 1.0, ctx(step))
        for k in damf.F_IDX[:4]:
            assert (not np.array_equal(prev[k], params[k])) == (step < 20), (step, k)
        for k in damf.H_IDX:
            assert (not np.array_equal(prev[k], params[k])) == (step >= 20), (step, k)
        if step == 19:
            rest_m, rest_v = m, v
        if step >= 20:     # Adam's moments of the resting predictor do not move either
            for k in damf.F_IDX:
                np.testing.assert_array_equal(m[k], rest_m[k])
                np.testing.assert_array_equal(v[k], rest_v[k])
    np.testing.assert_array_equal(params[damf.N_F], [20, 20])
    np.testing.assert_array_equal(params[damf.N_H], [20, 20])
    np.testing.assert_array_equal(params[damf.PEN], start[damf.PEN])
    assert [bool(damf.predictor_turn(s)) for s in (0, 19, 20, 39, 40, 59, 60)] == \
        [True, True, False, False, True, True, False]


def test_block_wise_fit_takes_the_per_step_schedules_steps(small_mnar):
    """A stand-alone fit runs ``Learner.phases`` a block at a time; the per-step ``update``
    (AT's) takes the same steps, so the two fits agree to float32 rounding (the per-step
    ``tf.cond`` rounds some elements differently, see above), with a last block cut short
    (50 steps: blocks 0-19, 20-39, 40-49)."""
    import dataclasses

    from atrec.learners.damf import make_learner

    problem = make_problem(small_mnar)
    settings = TrainSettings(steps=50, batch_size=64)
    seeds = list(problem.seeds)
    pos = mf.batch_positions(settings, problem.train["user"].shape[1], seeds)
    blockwise = make_learner(0.3)
    per_step = dataclasses.replace(blockwise, phases=(), block=0)
    fits = [mf.fit(damf.init_params(problem.num_users, problem.num_items, 5, seeds, 0.3),
                   problem.train, problem.val, problem.test, 1e-3, settings, pos, learner=lr,
                   streams=np.asarray(seeds, np.int64),
                   cells=(problem.num_users, problem.num_items))
            for lr in (blockwise, per_step)]
    a, b = fits
    np.testing.assert_allclose(a.val_trace, b.val_trace, rtol=1e-5)
    for pa, pb in zip(a.params, b.params):
        np.testing.assert_allclose(pa, pb, rtol=1e-4, atol=1e-6)
    # 30 predictor steps (0-19, 40-49) and 20 adversary steps, counted apart
    np.testing.assert_array_equal(a.params[damf.N_F], [30] * len(seeds))
    np.testing.assert_array_equal(a.params[damf.N_H], [20] * len(seeds))


def test_published_values_exist_without_at_only():
    params, _ = get_params("published", "coat", NO_PROPENSITY, False, "damf")
    assert (params.dim, params.lam, dict(params.extra)["pen"]) == (30, 1.96e-3, 5.29e-2)
    params, _ = get_params("published", "yahoo", NO_PROPENSITY, False, "damf")
    assert (params.dim, params.lam, dict(params.extra)["pen"]) == (40, 5.54e-5, 3.80e-2)
    with pytest.raises(AtrecError, match="tune --method damf --dataset coat --with-at"):
        get_params("published", "coat", NO_PROPENSITY, True, "damf")
