"""The learner and method contracts around per-replica constants: a zero gradient leaves a
parameter exactly unchanged under Adam, learners compare by what the compiled loops run, and
every caller that trains hands the method its problem."""

import dataclasses

import numpy as np
import tensorflow as tf

from atrec.data.synthetic import SMALL_SIZE, make_synthetic
from atrec.experiments.runner import stack_inputs
from atrec.learners import mf
from atrec.learners.base import MF
from atrec.methods.base import FitProblem
from atrec.methods.learner_method import LearnerMethod
from atrec.methods.tri_training import fit_with_at
from atrec.protocol import ATSettings, TrainSettings


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


class _Spy(LearnerMethod):
    """MF-IPS as a LearnerMethod that records the problems its learner was built for."""

    name, label = "spy", "Spy"

    def __init__(self):
        self.seen = []

    def learner(self, params, problem=None):
        self.seen.append(problem)
        return MF


def test_fit_and_at_hand_the_problem_to_the_learner():
    data = make_synthetic(**SMALL_SIZE, seed=0).data
    inp = stack_inputs(data, "item", [0, 1])
    full = inp.splits[0].test_full
    problem = FitProblem(data.num_users, data.num_items, (0, 1), inp.train, inp.val, inp.test,
                         {"user": full.user, "item": full.item, "rating": full.rating},
                         inp.splits)
    spy = _Spy()
    params = {"dim": 5, "lam": 1e-3, "epsilon": 0.3}
    spy.fit(problem, params, TrainSettings(steps=3, batch_size=64))
    fit_with_at(spy, problem, params,
                ATSettings(pre_steps=2, iterations=1, steps_per_iteration=2, batch_size=64))
    assert spy.seen == [problem, problem]
