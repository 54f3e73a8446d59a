"""MF with user-mean imputation (mf-umi) as an atrec learner, written both ways: its loss with
hand-written gradients (:func:`gradients`, :func:`make_learner`), and its loss alone, which
TensorFlow differentiates (:func:`loss`, :func:`make_autodiff_learner`).

Model: MF-IPS's predictor ``f(u,i) = theta_u . beta_i + b_u + b_i + b``. Loss on one step, with
a batch ``O_B`` of observed ratings (weights ``w = 1/P``) and a batch ``U_B`` of ``|O_B|`` cells
drawn uniformly with replacement from all users x items
(:func:`atrec.learners.base.uniform_cells`):

    L = sum_{O_B} w (r - f)^2 / sum_{O_B} w                  (MF-IPS's self-normalised IPS mean)
      + gamma * mean_{U_B} (f(u,i) - m_u)^2                   (user-mean imputation)
      + lam * (l2(Theta) + l2(Beta) + l2(b_user) + l2(b_item))  (whole tables, as MF-IPS)

where ``m_u`` is user ``u``'s mean training rating in the replica's own split, or the split's
global mean when ``u`` has no training rating. The imputation term pulls the predictions of
unobserved pairs towards what the user usually gives, a per-user version of Steck (KDD 2010)'s
imputation of missing ratings.

Parameters, every array leading with the replica axis ``R``:
``(U [R, nu, d], V [R, ni, d], bu [R, nu], bi [R, ni], means [R, nu], gamma [R], b [R])``.
``means`` and ``gamma`` are constants of the replica, not trained: their gradient is zero, so
Adam leaves them exactly unchanged, and the training loops slice them with the replicas they run
(a constant captured by a closure would not follow a replica into its chunk). ``gamma`` sits in
the tuple, not in a closure, so trying another ``gamma`` reuses the compiled loop, as another
``lam`` does. ``b`` stays last, as the contract asks.
"""

from __future__ import annotations

import functools

import numpy as np

from atrec.learners import mf
from atrec.learners.autodiff import loss_learner, mf_ips_loss
from atrec.learners.base import MF, Learner, StepContext, uniform_cells
from atrec.runtime import tf  # TensorFlow through atrec: quiet, and imported on first use


def user_means(users, ratings, num_users: int) -> np.ndarray:
    """Each replica's mean training rating per user, float32 ``[R, num_users]``.

    ``users`` (int) and ``ratings`` are ``[R, n]`` (a problem's ``train`` columns). A user with no
    training rating in a replica gets that replica's global mean rating.
    """
    users = np.asarray(users)
    ratings = np.asarray(ratings, np.float64)
    if users.ndim != 2 or users.shape != ratings.shape:
        raise ValueError(f"users and ratings must both be [R, n], got {users.shape} and "
                         f"{ratings.shape}")
    out = np.empty((users.shape[0], num_users), np.float32)
    for k in range(users.shape[0]):
        sums = np.bincount(users[k], weights=ratings[k], minlength=num_users)
        counts = np.bincount(users[k], minlength=num_users)
        out[k] = np.where(counts > 0, sums / np.maximum(counts, 1), ratings[k].mean())
    return out


def mf_part(params: tuple) -> tuple:
    """The MF parameters ``(U, V, bu, bi, b)`` of an mf-umi parameter tuple."""
    U, V, bu, bi, _, _, b = params
    return U, V, bu, bi, b


def init_params(num_users: int, num_items: int, dim: int, seeds: list[int],
                means: np.ndarray | None, gamma: float) -> tuple:
    """Initial parameters: MF's (:func:`atrec.learners.mf.init_params`, same seeds, same draws)
    with the replicas' user means ``[R, num_users]`` and ``gamma`` inserted before ``b``."""
    if means is None:
        raise ValueError("mf-umi's parameters hold each replica's user means: build its learner "
                         "with the problem it trains on, MFUMI().learner(params, problem)")
    if np.shape(means) != (len(seeds), num_users):
        raise ValueError(f"user means have shape {np.shape(means)}, expected "
                         f"({len(seeds)}, {num_users}): one row per replica")
    U, V, bu, bi, b = mf.init_params(num_users, num_items, dim, seeds)
    return (U, V, bu, bi, np.asarray(means, np.float32),
            np.full(len(seeds), gamma, np.float32), b)


def predict(params: tuple, users, items):
    """Predicted ratings ``[R, n]``: MF's (:func:`atrec.learners.mf.predict`)."""
    return mf.predict(mf_part(params), users, items)


def gradients(params: tuple, users, items, labels, weights, lam, snips, ctx: StepContext):
    """Loss per replica ``[R]`` (module doc) and its exact gradients, shaped as ``params``.

    The IPS and L2 terms are :func:`atrec.learners.mf.gradients`; the imputation term adds its
    gradient on the rows of the ``|O_B|`` uniform cells drawn from ``ctx``. ``means`` and
    ``gamma`` get zero gradients (constants).
    """
    U, V, bu, bi, means, gamma, b = params
    loss, (gU, gV, gbu, gbi, gb) = mf.gradients(mf_part(params), users, items, labels,
                                                weights, lam, snips)
    n = users.shape[1] if users.shape[1] is not None else tf.shape(users)[1]
    cu, ci = uniform_cells(ctx, n)                                         # [R, n] each
    pu = tf.gather(U, cu, batch_dims=1)
    qi = tf.gather(V, ci, batch_dims=1)
    pred = (tf.reduce_sum(pu * qi, axis=-1) + tf.gather(bu, cu, batch_dims=1)
            + tf.gather(bi, ci, batch_dims=1) + b[:, None])
    dev = pred - tf.gather(means, cu, batch_dims=1)
    count = tf.cast(tf.shape(cu)[1], dev.dtype)
    imputation = gamma * tf.reduce_sum(dev * dev, axis=1) / count
    g = 2.0 * gamma[:, None] * dev / count                                # dL / dpred
    rep = tf.broadcast_to(tf.range(tf.shape(cu)[0])[:, None], tf.shape(cu))
    idx_u = tf.stack([rep, cu], axis=-1)
    idx_i = tf.stack([rep, ci], axis=-1)
    gU = tf.tensor_scatter_nd_add(gU, idx_u, g[..., None] * qi)
    gV = tf.tensor_scatter_nd_add(gV, idx_i, g[..., None] * pu)
    gbu = tf.tensor_scatter_nd_add(gbu, idx_u, g)
    gbi = tf.tensor_scatter_nd_add(gbi, idx_i, g)
    gb = gb + tf.reduce_sum(g, axis=1)
    return loss + imputation, (gU, gV, gbu, gbi, tf.zeros_like(means), tf.zeros_like(gamma), gb)


def factors(params: tuple):
    """MF's inner-product form (AT computes all pairs' A1 - A2 by one matrix product)."""
    return MF.factors(mf_part(params))


def scores(params: tuple, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    """What nDCG ranks by: MF's ``theta_u . beta_i + b_i``, ``[R, n]``."""
    return MF.scores(mf_part(params), users, items)


def make_learner(means: np.ndarray | None, gamma: float) -> Learner:
    """The mf-umi learner for replicas with user means ``means`` ``[R, num_users]``.

    Only ``init`` differs between problems and ``gamma``s; learners compare by the functions
    the compiled loops run, so every mf-umi learner shares one compiled loop per shape.
    """
    return Learner("mf-umi", predict, gradients, factors,
                   init=functools.partial(init_params, means=means, gamma=float(gamma)),
                   scores=scores, takes_context=True)


def loss(params: tuple, users, items, labels, weights, lam, snips, ctx: StepContext):
    """The same loss per replica ``[R]`` (module doc), written once for autodiff
    (:func:`atrec.learners.autodiff.loss_learner`): no gradient to derive. ``means`` and
    ``gamma`` are read through ``tf.stop_gradient``, so their gradient is zero and Adam leaves
    them as they are."""
    means, gamma = tf.stop_gradient(params[4]), tf.stop_gradient(params[5])
    n = users.shape[1] if users.shape[1] is not None else tf.shape(users)[1]
    cu, ci = uniform_cells(ctx, n)
    dev = mf.predict(mf_part(params), cu, ci) - tf.gather(means, cu, batch_dims=1)
    return (mf_ips_loss(mf_part(params), users, items, labels, weights, lam, snips)
            + gamma * tf.reduce_mean(dev * dev, axis=1))


def make_autodiff_learner(means: np.ndarray | None, gamma: float) -> Learner:
    """:func:`make_learner` with the gradients of :func:`loss` taken by ``tf.GradientTape``
    inside the compiled loop instead of :func:`gradients`: the way to start a new method, and
    the check of the hand-written gradients (the tests compare the two)."""
    return loss_learner("mf-umi-autodiff", loss, predict,
                        functools.partial(init_params, means=means, gamma=float(gamma)),
                        scores, factors=factors, takes_context=True)
