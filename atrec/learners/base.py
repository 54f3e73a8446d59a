"""The learner contract: a model as pure TensorFlow functions over stacked replicas.

A :class:`Learner` is what the compiled training loops run: MF-IPS's own loop
(:func:`atrec.learners.mf.fit`), AT's three roles (:mod:`atrec.learners.at`) and any method's
learner. Every parameter array has a leading replica axis ``R`` (one replica per seed) and the
last array has shape ``[R]``, so replicas never mix and many seeds train in one compiled call.

Randomness inside a loop is stateless: a learner that needs random draws at a step (uniform
unlabelled cells, as DR and domain-adversarial methods do) sets ``takes_context`` and receives a
:class:`~atrec.learners.context.StepContext` (:mod:`atrec.learners.context`, re-exported
here), whose per-replica stream seeds and step counter key its draws
(:func:`~atrec.learners.context.uniform_cells`). A replica's draws then depend on its own seed
only, never on which replicas share its call, so stacked and lone seeds give the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from atrec.learners import mf  # noqa: E402
from atrec.learners.context import (  # noqa: E402, F401  (re-exported: the plug-in import path)
    SALT_AT,
    SALT_FIT,
    StepContext,
    uniform_cells,
)
from atrec.runtime import tf


@dataclass(frozen=True)
class Learner:
    """A model as pure functions over a parameter tuple whose arrays lead with the replica axis.

    - ``predict(params, users, items)``: ratings ``[R, n]`` for int32 index tensors ``[R, n]``;
    - ``gradients(params, users, items, labels, weights, lam, snips[, ctx])``: ``(loss [R],
      grads)`` with ``grads`` shaped as ``params``. ``weights`` are ``1 / P``; ``snips`` is 1.0
      for the self-normalised mean, 0.0 for the plain one (:func:`atrec.learners.mf.gradients`
      is the reference). ``ctx`` (a :class:`StepContext`) is passed when ``takes_context``;
    - ``scores(params, users, items) -> [R, n]`` (NumPy, needed for nDCG): what a user's items
      are ranked by;
    - ``init(num_users, num_items, dim, seeds) -> tuple`` of float32 NumPy arrays ``[R, ...]``,
      replica ``k`` drawn from ``seeds[k]`` alone (needed to train from scratch);
    - ``update(params, m, v, t, users, items, labels, weights, lam, lr, snips, ctx)``
      (optional): the learner's own step, returning ``(params, m, v)``, for methods whose step
      is a schedule of sub-model updates (an imputation model, then the predictor; an adversary
      every other block). ``m``, ``v`` are Adam's moments shaped as ``params``; ``t`` is the
      1-based step count (``[R]`` inside AT, a scalar in a stand-alone fit); ``ctx`` is always
      given. Without it, a step is ``gradients`` then one Adam step (``atrec.learners.mf.adam``)
      over the whole tuple. :func:`adam_on` updates a chosen part of the tuple;
    - ``phases`` and ``block`` (optional, with ``update``): the same schedule as steps that take
      turns in blocks, phase ``j`` at the steps ``t`` (0-based) with ``(t // block) %
      len(phases) == j``, each phase an ``update``-like step without a choice in it. A
      stand-alone fit then switches phase once per block instead of choosing inside every
      step (a per-step ``tf.cond`` made XLA copy every table each step,
      docs/performance.md, "DAMF"); ``update`` must take the same steps (AT uses it);
    - ``bias_slots`` (optional): positions of the predictor's bias arrays in the tuple (MF:
      ``(2, 3, 4)``), which a protocol that starts biases at zero sets to 0 after ``init``
      (:func:`initial_params`);
    - ``factors(params)`` (optional): ``(user [R, nu, k], item [R, ni, k])`` with
      ``predict(u, i) = user[u] . item[i]``; AT then computes the discrepancy of all pairs by
      one matrix product.

    Learners compare (and hash) by what the compiled loops run: ``name``, ``predict``,
    ``gradients``, ``factors`` and ``takes_context``. ``init`` and ``scores`` run outside them,
    so a learner rebuilt for every problem (its ``init`` closing over that problem's training
    data, :meth:`atrec.methods.base.Method.learner`) reuses the loops compiled for it before.
    A parameter the model does not train (a per-replica constant) gets a zero gradient: Adam
    (:func:`atrec.learners.mf.adam`) then moves it by exactly zero.
    """

    name: str
    predict: Callable
    gradients: Callable
    factors: Callable | None = None
    init: Callable | None = field(default=None, compare=False)
    scores: Callable | None = field(default=None, compare=False)
    takes_context: bool = False
    update: Callable | None = None
    phases: tuple = ()
    block: int = 0
    bias_slots: tuple = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.phases and (self.update is None or not isinstance(self.block, int)
                            or self.block < 1):
            raise ValueError(f"learner {self.name!r}: phases need update (the same schedule, "
                             f"step by step) and a block of at least 1 step, got "
                             f"block={self.block!r}")


def mf_scores(params: tuple, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    """The authors' ranking score ``theta_u . beta_i + b_i`` of MF parameters.

    Parameters
    ----------
    params : tuple
        MF parameters ``(U [R, nu, d], V [R, ni, d], bu [R, nu], bi [R, ni], b [R])``.
    users, items : numpy.ndarray
        int ``(n,)``: the pairs to score.

    Returns
    -------
    numpy.ndarray
        ``[R, n]``, one row per replica.
    """
    U, V, _, bi, _ = params
    return np.stack([(U[k][users] * V[k][items]).sum(axis=1) + bi[k][items]
                     for k in range(len(U))])


def _mf_factors(params: tuple):
    """MF as an inner product: ``[theta_u, b_u + b, 1] . [beta_i, 1, b_i]``."""
    U, V, bu, bi, b = params
    return (tf.concat([U, (bu + b[:, None])[..., None], tf.ones_like(bu)[..., None]], axis=-1),
            tf.concat([V, tf.ones_like(bi)[..., None], bi[..., None]], axis=-1))


MF = Learner("mf", mf.predict, mf.gradients, _mf_factors, init=mf.init_params, scores=mf_scores,
             bias_slots=mf.MF_BIAS_SLOTS)


def initial_params(learner: Learner, num_users: int, num_items: int, dim: int, seeds: list[int],
                   bias_init: str = "normal") -> tuple:
    """``learner.init(...)`` with the biases started as ``bias_init`` says (``"zero"``: the
    arrays at ``learner.bias_slots`` set to 0; ``ValueError`` when the learner names none)."""
    params = learner.init(num_users, num_items, dim, seeds)
    if bias_init == "normal":
        return params
    if not learner.bias_slots:
        raise ValueError(f"learner {learner.name!r} names no bias_slots, so its biases cannot "
                         f"start at zero (bias_init={bias_init!r})")
    return mf.zero_biases(params, learner.bias_slots)


def adam_on(indices, params: tuple, m: tuple, v: tuple, grads: tuple, t, lr) -> tuple:
    """One Adam step of the parameters at ``indices`` only; the others and their moments are
    returned unchanged. For ``Learner.update``.

    The step runs on each array flattened to ``[R, n]`` (a free reshape), as MF-IPS's own loop
    runs it (:func:`atrec.learners.mf._flat`): XLA's CPU code for the element-wise pass then
    vectorises at every ``dim`` and gives the same bits as MF-IPS's Adam. Over ``[R, n, dim]``
    tables it rounds differently in the last bit (measured), so a learner whose extra terms
    vanish would not follow MF's trajectory exactly.

    Parameters
    ----------
    indices : sequence of int
        Positions in ``params`` of the arrays to update.
    params, m, v : tuple
        The parameters and Adam's first and second moments, shaped alike.
    grads : tuple
        The gradients of the arrays at ``indices``, in that order.
    t : tf.Tensor
        The 1-based step count.
    lr : float
        The learning rate.

    Returns
    -------
    tuple
        ``(params, m, v)`` after the step.
    """
    flat = lambda x: tf.reshape(x, [tf.shape(x)[0], -1])  # noqa: E731
    sub = lambda xs: tuple(flat(xs[i]) for i in indices)  # noqa: E731
    new_p, new_m, new_v = mf.adam(sub(params), sub(m), sub(v), tuple(map(flat, grads)), t, lr)
    params, m, v = list(params), list(m), list(v)
    for k, i in enumerate(indices):
        shape = tf.shape(params[i])
        params[i], m[i], v[i] = (tf.reshape(x[k], shape) for x in (new_p, new_m, new_v))
    return tuple(params), tuple(m), tuple(v)


def adam_counted(indices, count: int, params: tuple, m: tuple, v: tuple, grads: tuple,
                 lr) -> tuple:
    """:func:`adam_on` for a sub-model with its own Adam: bias-corrected by the update count
    carried at ``params[count]`` (``[R]``), which goes up by one. For learners whose sub-models
    take turns (an adversary, an imputation model), each counting only its own updates."""
    new_p, new_m, new_v = adam_on(indices, params, m, v, grads, params[count] + 1.0, lr)
    new_p = list(new_p)
    new_p[count] = params[count] + 1.0
    return tuple(new_p), new_m, new_v


def dot_rows(user_table, item_table, users, items):
    """``user_table[u] . item_table[i]`` per replica, ``[R, n]``, for index tensors ``[R, n]``
    (a model without biases: an imputation model, a control model, an adversary)."""
    return tf.reduce_sum(tf.gather(user_table, users, batch_dims=1)
                         * tf.gather(item_table, items, batch_dims=1), axis=-1)


def add_rows(table_grad, rows, g, other):
    """``table_grad`` ``[R, n, ...]`` plus ``g[..., None] * other`` added at ``rows`` ``[R, B]``
    (the gradient of a batch's inner products w.r.t. one table)."""
    rep = tf.broadcast_to(tf.range(tf.shape(rows)[0])[:, None], tf.shape(rows))
    return tf.tensor_scatter_nd_add(table_grad, tf.stack([rep, rows], axis=-1),
                                    g[..., None] * other)
