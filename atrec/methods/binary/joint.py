"""What the jointly trained binary methods share (DT, ESCM2, ESMM, Multi; docs/protocols.md,
"The binary methods"): their extra hyperparameters, the training labels over all pairs, and the DR
term of their hand-written cross-entropies.

These methods train a propensity model and the predictor (and an imputation model) with ONE
backward per batch feeding one Adam per model (:meth:`atrec.learners.epochs.StepState.gradients`
then ``minimize(group, None, grads=...)``), so each method's step is its loss written out.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from atrec.learners import losses
from atrec.methods.binary.base import BinaryMethod, Trained, clip_weight
from atrec.methods.binary.nuisance import diagnose, held_out_mask, model_grid
from atrec.methods.hyperparameters import Hyperparameter
from atrec.runtime import tf

ALPHA = Hyperparameter("alpha", "float", 0.01, 10.0, log=True, maximum=100.0,
                       help="weight of the propensity model's observation loss")
THETA = Hyperparameter("theta", "float", 1e-5, 10.0, log=True, maximum=100.0,
                       help="weight of the IPS term (ESCM2-IPS) or of the imputation loss")
UNIFORM_RATIO = Hyperparameter("uniform_ratio", "int", 1, 8, maximum=64,
                               help="G: pairs drawn from all users x items per observed pair")
IMP_LAM = Hyperparameter("imp_lam", "float", 1e-7, 1.0, log=True, maximum=10.0,
                         help="the imputation model's weight decay")


def label_matrix(run) -> np.ndarray:
    """``[R, nu * ni]`` uint8: each replica's training label (0 or 1) at its training pairs, 0
    elsewhere (``o y`` over all pairs, the target of ESMM's and ESCM2's CTCVR loss). A byte per
    pair, as the observed table (``BinaryRun.observed``): random gathers in a quarter of the
    float32 table's bytes."""
    out = np.zeros((run.replicas, run.num_users * run.num_items), np.uint8)
    t = run.problem.train
    for k in range(run.replicas):
        out[k, t["user"][k].astype(np.int64) * run.num_items + t["item"][k]] = t["rating"][k]
    return out


def observed_mean(values, state, users, items):
    """``values`` ``[R, n]`` at the pairs ``(users, items)`` averaged over the pairs, ``[R]``: in
    the corrected form (``state.consts["obs_keep"]``, ``[R, nu, ni]``, 0 at the validation
    pairs) over the pairs that are not validation pairs, which are observed but held out, so
    neither observed nor unobserved for a model of the training pairs; in the code's form over
    all of them (the validation pairs counted as unobserved)."""
    keep = state.consts.get("obs_keep")
    if keep is None:
        return tf.reduce_mean(values, -1)
    k = tf.cast(tf.gather_nd(keep, tf.stack([users, items], -1), batch_dims=1), values.dtype)
    return tf.reduce_sum(k * values, -1) / tf.maximum(tf.reduce_sum(k, -1), 1.0)


def labels_at(matrix, users, items, num_items, dtype):
    """The entries of a ``[R, nu * ni]`` matrix at the pairs ``(users, items)`` ``[R, n]``, as
    ``dtype`` (the model's; ``num_items``: a scalar tensor, e.g.
    ``tf.shape(params["pred_H"])[1]``)."""
    return tf.cast(tf.gather(matrix, users * num_items + items, batch_dims=1), dtype)


def dr_eps(q, y, q_hat, w, q_d, q_hat_d, weighted: bool, reversed_: bool = False,
           direct_scale=1.0):
    """The DR loss of the hand-written cross-entropies, ``[R]``:
    ``[sum_O w e - sum_O (w) e_hat + s sum_D e_hat_D] / |D|`` with ``e = BCE_eps(q, y)`` and
    ``e_hat = BCE_eps(q, q_hat)`` (``reversed_``: ``BCE_eps(q_hat, q)``), the correction
    weighted by ``w`` when ``weighted`` and ``s = direct_scale`` (``N / (G n)`` in a corrected
    form, :meth:`~atrec.methods.binary.base.BinaryRun.direct_scale`; 1 in the code's)."""
    pair = (lambda a, b: losses.bce_eps(b, a)) if reversed_ else losses.bce_eps
    e = losses.bce_eps(q, y)
    e_hat = pair(q, q_hat)
    corr = w * e_hat if weighted else e_hat
    size = tf.cast(tf.shape(q_d)[-1], q.dtype)
    direct = tf.reduce_sum(pair(q_d, q_hat_d), -1)
    return (tf.reduce_sum(w * e - corr, -1) + direct_scale * direct) / size


def joint_step(state, loss_fn, order: tuple[str, ...] | None = None):
    """One backward of ``loss_fn(params) -> [R]`` over every group's parameters, then one Adam
    step of each group in ``order`` (default: sorted names) with those gradients, as the code's
    ``loss.backward()`` followed by each optimiser's ``step()``. A group stepping after another
    over the same parameters reads them already moved (its weight decay too). Returns the
    loss."""
    order = tuple(sorted(state.groups)) if order is None else order
    names = tuple(dict.fromkeys(n for g in order for n in state.groups[g].names))
    total, grads = state.gradients(names, loss_fn)
    for g in order:
        state.minimize(g, None, grads=grads)
    return total



def ips_term_step(state, make_loss, order: tuple[str, ...] | None = None):
    """:func:`joint_step` of ``make_loss(out)``, a loss that stores in ``out["ips"]`` the
    term the stopping rule sums (``sum_O w BCE_eps``), which it returns."""
    out = {}
    joint_step(state, make_loss(out), order)
    return out["ips"]

class JointMethod(BinaryMethod):
    """A binary method whose models all train in one stage. A subclass gives its initial
    parameters (:meth:`_init`), its stage (:meth:`_stage`) and its propensity
    (:meth:`_propensity`, for the ``binary-clean`` criterion: the cross-entropy self-normalised
    by ``1 / clip(p_hat, gamma, 1)`` at the current parameters; ``weighted_criterion =
    False``: the plain mean cross-entropy)."""

    weighted_criterion: ClassVar[bool] = True
    serves_in_at = True      # A1, A2: the whole method twice (BinaryMethod.predictors)
    all_labels: ClassVar[bool] = False     # the step reads y over all pairs ("labels_all")
    # the step reads hp["direct_scale"], its DR loss's direct-term factor (BinaryRun.direct_scale
    # with G = uniform_ratio: N / (G n) in the corrected form, 1 in the code's)
    dr_direct: ClassVar[bool] = False

    def _init(self, run) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _stage(self, run, init: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def _propensity(self, params, users, items):  # pragma: no cover - abstract
        raise NotImplementedError

    def _source_size(self, run) -> int | None:
        return None

    def train(self, run) -> Trained:
        init = self._init(run)
        consts = {"observed": tf.constant(run.observed())}
        if run.corrected:
            consts["obs_keep"] = tf.constant(
                held_out_mask(run).reshape(run.replicas, run.num_users, run.num_items))
        if self.all_labels:
            consts["labels_all"] = tf.constant(label_matrix(run))
        if self.weighted_criterion:
            gamma = float(run.values["gamma"])
            weights = lambda p, u, i: clip_weight(self._propensity(p, u, i), gamma)
            criterion = run.criterion(self.predict, weights, live=True)
        else:
            criterion = run.criterion(self.predict)
        extra = ({"direct_scale": run.direct_scale(int(run.values["uniform_ratio"]))}
                 if self.dr_direct else {})
        res = run.main(self._stage(run, init), init, run.hp(**extra), consts, criterion,
                       source_size=self._source_size(run))
        has = type(self)._propensity is not JointMethod._propensity
        grid = model_grid(run, self._propensity, res.params) if has else None
        return Trained(res.params, res, {}, diagnose(run, None, res.params, grid))
