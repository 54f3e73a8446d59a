"""A learner defined by its loss alone: TensorFlow differentiates it inside the compiled loop.

The learner contract (:class:`atrec.learners.base.Learner`) asks for ``gradients(params, users,
items, labels, weights, lam, snips[, ctx]) -> (loss [R], grads)``. MF-IPS writes its gradients
by hand (:func:`atrec.learners.mf.gradients`), which is fastest but must be derived and checked
for every new model. :func:`loss_learner` is the second way in: write the loss,

    loss(params, users, items, labels, weights, lam, snips[, ctx]) -> [R]

(a replica's loss reads that replica's parameters only; every tensor leads with the replica
axis ``R``), and the learner's ``gradients`` take it through ``tf.GradientTape`` in the same
compiled XLA loop that runs hand-written gradients. Because replicas share no parameter, the
gradient of the summed losses is each replica's own. A parameter the loss does not read (a
per-replica constant in the tuple) gets a zero gradient, so Adam leaves it unchanged, as the
contract asks.

Learners compare by the functions the compiled loops run, so :func:`loss_learner` wraps the
loss in :class:`LossGradients`, which compares equal for the same loss function: two learners
built from one loss (say, one per problem, each with its own ``init``) share one compiled loop.

:func:`mf_ips_loss` is MF-IPS's loss written this way: the test suite checks that its autodiff
gradients equal the hand-written ones and that it trains to MF-IPS's numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from atrec.learners import mf
from atrec.learners.base import Learner
from atrec.runtime import tf


@dataclass(frozen=True)
class LossGradients:
    """``gradients`` of the learner contract from ``loss`` by ``tf.GradientTape``: the loss
    ``[R]`` and the gradient of its sum w.r.t. every array of ``params`` (dense, shaped as
    ``params``; zero where the loss does not read an array)."""

    loss: Callable

    def __call__(self, params: tuple, users, items, labels, weights, lam, snips, *ctx):
        params = tuple(params)
        with tf.GradientTape() as tape:
            for p in params:
                tape.watch(p)
            loss = self.loss(params, users, items, labels, weights, lam, snips, *ctx)
            total = tf.reduce_sum(loss)
        grads = tape.gradient(total, list(params),
                              unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return loss, tuple(tf.convert_to_tensor(g) for g in grads)


def loss_learner(name: str, loss: Callable, predict: Callable, init: Callable,
                 scores: Callable, factors: Callable | None = None,
                 takes_context: bool = False, bias_slots: tuple = ()) -> Learner:
    """A :class:`~atrec.learners.base.Learner` whose gradients are ``loss``'s, by autodiff.

    Parameters
    ----------
    name : str
        The learner's name.
    loss : callable
        ``loss(params, users, items, labels, weights, lam, snips[, ctx]) -> [R]``: the
        training loss of one step (``weights`` = ``1 / P``; ``snips`` 1.0 for the
        self-normalised mean, 0.0 for the plain one; ``ctx`` a
        :class:`~atrec.learners.context.StepContext` when ``takes_context``). Write it in
        TensorFlow ops; it runs inside the compiled loop. Define it at module level (or keep
        one object) so that its learners share their compiled loop.
    predict, init, scores, factors, takes_context, bias_slots
        As :class:`~atrec.learners.base.Learner` names them.

    Returns
    -------
    atrec.learners.base.Learner
        Trained by Adam on the whole parameter tuple, on the schedule of the method that runs
        it (:class:`~atrec.methods.learner_method.LearnerMethod`, AT's roles).
    """
    if not callable(loss):   # a one-line error for a plug-in that passes its loss's value
        raise TypeError(f"learner {name!r}: loss must be a function of (params, users, items, "
                         f"labels, weights, lam, snips), got {type(loss).__name__}")
    return Learner(name, predict, LossGradients(loss), factors, init=init, scores=scores,
                   takes_context=takes_context, bias_slots=bias_slots)


def mf_ips_loss(params: tuple, users, items, labels, weights, lam, snips):
    """MF-IPS's loss (:mod:`atrec.learners.mf`): the IPS mean of the squared errors
    (self-normalised when ``snips`` is 1.0) plus ``lam`` times the L2 term over whole tables."""
    err = mf.predict(params, users, items) - labels
    return mf.weighted_loss(err * err, weights, snips) + mf.l2_penalty(params, lam)
