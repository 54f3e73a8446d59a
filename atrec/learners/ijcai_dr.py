"""``ijcai-dr``: the model the IJCAI 2022 code (``usaito/ijcai2022-adversarial-mf``, class
``MFDR``) trains as "DR", run as that code runs it (docs/protocols.md, "ijcai-dr"). It is NOT a
doubly robust estimator; atrec's DR-JL (:mod:`atrec.learners.dr`) is.

Models: the predictor ``f(u,i) = theta_u . beta_i + b_u + b_i + b`` (MF-IPS's) and an
imputation model ``g(u,i) = Ui_u . Vi_i`` of the residual ``r - f`` (no biases, Glorot-uniform
tables of the same ``dim``, drawn from ``default_rng([seed, IMPUTATION_SEED_TAG])``).

Schedule (:data:`BLOCK` = 20): imputation steps ``0-19``, predictor steps ``20-39``,
imputation ``40-59``, ... (the code's 125 cycles of 20 + 20 in 5,000 loop steps). Each
sub-model has its own Adam, bias-corrected by its own update count (``n_g``, ``n_f``, carried in
the parameter tuple as DAMF's are).

- Imputation step, on the step's ``B`` observed ratings with weights ``w = 1 / P``:
  ``L_g = sum w ((r - sg f) - g)^2 / sum w + lam (l2(Ui) + l2(Vi))``.
- Predictor step: the first ``floor(0.7 B)`` observed ratings of the batch (``o = 1``, their
  ``w``) and ``floor(0.3 B)`` cells drawn uniformly from all users x items
  (:func:`atrec.learners.base.uniform_cells`; ``o = 0``, ``w = 1``; 1,433 and 614 for
  ``B = 2,048``): per pair ``l = sg(g)^2 + o ((r - f)^2 - sg(g)^2)``, loss
  ``sum w l / sum w + lam l2(f)``. On observed pairs the imputed term cancels; on the cells it
  is a constant. So the predictor's gradient is the IPS gradient of the observed pairs over the
  denominator ``S + floor(0.3 B)`` (``S`` their sum of ``w``, changing every batch), while the
  regulariser keeps its full ``lam``: the imputation model never reaches the predictor. Only
  the cells' count matters, so none is drawn.

Kept from the code, on purpose (they change the numbers): the cancelled imputation term, the
uniform cells that only enlarge the denominator, and the self-normalised mean (``--loss ips``
divides by the number of pairs instead, as elsewhere). Differs from the code: the code's NumPy
stream draws the cells between the observed positions, so its later batches differ from the
positions atrec draws (``RandomState(12345)``, one row of ``B`` per loop step; same law, other
draws), and the first imputation block's 20 loop steps
record the validation criterion of the initial predictor (the code evaluates after predictor
steps only; an untrained predictor is never the lowest in practice).

Parameters, every array leading with the replica axis ``R``:
``(U, V, bu, bi, Ui, Vi, n_f, n_g, b)``.
"""

from __future__ import annotations

import functools

import numpy as np

from atrec.learners import mf
from atrec.learners.base import (
    MF,
    Learner,
    StepContext,
    adam_counted,
    add_rows,
    dot_rows,
)
from atrec.runtime import tf

BLOCK = 20                      # steps per block: imputation first, then the predictor
F_IDX = (0, 1, 2, 3, 8)         # the predictor's U, V, bu, bi, b
G_IDX = (4, 5)                  # the imputation model's Ui, Vi
N_F, N_G = 6, 7                 # the two update counts
IMPUTATION_SEED_TAG = 0x1DC4    # the imputation tables' draws: default_rng([seed, tag])


def init_params(num_users: int, num_items: int, dim: int, seeds: list[int]) -> tuple:
    """Initial parameters (module doc): MF's for ``f``, Glorot-uniform ``Ui``, ``Vi``, counts 0."""
    U, V, bu, bi, b = mf.init_params(num_users, num_items, dim, seeds)
    Ui, Vi = mf.glorot_pair(num_users, num_items, dim, seeds, IMPUTATION_SEED_TAG)
    zeros = np.zeros(len(seeds), np.float32)
    return (U, V, bu, bi, Ui, Vi, zeros, zeros.copy(), b)


def mf_part(params: tuple) -> tuple:
    """The predictor's parameters ``(U, V, bu, bi, b)``."""
    return tuple(params[i] for i in F_IDX)


def imputation_predict(params: tuple, users, items):
    """The imputation model's ``g(u,i) = Ui_u . Vi_i``, ``[R, n]``."""
    return dot_rows(params[4], params[5], users, items)


def predict(params: tuple, users, items):
    """The predictor's ratings ``[R, n]``."""
    return mf.predict(mf_part(params), users, items)


def imputation_gradients(params: tuple, users, items, labels, weights, lam, snips):
    """``L_g`` per replica ``[R]`` (module doc) and its gradients w.r.t. ``(Ui, Vi)``."""
    Ui, Vi = params[4], params[5]
    residual = labels - tf.stop_gradient(predict(params, users, items))
    err = residual - imputation_predict(params, users, items)          # [R, B]
    denom = mf._denominator(weights, snips)
    g = -2.0 * weights * err / denom                                    # dL_g / dg
    half_sq = (tf.reduce_sum(Ui * Ui, axis=[1, 2]) + tf.reduce_sum(Vi * Vi, axis=[1, 2])) / 2.0
    loss = tf.reduce_sum(weights * err * err / denom, axis=1) + lam * half_sq
    pu, qi = tf.gather(Ui, users, batch_dims=1), tf.gather(Vi, items, batch_dims=1)
    return loss, (add_rows(lam * Ui, users, g, qi), add_rows(lam * Vi, items, g, pu))


def split_batch(users) -> tuple:
    """``(observed, cells)``: how many of a predictor step's ``B`` pairs are observed ratings
    (``floor(0.7 B)``) and how many uniform cells (``floor(0.3 B)``), as the code's ``int``s."""
    B = tf.shape(users)[1]
    return (7 * B) // 10, (3 * B) // 10


def predictor_gradients(params: tuple, users, items, labels, weights, lam, snips,
                        n_cells):
    """The predictor's loss (module doc) and gradients w.r.t. ``(U, V, bu, bi, b)``, for the
    observed pairs given (their ``[R, n]`` columns) and ``n_cells`` uniform cells of weight 1,
    which add to the self-normalised denominator only (their term is constant in ``f``)."""
    n = tf.cast(tf.shape(weights)[1], weights.dtype)
    cells = tf.cast(n_cells, weights.dtype)
    denom = (snips * (tf.reduce_sum(weights, axis=1, keepdims=True) + cells)
             + (1.0 - snips) * (n + cells))
    return mf.gradients(mf_part(params), users, items, labels, weights, lam, snips, denom)


def imputation_step(params: tuple, m: tuple, v: tuple, t, users, items, labels, weights, lam,
                    lr, snips, ctx: StepContext):
    """An imputation step on the whole batch; ``t`` is unused (own count ``n_g``)."""
    _, grads = imputation_gradients(params, users, items, labels, weights, lam, snips)
    return adam_counted(G_IDX, N_G, params, m, v, grads, lr)


def predictor_step(params: tuple, m: tuple, v: tuple, t, users, items, labels, weights, lam, lr,
                   snips, ctx: StepContext):
    """A predictor step: the batch's first ``floor(0.7 B)`` ratings, and ``floor(0.3 B)``
    uniform cells counted in the denominator (their gradient is zero, so none is drawn)."""
    n_obs, n_cells = split_batch(users)
    _, grads = predictor_gradients(params, users[:, :n_obs], items[:, :n_obs],
                                   labels[:, :n_obs], weights[:, :n_obs], lam, snips, n_cells)
    return adam_counted(F_IDX, N_F, params, m, v, grads, lr)


def imputation_turn(step):
    """True at the imputation model's steps (``step // BLOCK`` even)."""
    return tf.equal(tf.math.floormod(tf.math.floordiv(step, BLOCK), 2), 0)


def update(params: tuple, m: tuple, v: tuple, t, users, items, labels, weights, lam, lr, snips,
           ctx: StepContext):
    """One step of the schedule, chosen by ``ctx.step`` (AT's loops); a stand-alone fit takes
    the same steps a block at a time (``Learner.phases``)."""
    args = (params, m, v, t, users, items, labels, weights, lam, lr, snips, ctx)
    return tf.cond(imputation_turn(ctx.step), lambda: imputation_step(*args),
                   lambda: predictor_step(*args))


def gradients(params: tuple, users, items, labels, weights, lam, snips,
              ctx: StepContext | None = None):
    """Both sub-models' losses and gradients shaped as ``params`` (counts: zeros), at the
    current parameters; for inspection and tests (training uses :func:`update`)."""
    n_obs, n_cells = split_batch(users)
    loss_f, (gU, gV, gbu, gbi, gb) = predictor_gradients(
        params, users[:, :n_obs], items[:, :n_obs], labels[:, :n_obs], weights[:, :n_obs],
        lam, snips, n_cells)
    loss_g, (gUi, gVi) = imputation_gradients(params, users, items, labels, weights, lam, snips)
    zeros = tf.zeros_like(params[N_F])
    return loss_f + loss_g, (gU, gV, gbu, gbi, gUi, gVi, zeros, zeros, gb)


def factors(params: tuple):
    """The predictor's inner-product form (AT's all-pairs discrepancy)."""
    return MF.factors(mf_part(params))


def scores(params: tuple, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    """What the ranking metrics rank by: the predictor's ``theta_u . beta_i + b_i``."""
    return MF.scores(mf_part(params), users, items)


def make_learner() -> Learner:
    """The ``ijcai-dr`` learner."""
    return Learner("ijcai-dr", predict, gradients, factors, init=functools.partial(init_params),
                   scores=scores, update=update,
                   phases=(imputation_step, predictor_step), block=BLOCK,
                   bias_slots=(2, 3, F_IDX[-1]))
