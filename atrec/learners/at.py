"""Asymmetric tri-training (AT, Saito SIGIR 2020, Algorithm 1) as the authors ran it, many seeds at once.

Three base learners (docs/protocol.md, "Asymmetric tri-training"): A1 and A2 are MF-IPS with the
chosen propensity and different initialisations, A3 is MF with propensity 1. All three share
``dim`` and ``lam``; each has its own Adam state and its own Adam step count.

1. Pre-training, ``pre_steps`` (150) steps. Each step updates A3 on a batch of training ratings with
   weights 1, then A1 and A2 each on its own batch with weights ``1 / P``. With the fixed batch seed
   (12345, the default) the batch positions are those of the authors' run: per step, three draws
   ``randint(0, n_train, 1024)`` from one ``RandomState(12345)``, in the order A3, A1, A2
   (:func:`pretrain_positions`).
2. Pseudo-labelling, ``iterations x steps_per_iteration`` (10 x 10) steps, the candidates re-drawn
   at every step as in the authors' code (``resample="step"``). The paper's Algorithm 1 draws the
   pool once per iteration, labelled by A1 at that moment (``resample="iteration"``: every step
   then draws its batches from that pool; the update order stays the authors').
   Each step draws ``candidate_factor * n_train`` candidate pairs, keeps those where
   ``|A1 - A2| <= epsilon`` with A1's prediction (a float) as the pseudo-rating, and draws three
   batches of ``batch_size`` from the survivors: A3 is updated on the first (weights 1), then A3's
   validation loss (weights ``1 / P``, the MF-IPS validation loss) and test MAE/MSE are recorded,
   then A1 and A2 are updated on the second and third (weights 1). The L2 term over whole tables
   applies in every update. A step without survivors updates nothing (the authors' code would
   crash there): its trace shows ``n_pseudo = 0`` and ``pseudo_loss = NaN``.
3. A3's test MAE/MSE are reported at the pseudo-labelling step with the lowest validation loss
   (first such step on ties); nDCG@3 is the caller's, from A3's final parameters.

Sampling without the list of all pairs (:mod:`atrec.learners.pseudolabels`). The authors build all
``num_users * num_items`` pairs (15.4 M on Yahoo) and choose candidates from that list. Here the
set of agreeing pairs (``|A1 - A2| <= epsilon``) is computed exactly over all pairs, the survivor
count is drawn from its binomial law and the batch elements from the agreeing pairs, so that the
survivor count and the three batches, with their duplicates within and across batches, have the
authors' joint law; the argument is in that module. The trace's mean ``|A1 - A2|`` is over all
pairs (theirs: over the candidates, an unbiased estimate of it).

Randomness inside the compiled loop is stateless (:mod:`atrec.learners.rng`): pseudo-labelling step
``t`` derives three keys from the stateless seeds ``[stream_seed, 3t + j]`` (``j`` = 0 survivor
count, 1 batch slots, 2 slot contents), where a replica's ``stream_seed`` is
``settings.batch_seed`` when it is set (every seed then sees the same draws, like the authors'
sampler reset to 12345) and the replica's split seed otherwise. Same seeds, same numbers on
CPU; the chunking of replicas over compiled calls changes nothing.

Learners are parameters (:class:`Learner`): any model given as pure functions ``predict`` and
``gradients`` over a parameter tuple whose arrays have a leading replica axis can take any of the
three roles (the paper's point is that AT is model-agnostic). MF (:data:`MF`) is the default for all
three. A learner that can write its prediction as an inner product plus a constant
(``factors``) lets the discrepancy of all pairs be computed by one matrix product.

Traces (Figures 3 and 4), each ``[n_pl_steps, R]``: ``pseudo_loss`` (A3's unweighted MSE on its
pseudo-labelled batch, before its update), ``discrepancy`` (mean ``|A1 - A2|`` over all pairs when the
step's pool is drawn), ``n_pseudo`` (survivors ``k``), ``val_loss``, ``test_mse``,
``test_mae`` (A3 after its update).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from atrec.learners import layout, mf, pseudolabels
from atrec.learners.base import MF, SALT_AT, Learner, StepContext  # noqa: F401  (MF: the default)
from atrec.learners.base import initial_params as start
from atrec.names import TRACE_NAMES
from atrec.run_settings import ATSettings  # noqa: F401  (the settings live in atrec.run_settings)
from atrec.runtime import compiled, tf

ROLES = ("A1", "A2", "A3")


def at_init_seeds(seed: int) -> tuple[int, int, int]:
    """Initialisation seeds of A1, A2, A3 for model seed ``seed``: ``3s, 3s + 1, 3s + 2``.

    Distinct for every (seed, role), so the three draws are independent streams of
    ``numpy.random.default_rng``.
    """
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return 3 * seed, 3 * seed + 1, 3 * seed + 2


def initial_params(num_users: int, num_items: int, dim: int, seeds: list[int],
                   learners: tuple[Learner, Learner, Learner] = (MF, MF, MF),
                   bias_init: str = "normal") -> tuple:
    """``(A1, A2, A3)`` parameters for model seeds ``seeds``, each from its learner's ``init``
    (MF: :func:`mf.init_params`) with the seeds of :func:`at_init_seeds`, biases started as
    ``bias_init`` says (:func:`atrec.learners.base.initial_params`); every array has a
    leading axis ``len(seeds)``."""
    per_role = list(zip(*(at_init_seeds(s) for s in seeds)))
    return tuple(start(learner, num_users, num_items, dim, list(role), bias_init)
                 for learner, role in zip(learners, per_role))


def pretrain_positions(settings: ATSettings, n_train: int, split_seeds: list[int]) -> np.ndarray:
    """Pre-training batch positions ``[R, pre_steps, 3, batch_size]``; axis 2 is A3, A1, A2.

    The authors' order: per step, ``randint(0, n_train, batch_size)`` for A3, then A1, then A2,
    from one ``RandomState(batch_seed)`` (or the replica's split seed when ``batch_seed`` is
    None). ``RandomState`` draws sequentially, so these are the first ``3 * pre_steps`` batches
    of :func:`atrec.learners.mf.batch_positions`, regrouped.
    """
    pos = mf.batch_positions(settings.pretrain_settings(), n_train, split_seeds)
    return pos.reshape(len(split_seeds), settings.pre_steps, 3, settings.batch_size)


def stream_seeds(settings: ATSettings, split_seeds: list[int]) -> np.ndarray:
    """Per-replica seeds ``[R]`` of the stateless candidate draws (module doc)."""
    if settings.batch_seed is not None:
        return np.full(len(split_seeds), settings.batch_seed, np.int64)
    return np.asarray(split_seeds, np.int64)


# ---------------------------------------------------------------------------------------------
# Pseudo-label sampling (the law and its argument: atrec.learners.pseudolabels)

def draw_pseudo_batches(l1: Learner, p1: tuple, l2: Learner, p2: tuple, seeds, step,
                        epsilon, n_candidates: int, n_batches: int, batch_size: int,
                        num_users: int, num_items: int):
    """One pseudo-labelling draw for every replica: a fresh pool of the current A1 and A2
    (:func:`atrec.learners.pseudolabels.draw_pool`), then ``n_batches`` batches from it labelled by A1.

    Returns ``users``, ``items``, ``labels`` ``[R, n_batches, batch_size]``, ``n_pseudo`` ``[R]``
    (survivors ``k``) and ``discrepancy`` ``[R]`` (mean ``|A1 - A2|`` over all pairs).
    """
    pool = pseudolabels.draw_pool(l1, p1, l2, p2, seeds, step, epsilon, n_candidates,
                                  num_users, num_items)
    users, items, labels, k = pseudolabels.draw_batches(pool, l1, p1, seeds, step, n_batches,
                                                        batch_size)
    return users, items, labels, k, pool.mean_abs


# ---------------------------------------------------------------------------------------------
# Training

def _update(learner: Learner, state: tuple, users, items, labels, weights, lam, lr, snips,
            active=None, ctx: StepContext | None = None):
    """One Adam update of ``state = (params, m, v, t)``; replicas with ``active`` False keep
    their state (``active`` [R] bool, None = all). ``t`` [R] counts each replica's updates.
    ``ctx`` goes to a learner that ``takes_context``. ``weights`` None: all 1, a constant made
    inside the update, which TensorFlow names the same in every trace, so that the compilation
    cache finds the loop again (:mod:`atrec.runtime.compilecache`); a constant from outside the
    update's loop (:func:`_in_place_if`) is copied in under a name numbered by a counter of
    TensorFlow's own."""

    def adam(state):
        params, m, v, t = state
        weights_ = tf.ones(labels.shape, tf.float32) if weights is None else weights
        if learner.update is not None:
            new = learner.update(params, m, v, t + 1, users, items, labels, weights_, lam, lr,
                                 snips, ctx)
        else:
            extra = (ctx,) if learner.takes_context else ()
            _, grads = learner.gradients(params, users, items, labels, weights_, lam, snips,
                                         *extra)
            new = mf.adam(params, m, v, grads, t + 1, lr)
        return (*new, t + 1)

    if active is None:
        return adam(state)

    def masked(state):
        params, m, v, t = state
        new_p, new_m, new_v, _ = adam(state)

        def pick(new, old):
            mask = tf.reshape(active, [-1] + [1] * (old.shape.rank - 1))
            return tf.where(mask, new, old)
        return (tuple(map(pick, new_p, params)), tuple(map(pick, new_m, m)),
                tuple(map(pick, new_v, v)), t + tf.cast(active, t.dtype))

    every = tf.reduce_all(active)
    state = _in_place_if(every, adam, state)
    if active.shape[0] == 1:
        # one replica (a tuning trial; every AT group above Coat's dim 5): not all active is
        # none active, which keeps the state as it is, so the loop needs one copy of the update,
        # not two (13-15% less memory per loop held, docs/performance.md)
        return state
    # the masked update in a loop of its own: with the selects outside any loop, XLA would run
    # them over whole tables at every step
    return _in_place_if(tf.logical_not(every), masked, state)


def _in_place_if(pred, body, state: tuple) -> tuple:
    """``body(state)`` where the scalar ``pred`` holds, else ``state``, as a loop of 0 or 1
    trips. The same arithmetic as a ``tf.cond``, but XLA updates a loop's state in place, where
    for a conditional it copied every table and Adam moment of each learner into the loop's state
    at every pseudo-labelling step (about 8% of a Yahoo-size AT seed, docs/performance.md)."""
    trips = tf.cast(pred, tf.int32)
    return tf.while_loop(lambda i, _: i < trips, lambda i, s: (i + 1, body(s)),
                         (tf.constant(0), state))[1]


def _fresh_state(params: tuple) -> tuple:
    R = params[-1].shape[0]
    return params, mf.zeros_like_params(params), mf.zeros_like_params(params), tf.zeros([R], tf.int32)


@compiled.loop_cache
def _compiled(learners: tuple[Learner, Learner, Learner], candidate_factor: int,
              pl_steps: int, resample_every: int, num_users: int, num_items: int):
    """The compiled AT loop for one choice of learners and static sizes."""
    l1, l2, l3 = learners

    # plain TF control flow throughout, so no AutoGraph conversion (see mf._fit_loop)
    @tf.function(jit_compile=True, autograph=False)
    def loop(p1, p2, p3, pre_pos, seeds, tr_u, tr_i, tr_r, tr_w, va_u, va_i, va_r, va_w,
             te_u, te_i, te_r, lam, lr, snips, epsilon):
        n_train = tr_u.shape[1]
        B = pre_pos.shape[3]

        def ctx(t, role, phase):
            # the draws of a learner that takes a context: keyed by replica stream, step, role
            return StepContext(seeds, t, SALT_AT[role] + SALT_AT[phase], num_users, num_items)

        def pre_body(t, s1, s2, s3):
            def batch(role):
                pos = pre_pos[:, t, role, :]
                return [tf.gather(x, pos, batch_dims=1) for x in (tr_u, tr_i, tr_r, tr_w)]

            u, i, r, _ = batch(0)
            s3 = _update(l3, s3, u, i, r, None, lam, lr, snips)
            u, i, r, w = batch(1)
            s1 = _update(l1, s1, u, i, r, w, lam, lr, snips, ctx=ctx(t, "A1", "pre"))
            u, i, r, w = batch(2)
            s2 = _update(l2, s2, u, i, r, w, lam, lr, snips, ctx=ctx(t, "A2", "pre"))
            return t + 1, s1, s2, s3

        _, s1, s2, s3 = tf.while_loop(
            lambda t, *_: t < pre_pos.shape[1], pre_body,
            (tf.constant(0), _fresh_state(p1), _fresh_state(p2), _fresh_state(p3)))

        def fresh_pool(t, p1, p2):
            pool = pseudolabels.draw_pool(l1, p1, l2, p2, seeds, t, epsilon,
                                          candidate_factor * n_train, num_users, num_items)
            return pool, p1                      # A1's parameters label this pool

        # the paper's Algorithm 1 keeps a pool for a whole iteration, so it is carried in the
        # loop state, the first one drawn here for step 0; the authors' per-step pools are not
        kept = () if resample_every == 1 else fresh_pool(0, s1[0], s2[0])

        def pl_body(t, s1, s2, s3, kept, ta):
            if resample_every == 1:
                pool, labeller = fresh_pool(t, s1[0], s2[0])
            else:
                kept = tf.cond((t > 0) & (t % resample_every == 0),
                               lambda: fresh_pool(t, s1[0], s2[0]), lambda: kept)
                pool, labeller = kept
            disc = pool.mean_abs
            u, i, y, k = pseudolabels.draw_batches(pool, l1, labeller, seeds, t, 3, B)
            has = k > 0
            err = l3.predict(s3[0], u[:, 0], i[:, 0]) - y[:, 0]
            pseudo_loss = tf.where(has, tf.reduce_mean(err * err, axis=1), np.float32(np.nan))
            s3 = _update(l3, s3, u[:, 0], i[:, 0], y[:, 0], None, lam, lr, snips, has)
            va_err = l3.predict(s3[0], va_u, va_i) - va_r
            val = mf.weighted_loss(va_err * va_err, va_w, snips)
            mse, mae = mf.eval_metrics(s3[0], te_u, te_i, te_r, l3.predict)
            s1 = _update(l1, s1, u[:, 1], i[:, 1], y[:, 1], None, lam, lr, snips, has,
                         ctx(t, "A1", "pl"))
            s2 = _update(l2, s2, u[:, 2], i[:, 2], y[:, 2], None, lam, lr, snips, has,
                         ctx(t, "A2", "pl"))
            row = tf.stack([pseudo_loss, disc, tf.cast(k, tf.float32), val, mse, mae])
            return t + 1, s1, s2, s3, kept, ta.write(t, row)

        out = tf.while_loop(
            lambda t, *_: t < pl_steps, pl_body,
            (tf.constant(0), s1, s2, s3, kept, tf.TensorArray(tf.float32, size=pl_steps)))
        _, s1, s2, s3, _, ta = out
        return s1[0], s2[0], s3[0], ta.stack()                         # trace [steps, 6, R]

    return loop


@dataclass
class ATFitResult:
    """What one batched AT fit returns; arrays have a replica axis ``R``.

    ``params``: A3's final parameters (NumPy, as :func:`atrec.learners.mf.init_params` shapes them);
    ``all_params``: the final ``(A1, A2, A3)``; ``best_step`` ``[R]``: 0-based pseudo-labelling
    step of lowest validation loss; ``mae`` / ``mse`` ``[R]``: A3's test metrics there;
    ``trace``: name -> ``[n_pl_steps, R]`` (:data:`TRACE_NAMES`; ``n_pseudo`` is int64).
    """

    params: tuple
    best_step: np.ndarray
    best_val_loss: np.ndarray
    mae: np.ndarray
    mse: np.ndarray
    trace: dict
    all_params: tuple = ()


def default_chunk(replicas: int, num_users: int, num_items: int, dim: int) -> int:
    """Replicas per compiled call: :func:`atrec.learners.mf.default_chunk` for three learners' tables."""
    return max(1, mf.default_chunk(3 * replicas, num_users, num_items, dim) // 3)


def _check_inputs(inits, train, val, test, lam, epsilon, seeds, num_users, num_items) -> None:
    if len(inits) != 3:
        raise ValueError(f"inits must hold the parameters of A1, A2, A3, got {len(inits)}")
    R = len(seeds)
    for role, init in zip(ROLES, inits):
        if init[-1].shape[0] != R:
            raise ValueError(f"{role} has {init[-1].shape[0]} replicas, but {R} seeds were given")
    for label, part, keys in (("train", train, ("user", "item", "rating", "weight")),
                              ("val", val, ("user", "item", "rating", "weight"))):
        for key in keys:
            if key not in part:
                raise ValueError(f"{label} lacks '{key}'")
            if np.shape(part[key])[0] != R:
                raise ValueError(f"{label}['{key}'] has {np.shape(part[key])[0]} replicas, "
                                 f"expected {R}")
    for key in ("user", "item", "rating"):
        if key not in test:
            raise ValueError(f"test lacks '{key}'")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam!r}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    if num_users < 1 or num_items < 1 or num_users * num_items >= 2**31:
        raise ValueError(f"num_users x num_items must be in 1..2^31 - 1 (pair indices are int32), "
                         f"got {num_users} x {num_items}")


def fit_at(inits: tuple[tuple, tuple, tuple], train: dict, val: dict, test: dict, lam: float,
           epsilon: float, settings: ATSettings, seeds: list[int], num_users: int,
           num_items: int, chunk: int | None = None, threads: int | None = None,
           learners: tuple[Learner, Learner, Learner] = (MF, MF, MF)) -> ATFitResult:
    """Train AT for ``R = len(seeds)`` replicas and select A3's step of lowest validation loss.

    ``inits``: ``(A1, A2, A3)`` initial parameters, e.g. from :func:`initial_params` (each array
    ``[R, ...]``). ``train`` / ``val``: ``user``, ``item``, ``rating``, ``weight`` (= 1 / P of
    the chosen propensity) of shape ``[R, n]``; A1 and A2 train with these weights, A3 with
    weights 1. ``test``: ``user``, ``item``, ``rating`` of shape ``[n]`` shared by all replicas.
    ``seeds``: the replicas' split seeds (per-seed batch streams when ``settings.batch_seed`` is
    None). ``learners``: the learners in the roles A1, A2, A3 (default MF for all three).
    Replicas run ``chunk`` at a time (default :func:`default_chunk`) on ``threads`` parallel
    compiled calls (default: CPU count, at most 2); results do not depend on either.
    """
    _check_inputs(inits, train, val, test, lam, epsilon, seeds, num_users, num_items)
    val, test = layout.by_user(val), layout.by_user(test)      # evaluation gathers in table order
    R = len(seeds)
    n_train = np.shape(train["user"])[1]
    if chunk is None:
        dim = inits[0][0].shape[-1] if inits[0][0].ndim == 3 else 1
        chunk = default_chunk(R, num_users, num_items, dim)
    threads = threads or min(2, os.cpu_count() or 1)
    pre_pos = pretrain_positions(settings, n_train, list(seeds))
    streams = stream_seeds(settings, list(seeds))
    resample_every = 1 if settings.resample == "step" else settings.steps_per_iteration
    loop = _compiled(tuple(learners), settings.candidate_factor, settings.pl_steps,
                     resample_every, int(num_users), int(num_items))
    f32, i32 = np.float32, np.int32
    te = (tf.constant(test["user"], i32), tf.constant(test["item"], i32),
          tf.constant(test["rating"], f32))
    consts = (tf.constant(lam, f32), tf.constant(settings.learning_rate, f32),
              tf.constant(1.0 if settings.loss == "snips" else 0.0, f32),
              tf.constant(epsilon, f32))

    def run(lo: int, hi: int):
        sl = slice(lo, hi)
        part = lambda d, key, dt: tf.constant(np.asarray(d[key][sl], dt))
        return loop(*(tuple(tf.constant(np.asarray(p[sl], f32)) for p in init) for init in inits),
                    tf.constant(pre_pos[sl], i32), tf.constant(streams[sl]),
                    part(train, "user", i32), part(train, "item", i32),
                    part(train, "rating", f32), part(train, "weight", f32),
                    part(val, "user", i32), part(val, "item", i32),
                    part(val, "rating", f32), part(val, "weight", f32), *te, *consts)

    outs = layout.map_chunks(run, R, chunk, threads)
    finals = tuple(tuple(np.concatenate([o[role][j].numpy() for o in outs], axis=0)
                         for j in range(len(inits[role]))) for role in range(3))
    stacked = np.concatenate([o[3].numpy() for o in outs], axis=2)       # [steps, 6, R]
    trace = {name: stacked[:, j, :] for j, name in enumerate(TRACE_NAMES)}
    trace["n_pseudo"] = np.rint(trace["n_pseudo"]).astype(np.int64)
    val_trace = np.where(np.isnan(trace["val_loss"]), np.inf, trace["val_loss"])
    best = np.argmin(val_trace, axis=0)
    cols = np.arange(R)
    return ATFitResult(params=finals[2], best_step=best,
                       best_val_loss=trace["val_loss"][best, cols],
                       mae=trace["test_mae"][best, cols], mse=trace["test_mse"][best, cols],
                       trace=trace, all_params=finals)
