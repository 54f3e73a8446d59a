"""The learner and method contracts around per-replica constants: a zero gradient leaves a
parameter exactly unchanged under Adam, learners compare by what the compiled loops run, and
every caller that trains hands the method its problem."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from atrec.data.synthetic import SMALL_SIZE, make_synthetic
from atrec.experiments.inputs import stack_inputs
from atrec.learners import mf
from atrec.learners.base import MF, Learner, adam_on
from atrec.methods.base import FitProblem
from atrec.methods.learner_method import LearnerMethod
from atrec.methods.tri_training import fit_with_at
from atrec.run_settings import ATSettings, TrainSettings


def test_zero_gradient_leaves_a_parameter_exactly_unchanged_under_adam():
    p = tf.constant(np.linspace(-2, 3, 7, dtype=np.float32))
    m, v = tf.zeros(7), tf.zeros(7)
    for t in range(1, 4):
        (p2,), (m,), (v,) = mf.adam((p,), (m,), (v,), (tf.zeros(7),), t, 0.01)
        assert np.array_equal(p2.numpy(), p.numpy())


def test_learners_compare_by_what_the_loops_run():
    """A learner rebuilt with another init or scores hits the compiled-loop caches."""
    other = dataclasses.replace(MF, init=lambda *a: None, scores=lambda *a: None)
    assert other == MF and hash(other) == hash(MF)
    assert dataclasses.replace(MF, name="other") != MF


# the settings of both fits below: the update-hook test's plain runs reuse the spy's loops
SETTINGS = TrainSettings(steps=20, batch_size=64)
AT_SETTINGS = ATSettings(pre_steps=5, iterations=2, steps_per_iteration=3, batch_size=64)
PARAMS = {"dim": 5, "lam": 1e-3, "epsilon": 0.3}


def _problem() -> FitProblem:
    data = make_synthetic(**SMALL_SIZE, seed=0).data
    inp = stack_inputs(data, "item", [0, 1])
    full = inp.splits[0].test_full
    return FitProblem(data.num_users, data.num_items, (0, 1), inp.train, inp.val, inp.test,
                      {"user": full.user, "item": full.item, "rating": full.rating},
                      inp.splits)


class _Spy(LearnerMethod):
    """MF-IPS as a LearnerMethod that records the problems its learner was built for."""

    name, label = "spy", "Spy"

    def __init__(self):
        self.seen = []

    def learner(self, params, problem=None):
        self.seen.append(problem)
        return MF


def test_fit_and_at_hand_the_problem_to_the_learner():
    problem = _problem()
    spy = _Spy()
    spy.fit(problem, PARAMS, SETTINGS)
    fit_with_at(spy, problem, PARAMS, AT_SETTINGS)
    assert spy.seen == [problem, problem]


def _adam_step(params, m, v, t, users, items, labels, weights, lam, lr, snips, ctx):
    """``Learner.update`` written out as the default step: MF's gradients, then Adam on all."""
    _, grads = mf.gradients(params, users, items, labels, weights, lam, snips)
    return adam_on(range(len(params)), params, m, v, grads, t, lr)


def _by_hook(learner):
    class Hooked(LearnerMethod):
        name, label = "hooked", "Hooked"

        def learner(self, params, problem=None):
            return learner

    return Hooked()


def test_an_update_hook_that_takes_the_default_step_gives_the_same_run():
    """The stand-alone loop and AT run a learner's own update where it has one; written as the
    default step (gradients, then Adam over the tuple) it reproduces the run without it."""
    problem, params, settings, at_settings = _problem(), PARAMS, SETTINGS, AT_SETTINGS
    plain = MF                  # the spy's learner: its loops are those the spy's fits compiled
    hooked = dataclasses.replace(MF, name="mf-hooked", update=_adam_step)
    a, b = _by_hook(plain).fit(problem, params, settings), _by_hook(hooked).fit(
        problem, params, settings)
    # adam_on runs Adam over flat arrays, as the stand-alone loop does: the same bits
    np.testing.assert_array_equal(a.selection_trace, b.selection_trace)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.best_step, b.best_step)
    a = fit_with_at(_by_hook(plain), problem, params, at_settings)
    b = fit_with_at(_by_hook(hooked), problem, params, at_settings)
    np.testing.assert_allclose(a.traces["val_loss"], b.traces["val_loss"], rtol=1e-6)
    np.testing.assert_array_equal(a.traces["n_pseudo"], b.traces["n_pseudo"])


def test_adam_on_moves_only_the_chosen_parameters():
    params = (tf.ones(3), tf.ones(2), tf.ones(4))
    zeros = tuple(tf.zeros_like(p) for p in params)
    new_p, new_m, _ = adam_on([0, 2], params, zeros, zeros, (tf.ones(3), tf.ones(4)), 1, 0.1)
    assert np.array_equal(new_p[1].numpy(), params[1].numpy())
    assert np.array_equal(new_m[1].numpy(), zeros[1].numpy())
    assert (new_p[0].numpy() < 1).all() and (new_p[2].numpy() < 1).all()


@pytest.mark.parametrize("update, block", [(None, 20), ("step", 0), ("step", None)])
def test_phases_without_update_or_a_block_are_refused(update, block):
    step = lambda *args: args  # noqa: E731
    with pytest.raises(ValueError, match="phases need update"):
        Learner("x", MF.predict, MF.gradients, update=step if update else None,
                phases=(step, step), block=block)
    Learner("x", MF.predict, MF.gradients, update=step, phases=(step, step), block=20)
