"""DAMF, domain-adversarial matrix factorisation (Saito and Nomura, IJCAI 2022, "Towards
resolving propensity contradiction in offline recommender learning"), as an atrec learner.

Models (docs/methods.md, "DAMF"):

- the predictor ``f(u,i) = theta_u . beta_i + b_u + b_i + b``, MF-IPS's, initialised as
  :func:`atrec.learners.mf.init_params` (same seeds, same draws);
- the adversary ``h(u,i) = G_u . H_i``, no biases, Glorot-uniform tables of the same ``dim``.

Every step has a batch ``O_B`` of observed ratings (weights ``w``: 1 for this method, which uses
no propensity, and for AT's pseudo-labels) and a batch ``U_B`` of as many cells drawn uniformly
with replacement from all users x items (:func:`atrec.learners.base.uniform_cells`, keyed by the
replica's stream, the step and the caller, so stacked and lone seeds draw alike). With

    D(h, f) = mean_{U_B} (h - f)^2 - mean_{O_B} (h - f)^2

the two losses are

    L_f = sum_{O_B} w (r - f)^2 / sum_{O_B} w + pen * D(sg h, f)
          + lam * (l2(Theta) + l2(Beta) + l2(b_user) + l2(b_item))
    L_h = -D(h, sg f) + 0.1 * (l2(G) + l2(H))

(``l2(X) = sum(X^2) / 2`` over the whole table). The adversary looks for the direction in which
f's predictions on uniform cells differ most from those on observed ones; the predictor is
penalised by that discrepancy.

Schedule (:func:`update`): steps alternate in blocks of :data:`BLOCK` (20): predictor steps
``0-19``, adversary steps ``20-39``, predictor ``40-59``, ... of the step counter ``ctx.step`` of
the caller's phase (a stand-alone fit's step; AT restarts it at its pre-training and its
pseudo-labelling phase, so each phase starts with predictor steps). Each step is
:func:`predictor_step` or :func:`adversary_step`, which computes and applies the chosen
sub-model's Adam step only: a zero gradient would not freeze Adam (the moments keep moving the
parameters), so the other sub-model's parameters and moments are not touched at all. A
stand-alone fit takes the two as the learner's ``phases``, a block at a time; AT's loops take
:func:`update`, which chooses between them in every step. Each sub-model's Adam bias
correction counts that sub-model's own updates: the counts ``n_f``, ``n_h`` are carried per
replica in the parameter tuple (so they follow replicas into chunks and through AT's steps
without pseudo-labels, which skip a replica's update) and the loop's own step count ``t`` is
not used. With ``pen = 0`` the predictor's
updates are MF's, so ``f`` equals MF trained on the batches of the predictor steps only, bit for
bit (tested against MF-IPS's own loop).

Parameters, every array leading with the replica axis ``R``:
``(U [R, nu, d], V [R, ni, d], bu [R, nu], bi [R, ni], G [R, nu, d], H [R, ni, d], pen [R],
n_f [R], n_h [R], b [R])``; ``pen`` is a constant of the replica (tuning another ``pen`` reuses
the compiled loop); ``n_f``, ``n_h`` are set by :func:`update`, never by a gradient.
"""

from __future__ import annotations

import functools

import numpy as np

from atrec.learners import mf  # noqa: E402
from atrec.learners.base import (  # noqa: E402
    MF,
    Learner,
    StepContext,
    adam_counted,
    uniform_cells,
)
from atrec.runtime import tf  # noqa: E402

BLOCK = 20                      # steps per block of the alternation
ADVERSARY_L2 = 0.1              # the adversary's L2 weight (fixed in the code), not lam
F_IDX = (0, 1, 2, 3, 9)         # the predictor's U, V, bu, bi, b
H_IDX = (4, 5)                  # the adversary's G, H
PEN, N_F, N_H = 6, 7, 8         # the constant pen and the two update counts
ADVERSARY_SEED_TAG = 0xDA3F     # the adversary's draws: default_rng([seed, tag])


def init_params(num_users: int, num_items: int, dim: int, seeds: list[int],
                pen: float) -> tuple:
    """Initial parameters (module doc): MF's for ``f`` (:func:`atrec.learners.mf.init_params`),
    Glorot-uniform ``G``, ``H`` from ``default_rng([seed, ADVERSARY_SEED_TAG])``, ``pen``, and
    update counts 0."""
    U, V, bu, bi, b = mf.init_params(num_users, num_items, dim, seeds)
    G, H = mf.glorot_pair(num_users, num_items, dim, seeds, ADVERSARY_SEED_TAG)
    R = len(seeds)
    return (U, V, bu, bi, G, H,
            np.full(R, pen, np.float32), np.zeros(R, np.float32), np.zeros(R, np.float32), b)


def mf_part(params: tuple) -> tuple:
    """The predictor's parameters ``(U, V, bu, bi, b)``."""
    return tuple(params[i] for i in F_IDX)


def predict(params: tuple, users, items):
    """The predictor's ratings ``[R, n]`` (:func:`atrec.learners.mf.predict`)."""
    return mf.predict(mf_part(params), users, items)


def adversary_predict(params: tuple, users, items):
    """The adversary's ``h(u,i) = G_u . H_i``, ``[R, n]``."""
    return tf.reduce_sum(tf.gather(params[4], users, batch_dims=1)
                         * tf.gather(params[5], items, batch_dims=1), axis=-1)


def _add_rows(table_grad, rows, g, other):
    """``table_grad`` plus ``g[..., None] * other`` (or ``g`` for a bias table) at ``rows``."""
    rep = tf.broadcast_to(tf.range(tf.shape(rows)[0])[:, None], tf.shape(rows))
    idx = tf.stack([rep, rows], axis=-1)
    return tf.tensor_scatter_nd_add(table_grad, idx, g if other is None else g[..., None] * other)


def _gaps(params, users, items, cu, ci):
    """``h - f`` on ``O_B`` and on ``U_B``, each ``[R, n]``, and ``D(h, f)`` ``[R]``."""
    gap_o = adversary_predict(params, users, items) - predict(params, users, items)
    gap_u = adversary_predict(params, cu, ci) - predict(params, cu, ci)
    disc = tf.reduce_mean(gap_u * gap_u, axis=1) - tf.reduce_mean(gap_o * gap_o, axis=1)
    return gap_o, gap_u, disc


def discrepancy(params: tuple, users, items, cu, ci):
    """``D(h, f)`` per replica ``[R]`` for the observed cells ``users``, ``items`` and the
    uniform cells ``cu``, ``ci`` (all ``[R, n]``)."""
    return _gaps(params, users, items, cu, ci)[2]


def predictor_gradients(params: tuple, users, items, labels, weights, lam, snips, cu, ci):
    """``L_f`` per replica ``[R]`` (module doc) and its gradients w.r.t. ``(U, V, bu, bi, b)``;
    the adversary enters as a constant (``sg h``). ``cu``, ``ci``: the uniform cells ``[R, n]``.

    The data and L2 terms are :func:`atrec.learners.mf.gradients`; ``pen * D`` adds
    ``dL/df = 2 pen (h - f) / |O_B|`` on ``O_B`` and ``2 pen (f - h) / |U_B|`` on ``U_B``
    (exactly 0 when ``pen`` is 0).
    """
    U, V, _, _, b = mf_part(params)
    pen = params[PEN][:, None]
    loss, (gU, gV, gbu, gbi, gb) = mf.gradients(mf_part(params), users, items, labels,
                                                weights, lam, snips)
    gap_o, gap_u, disc = _gaps(tuple(tf.stop_gradient(p) if k in H_IDX else p
                                     for k, p in enumerate(params)), users, items, cu, ci)
    g_o = 2.0 * pen * gap_o / tf.cast(tf.shape(gap_o)[1], gap_o.dtype)      # dL_f / df, O_B
    g_u = -2.0 * pen * gap_u / tf.cast(tf.shape(gap_u)[1], gap_u.dtype)     # dL_f / df, U_B
    for rows_u, rows_i, g in ((users, items, g_o), (cu, ci, g_u)):
        pu = tf.gather(U, rows_u, batch_dims=1)
        qi = tf.gather(V, rows_i, batch_dims=1)
        gU, gV = _add_rows(gU, rows_u, g, qi), _add_rows(gV, rows_i, g, pu)
        gbu, gbi = _add_rows(gbu, rows_u, g, None), _add_rows(gbi, rows_i, g, None)
        gb = gb + tf.reduce_sum(g, axis=1)
    return loss + params[PEN] * disc, (gU, gV, gbu, gbi, gb)


def adversary_gradients(params: tuple, users, items, cu, ci):
    """``L_h`` per replica ``[R]`` (module doc) and its gradients w.r.t. ``(G, H)``; the
    predictor enters as a constant (``sg f``): ``dL_h/dh = -2 (h - f) / |U_B|`` on ``U_B``,
    ``2 (h - f) / |O_B|`` on ``O_B``."""
    G, H = params[4], params[5]
    gap_o, gap_u, disc = _gaps(tuple(p if k in H_IDX else tf.stop_gradient(p)
                                     for k, p in enumerate(params)), users, items, cu, ci)
    g_o = 2.0 * gap_o / tf.cast(tf.shape(gap_o)[1], gap_o.dtype)
    g_u = -2.0 * gap_u / tf.cast(tf.shape(gap_u)[1], gap_u.dtype)
    gG, gH = ADVERSARY_L2 * G, ADVERSARY_L2 * H
    for rows_u, rows_i, g in ((users, items, g_o), (cu, ci, g_u)):
        gG = _add_rows(gG, rows_u, g, tf.gather(H, rows_i, batch_dims=1))
        gH = _add_rows(gH, rows_i, g, tf.gather(G, rows_u, batch_dims=1))
    half_sq = (tf.reduce_sum(G * G, axis=[1, 2]) + tf.reduce_sum(H * H, axis=[1, 2])) / 2.0
    return -disc + ADVERSARY_L2 * half_sq, (gG, gH)


def _cells(ctx: StepContext, users):
    n = users.shape[1] if users.shape[1] is not None else tf.shape(users)[1]
    return uniform_cells(ctx, n)


def gradients(params: tuple, users, items, labels, weights, lam, snips, ctx: StepContext):
    """``L_f + L_h`` per replica and both models' gradients shaped as ``params`` (``pen`` and
    the counts: zeros), with the uniform cells of ``ctx``. Training uses :func:`update`, which
    steps one model at a time; this joint form is for inspection and tests."""
    cu, ci = _cells(ctx, users)
    loss_f, (gU, gV, gbu, gbi, gb) = predictor_gradients(params, users, items, labels, weights,
                                                         lam, snips, cu, ci)
    loss_h, (gG, gH) = adversary_gradients(params, users, items, cu, ci)
    zeros = tuple(tf.zeros_like(params[k]) for k in (PEN, N_F, N_H))
    return loss_f + loss_h, (gU, gV, gbu, gbi, gG, gH, *zeros, gb)


def predictor_turn(step):
    """True at the predictor's steps (``step // BLOCK`` even), as a bool tensor."""
    return tf.equal(tf.math.floormod(tf.math.floordiv(step, BLOCK), 2), 0)


def _step(indices, count, grads, params, m, v, lr):
    """Adam on the parameters at ``indices``, bias-corrected by the count at ``count``, which
    goes up by one (:func:`atrec.learners.base.adam_counted`)."""
    return adam_counted(indices, count, params, m, v, grads, lr)


def predictor_step(params: tuple, m: tuple, v: tuple, t, users, items, labels, weights, lam, lr,
                   snips, ctx: StepContext):
    """A predictor step (an update of the schedule's predictor blocks); ``t`` is unused."""
    cu, ci = _cells(ctx, users)
    _, grads = predictor_gradients(params, users, items, labels, weights, lam, snips, cu, ci)
    return _step(F_IDX, N_F, grads, params, m, v, lr)


def adversary_step(params: tuple, m: tuple, v: tuple, t, users, items, labels, weights, lam, lr,
                   snips, ctx: StepContext):
    """An adversary step (an update of the schedule's adversary blocks); ``t`` is unused."""
    cu, ci = _cells(ctx, users)
    _, grads = adversary_gradients(params, users, items, cu, ci)
    return _step(H_IDX, N_H, grads, params, m, v, lr)


def update(params: tuple, m: tuple, v: tuple, t, users, items, labels, weights, lam, lr, snips,
           ctx: StepContext):
    """One DAMF step (module doc): :func:`predictor_step` or :func:`adversary_step`, chosen by
    ``ctx.step`` under a ``tf.cond``. AT's loops step this way; a stand-alone fit takes the
    same steps a block at a time (``Learner.phases``), which XLA runs without copying the
    tables the branch does not change."""
    args = (params, m, v, t, users, items, labels, weights, lam, lr, snips, ctx)
    return tf.cond(predictor_turn(ctx.step), lambda: predictor_step(*args),
                   lambda: adversary_step(*args))


def factors(params: tuple):
    """The predictor's inner-product form (AT's all-pairs discrepancy)."""
    return MF.factors(mf_part(params))


def scores(params: tuple, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    """What nDCG ranks by: the predictor's ``theta_u . beta_i + b_i``, ``[R, n]``."""
    return MF.scores(mf_part(params), users, items)


def make_learner(pen: float) -> Learner:
    """The DAMF learner with discrepancy weight ``pen``; every DAMF learner shares the
    compiled loops (``pen`` lives in the parameter tuple)."""
    return Learner("damf", predict, gradients, factors,
                   init=functools.partial(init_params, pen=float(pen)), scores=scores,
                   takes_context=True, update=update,
                   phases=(predictor_step, adversary_step), block=BLOCK,
                   bias_slots=(2, 3, F_IDX[-1]))
