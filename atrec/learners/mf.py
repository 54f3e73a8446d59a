"""MF and MF-IPS in TensorFlow 2, trained as the authors did, with many seeds at once.

Model (docs/protocol.md, "MF-IPS"):
``r_hat(u, i) = theta_u . beta_i + b_u + b_i + b`` with Glorot-uniform embeddings,
``b_u, b_i ~ N(0, 0.01^2)`` and ``b = 0.001``. The loss on a mini-batch is the self-normalised
IPS mean ``sum (r - r_hat)^2 / P  /  sum 1 / P`` (``loss="snips"``, the authors' code) or the plain
IPS mean of the paper's Eq. 3, ``sum (r - r_hat)^2 / P  /  |B|`` (``loss="ips"``), plus
``lam * (l2(Theta) + l2(Beta) + l2(b_user) + l2(b_item))`` over the WHOLE tables, where
``l2(x) = sum(x^2) / 2`` as ``tf.nn.l2_loss`` counts it. Adam (TF1 defaults: beta1 0.9,
beta2 0.999, epsilon 1e-8 added to sqrt(v)), learning rate 0.01, batches of 1,024 drawn with
replacement, 500 steps. After every step the validation loss (same weighted mean, with the chosen
propensity, without the L2 term) is computed; the reported test MAE/MSE are those of the step with
the lowest validation loss (first such step on ties, as ``np.argmin``). The authors evaluate the
test set after every step; here the parameters of the best step so far are kept (a copy when the
validation loss improves) and the test set is evaluated once at the end: the same parameters give
the same numbers, at a fraction of the cost (a 51K-rating evaluation against a table copy).

Speed: ``R`` replicas (one per seed) are stacked along a leading axis and trained by one compiled
XLA loop. Replicas share no parameter and Adam is element-wise, so a stacked replica follows
exactly the trajectory it would follow alone. Gradients are written out by hand (checked against
autodiff in the tests): the data term touches only the batch rows (a scatter-add), the L2 term is
dense. ``lam`` enters the compiled loop as a value, so trying a new ``lam`` does not recompile.
The L2 term over the whole tables moves every parameter at every step, so Adam must pass over
the whole tables (no lazy or sparse Adam is exact). Inside the loop the tables, their moments and
the best-step copy are kept flat (``[R, n * dim]``; see :func:`_flat`), the validation ratings
are ordered by user (:func:`atrec.learners.layout.by_user`) and their dot products summed
column by column (:func:`_predict_rows`). A step's time goes mostly to the validation
predictions and to Adam's passes over the user table; the profile behind this layout and the
alternatives tried and dropped are in ``docs/performance.md``, speed per seed in the README and
``benchmarks/bench_mf.py``.

Batch sampler: the authors reset NumPy's global generator to 12345 before every run, so all 20
seeds draw the same batch *positions* (into differently shuffled training arrays).
``batch_seed=12345`` reproduces those positions exactly (``RandomState(12345).randint`` is what
``np.random.choice(np.arange(n), size)`` draws); ``batch_seed=None`` gives each replica its own
stream, seeded by its split seed.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

from atrec.learners.context import SALT_FIT, StepContext  # noqa: E402
from atrec.learners.layout import STACK_BYTES, by_user, default_chunk, map_chunks  # noqa: E402, F401
from atrec.run_settings import AUTHORS_BATCH_SEED, LOSSES, TrainSettings  # noqa: E402, F401
from atrec.runtime import (
    compiled,  # noqa: E402
    tf,
)

# ---------------------------------------------------------------------------------------------
# Parameters: a tuple (U [R, nu, d], V [R, ni, d], bu [R, nu], bi [R, ni], b [R])

def init_params(num_users: int, num_items: int, dim: int, seeds: list[int],
                bias_init: str = "normal") -> tuple:
    """Initial parameters of ``len(seeds)`` replicas, float32 NumPy arrays.

    Replica ``k`` is drawn from ``numpy.random.default_rng(seeds[k])``: Glorot-uniform
    embeddings (limit ``sqrt(6 / (fan_in + fan_out))`` of the ``[n, dim]`` table), biases
    ``N(0, 0.01^2)``, global bias 0.001. ``bias_init="zero"`` (the IJCAI 2022 code) draws the
    same tables and sets every bias to 0 (:func:`zero_biases`).
    """
    lim_u = np.sqrt(6.0 / (num_users + dim))
    lim_i = np.sqrt(6.0 / (num_items + dim))
    out = [[], [], [], [], []]
    for seed in seeds:
        rng = np.random.default_rng(seed)
        out[0].append(rng.uniform(-lim_u, lim_u, (num_users, dim)))
        out[1].append(rng.uniform(-lim_i, lim_i, (num_items, dim)))
        out[2].append(rng.normal(0.0, 0.01, num_users))
        out[3].append(rng.normal(0.0, 0.01, num_items))
        out[4].append(1e-3)
    params = tuple(np.asarray(x, dtype=np.float32) for x in out)
    return zero_biases(params, MF_BIAS_SLOTS) if bias_init == "zero" else params


# positions of the bias arrays in MF's parameter tuple (U, V, bu, bi, b)
MF_BIAS_SLOTS = (2, 3, 4)


def zero_biases(params: tuple, slots: tuple[int, ...]) -> tuple:
    """``params`` with the arrays at ``slots`` (a learner's ``bias_slots``) set to 0."""
    wanted = {i % len(params) for i in slots}
    return tuple(np.zeros_like(p) if i in wanted else p for i, p in enumerate(params))


def glorot_pair(num_users: int, num_items: int, dim: int, seeds: list[int],
                tag: int) -> tuple[np.ndarray, np.ndarray]:
    """A second model's ``[R, num_users, dim]`` and ``[R, num_items, dim]`` tables, float32,
    Glorot-uniform as :func:`init_params` draws its own, replica ``k`` from
    ``numpy.random.default_rng([seeds[k], tag])`` (a stream apart from the predictor's)."""
    lim_u = np.sqrt(6.0 / (num_users + dim))
    lim_i = np.sqrt(6.0 / (num_items + dim))
    users, items = [], []
    for seed in seeds:
        rng = np.random.default_rng([seed, tag])
        users.append(rng.uniform(-lim_u, lim_u, (num_users, dim)))
        items.append(rng.uniform(-lim_i, lim_i, (num_items, dim)))
    return np.asarray(users, np.float32), np.asarray(items, np.float32)


def predict(params: tuple, users, items):
    """Predicted ratings, shape ``[R, n]``, for index tensors ``users``, ``items`` of ``[R, n]``."""
    U, V, bu, bi, b = params
    pu = tf.gather(U, users, batch_dims=1)
    qi = tf.gather(V, items, batch_dims=1)
    return (tf.reduce_sum(pu * qi, axis=-1) + tf.gather(bu, users, batch_dims=1)
            + tf.gather(bi, items, batch_dims=1) + b[:, None])


def _denominator(weights, snips):
    """``sum(weights)`` per replica when ``snips`` is 1.0, the count ``n`` when it is 0.0."""
    n = tf.cast(tf.shape(weights)[1], weights.dtype)
    return snips * tf.reduce_sum(weights, axis=1, keepdims=True) + (1.0 - snips) * n


def weighted_loss(errors_sq, weights, snips):
    """Per-replica weighted mean ``[R]`` of ``errors_sq`` ``[R, n]`` with ``weights`` (1/P).

    ``snips`` = 1.0: self-normalised (divide by the sum of weights); 0.0: divide by ``n``.
    """
    return tf.reduce_sum(errors_sq * weights / _denominator(weights, snips), axis=1)


def l2_penalty(params: tuple, lam):
    """``lam * (l2(U) + l2(V) + l2(bu) + l2(bi))`` per replica, shape ``[R]``."""
    U, V, bu, bi, _ = params
    half_sq = (tf.reduce_sum(U * U, axis=[1, 2]) + tf.reduce_sum(V * V, axis=[1, 2])
               + tf.reduce_sum(bu * bu, axis=1) + tf.reduce_sum(bi * bi, axis=1)) / 2.0
    return lam * half_sq


def gradients(params: tuple, users, items, labels, weights, lam, snips, denom=None):
    """Loss per replica ``[R]`` and its exact gradients w.r.t. ``params`` (dense tensors).

    ``users``, ``items``, ``labels``, ``weights`` are ``[R, B]``; weights are ``1 / P``;
    ``snips`` selects the aggregation as in :func:`weighted_loss`. ``denom`` (``[R, 1]``)
    replaces that aggregation's denominator (a batch whose other pairs add to the denominator
    but not to the gradient, :mod:`atrec.learners.ijcai_dr`).
    """
    U, V, bu, bi, b = params
    R = tf.shape(users)[0]
    pu = tf.gather(U, users, batch_dims=1)
    qi = tf.gather(V, items, batch_dims=1)
    pred = (tf.reduce_sum(pu * qi, axis=-1) + tf.gather(bu, users, batch_dims=1)
            + tf.gather(bi, items, batch_dims=1) + b[:, None])
    err = pred - labels
    denom = _denominator(weights, snips) if denom is None else denom
    data_loss = tf.reduce_sum(weights * err * err / denom, axis=1)
    g = 2.0 * weights * err / denom  # dLoss / dpred, [R, B]
    rep = tf.broadcast_to(tf.range(R)[:, None], tf.shape(users))
    idx_u = tf.stack([rep, users], axis=-1)
    idx_i = tf.stack([rep, items], axis=-1)
    gU = tf.tensor_scatter_nd_add(lam * U, idx_u, g[..., None] * qi)
    gV = tf.tensor_scatter_nd_add(lam * V, idx_i, g[..., None] * pu)
    gbu = tf.tensor_scatter_nd_add(lam * bu, idx_u, g)
    gbi = tf.tensor_scatter_nd_add(lam * bi, idx_i, g)
    gb = tf.reduce_sum(g, axis=1)
    loss = data_loss + l2_penalty(params, lam)
    return loss, (gU, gV, gbu, gbi, gb)


def adam(params: tuple, m: tuple, v: tuple, grads: tuple, t, lr,
         beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8):
    """One Adam step as TF1's ``AdamOptimizer`` computes it; ``t`` is the 1-based step.

    ``t`` is a scalar, or a vector ``[R]`` giving each replica its own step count (AT skips the
    updates of replicas that have no pseudo-labels, so their counts drift apart).
    """
    t = tf.cast(t, tf.float32)
    lr_t = lr * tf.sqrt(1.0 - beta2 ** t) / (1.0 - beta1 ** t)
    new_p, new_m, new_v = [], [], []
    for p, mi, vi, g in zip(params, m, v, grads):
        mi = beta1 * mi + (1.0 - beta1) * g
        vi = beta2 * vi + (1.0 - beta2) * g * g
        lr_p = lr_t if lr_t.shape.rank == 0 else tf.reshape(lr_t, [-1] + [1] * (p.shape.rank - 1))
        new_p.append(p - lr_p * mi / (tf.sqrt(vi) + eps))
        new_m.append(mi)
        new_v.append(vi)
    return tuple(new_p), tuple(new_m), tuple(new_v)


def zeros_like_params(params: tuple) -> tuple:
    return tuple(tf.zeros_like(p) for p in params)


def eval_metrics(params: tuple, users, items, labels, predict_fn=predict):
    """Test MSE and MAE per replica ``[R]`` on a shared test set (``[n]`` tensors).

    ``predict_fn`` (default :func:`predict`) lets another model with a leading replica axis
    (last parameter ``[R]``) be measured the same way.
    """
    R = tf.shape(params[-1])[0]
    n = tf.shape(users)[0]
    pred = predict_fn(params, tf.broadcast_to(users, [R, n]), tf.broadcast_to(items, [R, n]))
    err = pred - labels[None, :]
    return tf.reduce_mean(err * err, axis=1), tf.reduce_mean(tf.abs(err), axis=1)


# ---------------------------------------------------------------------------------------------

@dataclass
class FitResult:
    """What one batched fit returns; arrays have a leading replica axis ``R``."""

    params: tuple            # final parameters (NumPy)
    best_step: np.ndarray    # [R], 0-based step with the lowest validation loss
    best_val_loss: np.ndarray
    mae: np.ndarray          # [R], test MAE at best_step
    mse: np.ndarray
    val_trace: np.ndarray    # [steps, R], validation loss after every step


@compiled.loop_cache
def _fit_loop(dim: int, learner=None, num_users: int = 0, num_items: int = 0):
    """The compiled training loop for embeddings of ``dim`` columns (:func:`_train_loop`).

    One function per dimension: ``reduce_retracing`` relaxes the shapes that vary between
    calls to unknown, and :func:`_predict_rows` needs the number of columns as a number.
    XLA compiles every concrete shape anyway. The loop is written in TF ops (``tf.while_loop``,
    no Python control flow on tensors), so AutoGraph is off (its source conversion cost more
    than a whole warm fit of two seeds at Yahoo's size). ``learner`` (an
    :class:`atrec.learners.base.Learner`): train that model instead of MF-IPS with the same
    schedule, selection and Adam (``num_users`` x ``num_items`` cells); ``None`` is MF-IPS's
    own loop.
    """
    loop = _train_loop if learner is None else functools.partial(
        _train_loop, learner=learner, cells=(num_users, num_items))
    return tf.function(loop, jit_compile=True, reduce_retracing=True, autograph=False)


def _train_loop(params, batch_pos, tr_u, tr_i, tr_r, tr_w, va_u, va_i, va_r, va_w,
                te_u, te_i, te_r, lam, lr, snips, streams=None, learner=None, cells=None):
    """The whole training loop as one XLA while loop. ``batch_pos`` is ``[R, steps, B]``.

    ``learner``, ``streams``, ``cells``: another model, its replicas' stream seeds and the
    number of users and items (:func:`_fit_loop`).
    """
    steps = tf.shape(batch_pos)[1]
    R = tf.shape(tr_u)[0]
    shapes = [tf.shape(p) for p in params]
    unflat = lambda flat: tuple(tf.reshape(p, s) for p, s in zip(flat, shapes))  # noqa: E731
    params = _flat(params)
    m0, v0 = zeros_like_params(params), zeros_like_params(params)
    inf = tf.fill([R], np.float32(np.inf))
    val_ta = tf.TensorArray(tf.float32, size=steps)

    def body(t, params, m, v, best_params, best_val, best_step, val_ta, update=None):
        pos = batch_pos[:, t, :]
        users = tf.gather(tr_u, pos, batch_dims=1)
        items = tf.gather(tr_i, pos, batch_dims=1)
        labels = tf.gather(tr_r, pos, batch_dims=1)
        weights = tf.gather(tr_w, pos, batch_dims=1)
        if learner is None:
            _, grads = gradients(unflat(params), users, items, labels, weights, lam, snips)
            params, m, v = adam(params, m, v, _flat(grads), t + 1, lr)
        elif update is not None or learner.update is not None:  # a schedule of sub-models
            step = (update or learner.update)(unflat(params), unflat(m), unflat(v), t + 1, users,
                                              items, labels, weights, lam, lr, snips,
                                              _context(streams, t, cells))
            params, m, v = (_flat(x) for x in step)
        else:
            extra = (_context(streams, t, cells),) if learner.takes_context else ()
            _, grads = learner.gradients(unflat(params), users, items, labels, weights, lam,
                                         snips, *extra)
            params, m, v = adam(params, m, v, _flat(grads), t + 1, lr)
        pred = (_predict_rows if learner is None else learner.predict)(unflat(params), va_u, va_i)
        err = pred - va_r
        val = weighted_loss(err * err, va_w, snips)
        better = val < best_val
        best_params = snapshot(better, params, best_params)
        best_val = tf.where(better, val, best_val)
        best_step = tf.where(better, t, best_step)
        return t + 1, params, m, v, best_params, best_val, best_step, val_ta.write(t, val)

    start = (tf.constant(0), params, m0, v0, params, inf, tf.zeros([R], tf.int32), val_ta)
    if learner is not None and learner.phases:
        out = tf.while_loop(lambda t, *_: t < steps,
                            functools.partial(_phase_block, body, learner, steps), start)
    else:
        out = tf.while_loop(lambda t, *_: t < steps, body, start)
    _, params, _, _, best_params, best_val, best_step, val_ta = out
    best_mse, best_mae = eval_metrics(unflat(best_params), te_u, te_i, te_r,
                                      predict if learner is None else learner.predict)
    return unflat(params), best_val, best_step, best_mse, best_mae, val_ta.stack()


def _phase_block(body, learner, steps, t, *state):
    """The steps from ``t`` to the end of its block, by the phase whose turn it is
    (``Learner.phases``): one switch per block, the steps inside it without a choice."""
    end = tf.minimum((t // learner.block + 1) * learner.block, steps)

    def run(phase):
        return lambda: tf.while_loop(lambda u, *_: u < end,
                                     functools.partial(body, update=phase), (t, *state))

    turn = tf.math.floormod(t // learner.block, len(learner.phases))
    return tf.switch_case(turn, [run(phase) for phase in learner.phases])


def _context(streams, t, cells: tuple[int, int]):
    """The :class:`atrec.learners.context.StepContext` of step ``t`` of a stand-alone fit."""
    return StepContext(streams, t, SALT_FIT, *cells)


def _predict_rows(params: tuple, users, items):
    """:func:`predict` with the dot products summed column by column in a pairwise tree.

    Same values up to the order of float additions; XLA's CPU code for the row reduction of
    ``tf.reduce_sum`` over gathered rows is about twice as slow (Yahoo-size validation, dim 40).
    """
    U, V, bu, bi, b = params
    prod = tf.gather(U, users, batch_dims=1) * tf.gather(V, items, batch_dims=1)
    cols = [prod[..., j] for j in range(prod.shape[-1])]
    while len(cols) > 1:
        cols = [cols[k] + cols[k + 1] if k + 1 < len(cols) else cols[k]
                for k in range(0, len(cols), 2)]
    return (cols[0] + tf.gather(bu, users, batch_dims=1) + tf.gather(bi, items, batch_dims=1)
            + b[:, None])


def snapshot(better, params: tuple, kept: tuple) -> tuple:
    """``params`` for the replicas where ``better`` ``[R]`` is true, ``kept`` for the others."""
    return tuple(tf.where(tf.reshape(better, [-1] + [1] * (p.shape.rank - 1)), p, k)
                 for p, k in zip(params, kept))


def batch_positions(settings: TrainSettings, n_train: int, split_seeds: list[int]) -> np.ndarray:
    """Mini-batch row positions ``[R, steps, B]`` into each replica's training arrays."""
    shape = (settings.steps, settings.batch_size)
    if settings.batch_seed is not None:
        pos = np.random.RandomState(settings.batch_seed).randint(0, n_train, shape)
        return np.broadcast_to(pos.astype(np.int32), (len(split_seeds),) + shape)
    return np.stack([np.random.RandomState(s).randint(0, n_train, shape).astype(np.int32)
                     for s in split_seeds])


def _flat(tensors: tuple) -> tuple:
    """Each ``[R, ...]`` tensor as ``[R, n]`` (a free reshape).

    The training loop keeps the embedding tables, their Adam moments and the best-step copy
    flat: XLA's CPU code vectorises an element-wise pass over ``[R, n, dim]`` only when
    ``dim`` is large (40 yes, 8 to 30 no: the short inner loop is unrolled and left scalar),
    so at dims 10-30 Adam's square roots and divisions ran several times slower.
    """
    return tuple(tf.reshape(x, [tf.shape(x)[0], -1]) for x in tensors)


def fit(init: tuple, train: dict, val: dict, test: dict, lam: float,
        settings: TrainSettings, batch_pos: np.ndarray, chunk: int | None = None,
        threads: int | None = None, learner=None, streams: np.ndarray | None = None,
        cells: tuple[int, int] | None = None) -> FitResult:
    """Train ``R`` replicas and select each one's step of lowest validation loss.

    ``train`` / ``val`` hold ``user``, ``item``, ``rating``, ``weight`` arrays of shape ``[R, n]``
    (weight = 1 / propensity); ``test`` holds ``user``, ``item``, ``rating`` of shape ``[n]``,
    shared by all replicas. ``init`` comes from :func:`init_params`; ``batch_pos`` from
    :func:`batch_positions`. Replicas are trained ``chunk`` at a time (default
    :func:`default_chunk`) by ``threads`` parallel compiled calls (default: the CPU count, at
    most 2 here). Results do not depend on ``chunk`` or ``threads``: replicas are independent.

    ``learner`` (:class:`atrec.learners.base.Learner`) trains that model on the same schedule
    instead of MF-IPS; ``init`` then comes from its ``init``, ``streams`` ``[R]`` (int64) seed
    its random draws and ``cells`` is ``(num_users, num_items)``.
    """
    R = init[0].shape[0]
    val, test = by_user(val), by_user(test)
    if chunk is None and learner is None:
        chunk = default_chunk(R, init[0].shape[1], init[1].shape[1], init[0].shape[2])
    elif chunk is None:
        per_replica = sum(np.asarray(p[0]).size for p in init) * 4 * 4
        chunk = R if R * per_replica <= STACK_BYTES else 1
    threads = threads or min(2, os.cpu_count() or 1)
    f32, i32 = np.float32, np.int32
    te = (tf.constant(test["user"], i32), tf.constant(test["item"], i32),
          tf.constant(test["rating"], f32))
    consts = (tf.constant(lam, f32), tf.constant(settings.learning_rate, f32),
              tf.constant(1.0 if settings.loss == "snips" else 0.0, f32))

    def run(lo: int, hi: int):
        sl = slice(lo, hi)
        extra = {} if learner is None else {"streams": tf.constant(streams[sl], tf.int64)}
        return _fit_loop(init[0].shape[-1], learner, *(cells or (0, 0)))(
            tuple(tf.constant(p[sl]) for p in init), tf.constant(batch_pos[sl], i32),
            tf.constant(train["user"][sl], i32), tf.constant(train["item"][sl], i32),
            tf.constant(train["rating"][sl], f32), tf.constant(train["weight"][sl], f32),
            tf.constant(val["user"][sl], i32), tf.constant(val["item"][sl], i32),
            tf.constant(val["rating"][sl], f32), tf.constant(val["weight"][sl], f32),
            *te, *consts, **extra)

    outs = map_chunks(run, R, chunk, threads)
    cat = lambda k: np.concatenate([o[k].numpy() for o in outs], axis=0)  # noqa: E731
    cat1 = lambda k: np.concatenate([o[k].numpy() for o in outs], axis=1)  # noqa: E731
    params = tuple(np.concatenate([o[0][j].numpy() for o in outs], axis=0)
                   for j in range(len(init)))
    return FitResult(params, cat(2), cat(1), cat(4), cat(3), cat1(5))
