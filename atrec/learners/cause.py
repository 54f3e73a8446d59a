"""CausE (Bonner and Vasile, RecSys 2018, "Causal embeddings for recommendation") as an atrec
learner: a control model trained on MCAR ratings pulls the predictor's embeddings towards it.

Models (docs/methods.md, "CausE"):

- treatment (the predictor, what is evaluated): MF-IPS's ``f(u,i) = theta_u . beta_i + b_u + b_i
  + b``, initialised as :func:`atrec.learners.mf.init_params` (same seeds, same draws);
- control: ``c(u,i) = Uc_u . Vc_i`` (no biases), Glorot-uniform tables of the same ``dim``.

One step (:func:`update`), in this order:

1. one full-batch Adam step of the control model on the 5% MCAR slice ``S`` (the part of the
   MCAR test set that no metric reads):
   ``L_c = mean_S (r - c)^2 + lam * (l2(Uc) + l2(Vc))``;
2. one Adam step of the predictor on the batch ``O_B`` of observed ratings (weights ``w``, 1 for
   this method, which uses no propensity; pseudo-labels inside AT have weights 1 too):
   ``L_f = sum_{O_B} w (r - f)^2 / sum_{O_B} w + lam * l2(f)
           + cause_pen * (l2(Theta - sg Uc) + l2(Beta - sg Vc))``
   with ``l2(f) = l2(Theta) + l2(Beta) + l2(b_user) + l2(b_item)`` (whole tables, as MF-IPS) and
   the control tables after step 1. ``sg``: the predictor's loss moves no control parameter,
   and the control loss moves no predictor parameter.

Both models count the same steps, so Adam's bias correction uses the loop's step count ``t``
for both. With ``cause_pen = 0`` the penalty's gradient is exactly zero and ``f`` follows MF's
trajectory bit for bit (tested against MF-IPS's own loop).

Parameters, every array leading with the replica axis ``R`` (``S`` = the longest slice):
``(U [R, nu, d], V [R, ni, d], bu [R, nu], bi [R, ni], Uc [R, nu, d], Vc [R, ni, d],
s_user [R, S], s_item [R, S], s_rating [R, S], s_mask [R, S], cause_pen [R], b [R])``.
The slice (user and item ids stored as exact float32 integers, ratings, and a 1/0 mask for the
padding of shorter slices) and ``cause_pen`` are constants of the replica, not trained: they get
no Adam update, and the compiled loops slice them with the replicas they run. The slice is
the same for every seed (the MCAR split has a fixed seed), but carrying it in the tuple keeps one
compiled loop per shape for every problem and ``cause_pen`` (learners compare by their functions,
:class:`atrec.learners.base.Learner`), so tuning does not recompile, and no two data sets can
share a closure's constants by mistake.
"""

from __future__ import annotations

import functools

import numpy as np

from atrec.learners import mf  # noqa: E402
from atrec.learners.base import MF, Learner, adam_on  # noqa: E402
from atrec.runtime import tf  # noqa: E402

# positions in the parameter tuple
F_IDX = (0, 1, 2, 3, 11)      # the predictor's U, V, bu, bi, b
C_IDX = (4, 5)                # the control model's Uc, Vc
CONTROL_SEED_TAG = 0xCA05E    # the control tables' draws: default_rng([seed, tag])


def slice_arrays(splits) -> tuple[np.ndarray, ...]:
    """Each split's MCAR slice (``split.test_prior``) as padded float32 arrays ``[R, S]``:
    ``(user, item, rating, mask)``, ``mask`` 1 on the slice's ratings and 0 on the padding."""
    slices = [sp.test_prior for sp in splits]
    if not slices or any(len(s.rating) == 0 for s in slices):
        raise ValueError("CausE's control model trains on each split's MCAR slice "
                         "(split.test_prior): give the problem's splits, each with a non-empty "
                         "slice")
    width = max(len(s.rating) for s in slices)
    out = np.zeros((4, len(slices), width), np.float32)
    for k, s in enumerate(slices):
        n = len(s.rating)
        out[0, k, :n], out[1, k, :n], out[2, k, :n], out[3, k, :n] = s.user, s.item, s.rating, 1
    return tuple(out)


def init_params(num_users: int, num_items: int, dim: int, seeds: list[int],
                slices: tuple | None, cause_pen: float) -> tuple:
    """Initial parameters (module doc): MF's for ``f`` (:func:`atrec.learners.mf.init_params`),
    Glorot-uniform control tables from ``default_rng([seed, CONTROL_SEED_TAG])``, the slices
    ``(user, item, rating, mask)`` ``[R, S]`` of :func:`slice_arrays` and ``cause_pen``."""
    if slices is None:
        raise ValueError("CausE's parameters hold each replica's MCAR slice: build its learner "
                         "with the problem it trains on, CausE().learner(params, problem)")
    if any(np.shape(s)[0] != len(seeds) for s in slices):
        raise ValueError(f"the MCAR slices have {np.shape(slices[0])[0]} rows, expected "
                         f"{len(seeds)}: one per replica")
    U, V, bu, bi, b = mf.init_params(num_users, num_items, dim, seeds)
    Uc, Vc = mf.glorot_pair(num_users, num_items, dim, seeds, CONTROL_SEED_TAG)
    f32 = lambda x: np.asarray(x, np.float32)  # noqa: E731
    return (U, V, bu, bi, Uc, Vc, *(f32(s) for s in slices),
            np.full(len(seeds), cause_pen, np.float32), b)


def mf_part(params: tuple) -> tuple:
    """The predictor's parameters ``(U, V, bu, bi, b)``."""
    return tuple(params[i] for i in F_IDX)


def predict(params: tuple, users, items):
    """The predictor's ratings ``[R, n]`` (:func:`atrec.learners.mf.predict`)."""
    return mf.predict(mf_part(params), users, items)


def control_predict(params: tuple, users, items):
    """The control model's ``c(u,i) = Uc_u . Vc_i``, ``[R, n]``."""
    Uc, Vc = params[4], params[5]
    return tf.reduce_sum(tf.gather(Uc, users, batch_dims=1) * tf.gather(Vc, items, batch_dims=1),
                         axis=-1)


def _scatter(table_grad, rows, g, other):
    """``table_grad`` plus ``g[..., None] * other`` added at rows ``rows`` (``[R, n]``)."""
    rep = tf.broadcast_to(tf.range(tf.shape(rows)[0])[:, None], tf.shape(rows))
    idx = tf.stack([rep, rows], axis=-1)
    return tf.tensor_scatter_nd_add(table_grad, idx, g[..., None] * other)


def control_gradients(params: tuple, lam):
    """``L_c`` per replica ``[R]`` (module doc, step 1) and its gradients ``(dUc, dVc)``.

    ``mean_S`` is over the slice's ratings (``s_mask`` 1); padding adds nothing.
    """
    Uc, Vc, su, si, sr, sw = params[4:10]
    users, items = tf.cast(su, tf.int32), tf.cast(si, tf.int32)
    pu = tf.gather(Uc, users, batch_dims=1)
    qi = tf.gather(Vc, items, batch_dims=1)
    err = tf.reduce_sum(pu * qi, axis=-1) - sr                              # [R, S]
    count = tf.reduce_sum(sw, axis=1, keepdims=True)
    g = 2.0 * sw * err / count                                              # dL_c / dc
    half_sq = (tf.reduce_sum(Uc * Uc, axis=[1, 2]) + tf.reduce_sum(Vc * Vc, axis=[1, 2])) / 2.0
    loss = tf.reduce_sum(sw * err * err / count, axis=1) + lam * half_sq
    return loss, (_scatter(lam * Uc, users, g, qi), _scatter(lam * Vc, items, g, pu))


def predictor_gradients(params: tuple, users, items, labels, weights, lam, snips):
    """``L_f`` per replica ``[R]`` (module doc, step 2) and its gradients w.r.t. ``(U, V, bu,
    bi, b)``; the control tables enter as constants (``sg``).

    The data and L2 terms are :func:`atrec.learners.mf.gradients`; the penalty adds
    ``cause_pen * (Theta - Uc)`` and ``cause_pen * (Beta - Vc)`` (exactly 0 when
    ``cause_pen`` is 0).
    """
    U, V, _, _, Uc, Vc = params[:6]
    pen = params[10][:, None, None]
    loss, (gU, gV, gbu, gbi, gb) = mf.gradients(mf_part(params), users, items, labels,
                                                weights, lam, snips)
    dU, dV = U - tf.stop_gradient(Uc), V - tf.stop_gradient(Vc)
    penalty = params[10] * (tf.reduce_sum(dU * dU, axis=[1, 2])
                            + tf.reduce_sum(dV * dV, axis=[1, 2])) / 2.0
    return loss + penalty, (gU + pen * dU, gV + pen * dV, gbu, gbi, gb)


def gradients(params: tuple, users, items, labels, weights, lam, snips):
    """``L_f + L_c`` per replica and its gradients shaped as ``params`` (constants: zeros), at
    the current parameters. Training uses :func:`update`, whose predictor step sees the control
    tables after their own step; this joint form is for inspection and tests."""
    loss_f, (gU, gV, gbu, gbi, gb) = predictor_gradients(params, users, items, labels, weights,
                                                         lam, snips)
    loss_c, (gUc, gVc) = control_gradients(params, lam)
    zeros = tuple(tf.zeros_like(p) for p in params[6:11])
    return loss_f + loss_c, (gU, gV, gbu, gbi, gUc, gVc, *zeros, gb)


def update(params: tuple, m: tuple, v: tuple, t, users, items, labels, weights, lam, lr, snips,
           ctx=None):
    """One CausE step (module doc): the control model on the slice, then the predictor on the
    batch. ``t``: the 1-based step count (scalar, or ``[R]`` inside AT), both models' own."""
    _, grads = control_gradients(params, lam)
    params, m, v = adam_on(C_IDX, params, m, v, grads, t, lr)
    _, grads = predictor_gradients(params, users, items, labels, weights, lam, snips)
    return adam_on(F_IDX, params, m, v, grads, t, lr)


def factors(params: tuple):
    """The predictor's inner-product form (AT's all-pairs discrepancy)."""
    return MF.factors(mf_part(params))


def scores(params: tuple, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    """What nDCG ranks by: the predictor's ``theta_u . beta_i + b_i``, ``[R, n]``."""
    return MF.scores(mf_part(params), users, items)


def make_learner(slices: tuple | None, cause_pen: float) -> Learner:
    """The CausE learner for replicas whose MCAR slices are ``slices`` (:func:`slice_arrays`);
    ``None`` gives a learner for inspection whose ``init`` raises ``ValueError``."""
    return Learner("cause", predict, gradients, factors,
                   init=functools.partial(init_params, slices=slices, cause_pen=float(cause_pen)),
                   scores=scores, update=update, bias_slots=(2, 3, F_IDX[-1]))
