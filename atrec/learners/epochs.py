"""The epoch engine of the binary protocols: shuffled full batches, PyTorch's Adam, a stopping
rule per replica, many seeds in one compiled loop.

docs/protocols.md, "binary-icde24", fixes what a training stage of the binary reference code does,
and this module does exactly that for ``R`` stacked replicas (one per seed):

- **batches**: every epoch each replica shuffles its observed pairs (its own NumPy stream) and
  takes ``n // B`` full batches, the remainder dropped; a stage that also needs pairs drawn from
  all ``users x items`` draws ``n // B x G B`` distinct ones per epoch, with the law of a
  shuffle's first entries, and gives batch ``j`` the slice ``[G B j, G B (j + 1))``. A stage
  whose primary source is "all pairs" (a propensity model regressing ``o``) shuffles those
  instead, each position drawn with its ``o``. :class:`atrec.learners.draws.EpochDraws` draws
  them, for the replicas still training only, one epoch ahead;
- **PyTorch's Adam** (:func:`torch_adam`): betas 0.9/0.999, eps added after bias correction,
  ``weight_decay`` added to the gradient (coupled L2), dense: every row of every table moves at
  every step, as PyTorch's dense embedding gradients make it;
- **the stopping rule** (:class:`ReferenceRule`): the never-reset counter of the reference code;
  or, under ``binary-clean``, :class:`Patience` on a validation criterion, the best epoch kept.

A stage's step is written as TensorFlow code over a :class:`Batch` and a :class:`StepState`:
:meth:`StepState.minimize` differentiates a loss function with ``tf.GradientTape`` and applies
one Adam step to a named parameter group, so a method is written as its losses, never as
hand-derived gradients. Each replica's loss depends on its own parameters only, so the gradient
of the summed losses is each replica's own gradient. A replica whose rule has fired is frozen
(its parameters and Adam state are kept as they were) while the others go on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from atrec.errors import AtrecError
from atrec.learners.draws import EpochDraws, carries_labels
from atrec.run_settings import MAX_EPOCHS
from atrec.runtime import compiled, tf

ADAM_BETAS = (0.9, 0.999)   # torch.optim.Adam's defaults
ADAM_EPS = 1e-8
REFERENCE_TOL = 1e-4
REFERENCE_STOP = 5
FIRST_LOSS = 1e9            # the reference code's initial last_loss


def torch_adam(p, m, v, g, t, lr, wd):
    """One step of ``torch.optim.Adam`` (weight decay coupled: ``g + wd * p``).

    ``t`` is the 1-based step count per replica, ``[R]``. The update runs on ``[R, size]``
    views of the tensors: element-wise, so the same numbers as on their own shapes, and XLA's
    CPU code for a table ``[R, n, k]`` with a ``[R, 1, 1]`` operand is about three times slower
    than for ``[R, n k]`` with ``[R, 1]`` (docs/performance.md)."""
    shape = tf.shape(p)
    flat = [tf.reshape(x, [shape[0], -1]) for x in (p, m, v, g)]
    p, m, v = (tf.reshape(x, shape) for x in _adam2d(*flat, tf.reshape(t, [-1, 1]), lr, wd))
    return p, m, v


def _adam2d(p, m, v, g, t, lr, wd):
    b1, b2 = ADAM_BETAS
    g = g + wd * p
    m = b1 * m + (1.0 - b1) * g
    v = b2 * v + (1.0 - b2) * tf.square(g)
    # the bias corrections in double precision, as PyTorch computes them (Python floats)
    t64 = tf.cast(t, tf.float64)
    root2 = tf.cast(tf.sqrt(1.0 - tf.constant(b2, tf.float64) ** t64), p.dtype)
    step = tf.cast(1.0 - tf.constant(b1, tf.float64) ** t64, p.dtype)
    denom = tf.sqrt(v) / root2 + ADAM_EPS
    return p - (lr / step) * m / denom, m, v


@dataclass(frozen=True)
class Group:
    """An optimiser: the parameters it moves, and its learning rate and weight decay keys (names
    of scalars in the step's ``hp``)."""

    names: tuple[str, ...]
    lr: str = "lr"
    wd: str = "lam"


def _bcast(x, like):
    """``x`` ``[R]`` reshaped to broadcast against ``like`` ``[R, ...]``."""
    return tf.reshape(x, tf.concat([tf.shape(x), tf.ones([tf.rank(like) - 1], tf.int32)], 0))


class StepState:
    """The mutable view of one batch step: ``params`` and per-group Adam ``moments`` (dicts of
    tensors ``[R, ...]``), the hyperparameters ``hp`` and the stage's constants ``consts``.
    :meth:`minimize` replaces the group's parameters by their values after one Adam step."""

    def __init__(self, params: dict, opt: dict, groups: dict, hp: dict, consts: dict) -> None:
        self.params = dict(params)
        self.opt = {g: {"m": dict(s["m"]), "v": dict(s["v"]), "t": s["t"]} for g, s in opt.items()}
        self.groups, self.hp, self.consts = groups, hp, consts

    def minimize(self, group: str, loss_fn: Callable, grads: dict | None = None):
        """One Adam step of ``group`` on ``loss_fn(params) -> [R]`` (autodiff with
        ``tf.GradientTape``), or on the given ``grads`` (name -> gradient) when a method
        reuses one backward for several optimisers. Returns the loss ``[R]`` (None with
        ``grads``)."""
        spec = self.groups[group]
        loss = None
        if grads is None:
            loss, grads = self.gradients(spec.names, loss_fn)
        state = self.opt[group]
        t = state["t"] + 1.0
        for name in spec.names:
            p = self.params[name]
            new_p, state["m"][name], state["v"][name] = torch_adam(
                p, state["m"][name], state["v"][name], grads[name], t,
                self.hp[spec.lr], self.hp[spec.wd])
            self.params[name] = new_p
        state["t"] = t
        return loss

    def gradients(self, names, loss_fn: Callable) -> tuple:
        """``(loss [R], {name: gradient})`` of ``loss_fn(params)`` for the parameters ``names``."""
        with tf.GradientTape() as tape:
            watched = [self.params[n] for n in names]
            for w in watched:
                tape.watch(w)
            loss = loss_fn(self.params)
            total = tf.reduce_sum(loss)
        grads = tape.gradient(total, watched,
                              unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return loss, {n: tf.convert_to_tensor(g) for n, g in zip(names, grads)}


@dataclass(frozen=True)
class Batch:
    """One batch of every replica: observed pairs (``users``, ``items``, ``labels``, ``rows``:
    their positions in the training arrays, ``[R, B]``) and, when the stage draws them, pairs
    from all ``users x items`` (``all_users``, ``all_items``, ``all_o``: 1 where observed,
    ``[R, G B]``)."""

    users: tf.Tensor
    items: tf.Tensor
    labels: tf.Tensor
    rows: tf.Tensor
    all_users: tf.Tensor | None = None
    all_items: tf.Tensor | None = None
    all_o: tf.Tensor | None = None


@dataclass(frozen=True)
class Stage:
    """One training stage: what it trains, on which batches, with which rule.

    ``step(state: StepState, batch: Batch) -> [R]``: the batch's update (through
    ``state.minimize``), returning the term the stopping rule sums. ``source``: ``observed``
    (batches of ``batch_size`` observed pairs, plus ``extra * batch_size`` pairs from all when
    ``extra`` > 0) or ``all`` (batches of ``batch_size`` pairs from all ``users x items``, given
    as the observed fields with ``labels`` = ``o``). ``groups``: name -> :class:`Group`.
    ``reduce``: what the rule is fed per epoch, ``sum`` of the batches' terms (the reference
    code's epoch loss) or the ``last`` batch's term (TDR's logistic propensity's rule).
    """

    name: str
    step: Callable
    groups: dict
    batch_size: int
    source: str = "observed"
    extra: int = 0
    reduce: str = "sum"


class ReferenceRule:
    """The reference code's stopping rule on an epoch's summed loss, per replica (module doc):
    a non-improving epoch (relative decrease below ``tol``) stops training when the counter
    already exceeds ``stop``, else increments it; the counter is never reset."""

    def __init__(self, replicas: int, tol: float = REFERENCE_TOL, stop: int = REFERENCE_STOP):
        self.tol, self.stop = tol, stop
        self.last = np.full(replicas, FIRST_LOSS)
        self.count = np.zeros(replicas, np.int64)

    def update(self, loss: np.ndarray) -> np.ndarray:
        """The epoch's summed loss ``[R]`` in; ``[R]`` bool out: stop after this epoch."""
        loss = np.asarray(loss, np.float64)
        flat = (self.last - loss) / (self.last + 1e-10) < self.tol
        done = flat & (self.count > self.stop)
        self.count = self.count + (flat & ~done)
        self.last = loss
        return done


class Patience:
    """Early stopping on a validation criterion (lower is better), checked after every epoch:
    stop once ``patience`` units have passed without improving on the best, an epoch counting
    ``per_epoch`` units (1: patience in epochs; the epoch's optimiser steps: patience in
    steps); ``improved`` says which replicas set a new best this epoch (their parameters are
    the ones kept)."""

    def __init__(self, replicas: int, patience: int, per_epoch: int = 1) -> None:
        self.patience, self.per_epoch = patience, per_epoch
        self.best = np.full(replicas, np.inf)
        self.best_epoch = np.full(replicas, -1, np.int64)
        self.wait = np.zeros(replicas, np.int64)
        self.improved = np.zeros(replicas, bool)

    def update(self, value: np.ndarray, epoch: int) -> np.ndarray:
        value = np.asarray(value, np.float64)
        self.improved = value < self.best
        self.best = np.where(self.improved, value, self.best)
        self.best_epoch = np.where(self.improved, epoch, self.best_epoch)
        self.wait = np.where(self.improved, 0, self.wait + self.per_epoch)
        return self.wait >= self.patience


def _masked(new, old, active):
    return tf.nest.map_structure(lambda a, b: tf.where(_bcast(active, a), a, b), new, old)


def _flat(tree):
    """Every tensor of ``tree`` of rank 3 or more as ``[R, size]``: the loop carries its state
    this way, because XLA's CPU code for element-wise work on ``[R, n, k]`` tables (Adam's
    update of every row) is 1.5-3 times slower than on ``[R, n k]`` (docs/performance.md);
    the step sees the tables in their own shapes (:func:`_unflat`), so nothing else changes."""
    return tf.nest.map_structure(
        lambda x: tf.reshape(x, [x.shape[0], -1]) if x.shape.rank > 2 else x, tree)


def _unflat(tree, shapes):
    """``tree`` (from :func:`_flat`) back in ``shapes``."""
    return tf.nest.map_structure(lambda x, shape: tf.reshape(x, shape), tree, shapes)


@compiled.loop_cache
def _epoch_loop(step: Callable, groups_key: tuple, source: str, extra: bool, num_items: int,
                last: bool = False, labelled: bool = False):
    """The compiled loop of one epoch of a stage (``groups_key``: the stage's groups as a
    hashable tuple, so every stage of one kind shares its loop; ``last``: the epoch's term is
    its last batch's, not the sum; ``labelled``: a source of all pairs comes as ``position << 1
    | o``, else ``o`` is gathered at the positions)."""
    groups = {name: Group(*rest) for name, *rest in groups_key}

    def loop(params, opt, hp, consts, obs, all_pos, active):
        def body(j, params, opt, total):
            rows = obs[j]
            if source == "all":
                if labelled:
                    labels = tf.cast(tf.bitwise.bitwise_and(rows, 1), tf.float32)
                    rows = tf.bitwise.right_shift(rows, 1)
                else:
                    labels = tf.cast(tf.gather(consts["observed"], rows, batch_dims=1),
                                     tf.float32)
                users, items = rows // num_items, rows % num_items
            else:
                users = tf.gather(consts["train_user"], rows, batch_dims=1)
                items = tf.gather(consts["train_item"], rows, batch_dims=1)
                labels = tf.gather(consts["train_label"], rows, batch_dims=1)
            au = ai = ao = None
            if extra:
                pos = all_pos[j]
                au, ai = pos // num_items, pos % num_items
                if "observed" in consts:
                    ao = tf.cast(tf.gather(consts["observed"], pos, batch_dims=1), tf.float32)
            state = StepState(*_unflat((params, opt), shapes), groups, hp, consts)
            term = step(state, Batch(users, items, labels, rows, au, ai, ao))
            return j + 1, *_flat((state.params, state.opt)), (term if last else total + term)

        shapes = tf.nest.map_structure(lambda x: x.shape, (params, opt))
        total = tf.zeros_like(active, tf.float32)
        _, new_params, new_opt, total = tf.while_loop(
            lambda j, *_: j < tf.shape(obs)[0], body,
            (tf.constant(0), *_flat((params, opt)), total))
        new_params, new_opt = _unflat((new_params, new_opt), shapes)
        # a replica whose rule has fired trained this epoch too, on its own data alone: its
        # state at the start of the epoch is put back (a replica is active for a whole epoch)
        new_params, new_opt = _masked((new_params, new_opt), (params, opt), active)
        return new_params, new_opt, tf.where(active, total, tf.zeros_like(total))

    return tf.function(loop, jit_compile=True, autograph=False)


def new_opt(params: dict, groups: dict) -> dict:
    """Zeroed Adam moments and step counts ``[R]`` for every group."""
    replicas = next(iter(params.values())).shape[0]
    return {g: {"m": {n: tf.zeros_like(params[n]) for n in spec.names},
                "v": {n: tf.zeros_like(params[n]) for n in spec.names},
                "t": tf.zeros([replicas], tf.float32)}
            for g, spec in groups.items()}


@dataclass
class StageResult:
    """A stage's end: its parameters per replica, the epochs each ran and the epoch losses
    ``[epochs, R]`` (NaN after a replica stopped); with a validation criterion, its trace and
    the selected epoch (0-based); ``extras["opt"]``: the optimiser state that goes with
    ``params`` (for a method's step after the stage, e.g. TDR's targeted step)."""

    params: dict
    epochs: np.ndarray
    losses: np.ndarray
    val: np.ndarray | None = None
    best_epoch: np.ndarray | None = None
    best_val: np.ndarray | None = None
    extras: dict = field(default_factory=dict)


def _check_pairs(stage: Stage, n: int, total: int) -> None:
    """An epoch's pairs from all users x items must be distinct, so there must be enough."""
    need = n // stage.batch_size * stage.extra * stage.batch_size
    if stage.extra and need > total:
        raise AtrecError(
            f"{stage.name}: an epoch takes {need:,} distinct pairs of all users x items "
            f"({stage.extra} per observed pair, batches of {stage.batch_size}) and the data have "
            f"{total:,}; lower uniform_ratio in the parameters")


def run_stage(stage: Stage, params: dict, hp: dict, consts: dict, rngs: list, n: int,
              num_users: int, num_items: int, rule=None, validate: Callable | None = None,
              max_epochs: int = MAX_EPOCHS) -> StageResult:
    """Train a stage until every replica's rule has fired (or ``max_epochs``).

    ``n``: the primary source's size per replica (observed rows, or ``num_users * num_items``
    for ``source="all"``). ``rule``: a :class:`ReferenceRule` (default) fed the epoch's summed
    step terms, or a :class:`Patience` fed ``validate(params) -> [R]`` after every epoch, whose
    best epoch's parameters are returned.
    """
    replicas = len(rngs)
    _check_pairs(stage, n, num_users * num_items)
    rule = rule or ReferenceRule(replicas)
    groups_key = tuple((g, s.names, s.lr, s.wd) for g, s in sorted(stage.groups.items()))
    # a stage over all pairs draws each position with its label where int32 can hold both
    labels = (np.asarray(consts["observed"])
              if stage.source == "all" and carries_labels(n) else None)
    loop = _epoch_loop(stage.step, groups_key, stage.source, bool(stage.extra), num_items,
                       stage.reduce == "last", labels is not None)
    hp = {k: tf.constant(v, tf.float32) for k, v in hp.items()}
    params = {k: tf.convert_to_tensor(v) for k, v in params.items()}
    opt = new_opt(params, stage.groups)
    best, best_opt = params, opt
    active = np.ones(replicas, bool)
    epochs = np.zeros(replicas, np.int64)
    losses, vals = [], []
    with EpochDraws(rngs, n, stage.batch_size, num_users * num_items, stage.extra,
                    labels) as draws:
        for epoch in range(max_epochs):
            obs, extra = draws.next(active)
            if extra is None:
                extra = np.zeros((obs.shape[0], replicas, 1), np.int32)
            draws.ahead()
            params, opt, term = loop(params, opt, hp, consts, obs, extra, tf.constant(active))
            term = term.numpy().astype(np.float64)
            losses.append(np.where(active, term, np.nan))
            epochs += active
            if isinstance(rule, Patience):
                value = np.asarray(validate(params), np.float64)
                vals.append(np.where(active, value, np.nan))
                done = rule.update(np.where(active, value, np.inf), epoch) & active
                keep = tf.constant(rule.improved & active)
                best, best_opt = _masked((params, opt), (best, best_opt), keep)
            else:
                done = rule.update(term) & active
            active = active & ~done
            if not active.any():
                break
    if isinstance(rule, Patience):
        return StageResult(best, epochs, np.asarray(losses), np.asarray(vals),
                           rule.best_epoch.copy(), rule.best.copy(), {"opt": best_opt})
    return StageResult(params, epochs, np.asarray(losses), extras={"opt": opt})
