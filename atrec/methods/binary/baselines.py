"""Two simple baselines beside the debiasing methods, under every binary protocol (rows the ICDE
2024 collection lacks; docs/protocols.md, "Simple baselines"):

- ``mf-bias``: matrix factorisation with a user bias, an item bias and a global bias,
  ``logit = <W_u, H_i> + b_u + c_i + g``, trained as ``mf`` is (mean cross-entropy over the
  observed pairs, the same batches, Adam, stopping rule and validation criterion). The tables
  start N(0, 1) from the same draws as ``mf``'s at the same seed, the biases at 0; ``lam``
  decays the tables and the user and item biases, not the global bias (a constant, which decay
  would pull towards a probability of 1/2). Its ``reference`` values are ``MF.py``'s constants
  (no script of the collection has biases);
- ``popularity``: no model. Each user's and each item's training positive rate, shrunk towards
  the overall training rate ``r`` by ``lam`` pseudo-counts, ``r_u = (pos_u + lam r) /
  (n_u + lam)`` (a pair's user or item without a training pair gets ``r``), combined as the
  odds of independent main effects: ``logit q = logit r_u + logit r_i - logit r``. A user's
  items are then ranked by their item rate, and pooled AUC also reads the user rate. ``dim`` is
  read by nothing (the contract's).

Both read only the training pairs' labels (no MCAR label, no propensity). Under
``binary-clean`` the popularity score's one "epoch" is its computation: the validation trace
holds its validation cross-entropy.
"""

from __future__ import annotations

import numpy as np

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, Stage, StageResult
from atrec.methods.base import Hyperparameter
from atrec.methods.binary.base import BinaryMethod, Trained, reference_values
from atrec.methods.binary.ips import SOURCE, BinaryMF, reference_table
from atrec.runtime import tf

BIASES = ("pred_bu", "pred_bi")
GLOBAL = "pred_b"
NO_DECAY = "no_decay"      # the hp key of the global bias's weight decay: 0
TABLES = Group(("pred_W", "pred_H", *BIASES), lr="lr", wd="lam")
OFFSET = Group((GLOBAL,), lr="lr", wd=NO_DECAY)

POP_DIM = Hyperparameter("dim", "int", 1, 2, maximum=1024,
                         help="read by nothing: the popularity score has no embedding")
POP_PRIOR = Hyperparameter("lam", "float", 0.01, 100.0, log=True, maximum=1e6,
                           help="pseudo-counts shrinking each user's and item's training "
                                "positive rate towards the overall rate")
POP_REFERENCE = {"dim": 1, "lam": 1.0}   # atrec's choice: one pseudo-count


def biased_logit(params: dict, users, items):
    """``<W_u, H_i> + b_u + c_i + g``, ``[R, n]``."""
    return (bm.mf_logit(params, "pred", users, items)
            + tf.gather(params["pred_bu"], users, batch_dims=1)
            + tf.gather(params["pred_bi"], items, batch_dims=1) + params[GLOBAL][:, None])


def biased_prob(params: dict, users, items):
    return tf.sigmoid(biased_logit(params, users, items))


def _biased_step(state, b):
    def loss(p):
        return tf.reduce_mean(losses.bce(biased_prob(p, b.users, b.items), b.labels), -1)

    total, grads = state.gradients(TABLES.names + OFFSET.names, loss)
    state.minimize("pred", None, grads=grads)
    state.minimize("offset", None, grads=grads)
    return total


class BinaryBiasedMF(BinaryMF):
    """Matrix factorisation with user, item and global biases (module doc): the bias-free
    ``mf`` cannot represent a user's or an item's main effect, which pooled AUC rewards."""

    name = "mf-bias"
    label = "MF (biases)"
    description = "matrix factorisation with user, item and global biases (binary protocols)"
    reference = SOURCE + "MF.py, with biases (atrec's baseline)"
    reference_params = reference_table("mf-bias", reference_values(BinaryMF, "coat"),
                                       reference_values(BinaryMF, "yahoo"))
    serves_in_at = False
    step = staticmethod(_biased_step)

    def predict(self, params: dict, users, items):
        return biased_prob(params, users, items)

    def _predictor(self, run, prop: dict):
        stage = Stage(self.name, type(self).step, {"pred": TABLES, "offset": OFFSET},
                      int(run.values["batch_size"]))
        r = run.replicas
        init = {**run.tables("pred"), "pred_bu": np.zeros((r, run.num_users), np.float32),
                "pred_bi": np.zeros((r, run.num_items), np.float32),
                GLOBAL: np.zeros(r, np.float32)}
        return run.main(stage, init, run.hp(**{NO_DECAY: 0.0}), None,
                        run.criterion(biased_prob))

    def predictors(self, run) -> tuple:  # pragma: no cover - serves_in_at is False
        raise NotImplementedError("mf-bias does not serve in AT")


def positive_rates(users, items, labels, num_users: int, num_items: int,
                   prior: float) -> tuple:
    """``(user logit, item logit, overall logit)`` of the shrunk training positive rates of one
    replica (module doc): arrays ``[num_users]``, ``[num_items]`` and a float."""
    labels = np.asarray(labels, np.float64)
    overall = labels.mean()

    def shrunk(index, size):
        n = np.bincount(index, minlength=size)
        pos = np.bincount(index, weights=labels, minlength=size)
        return _logit((pos + prior * overall) / (n + prior))

    return shrunk(users, num_users), shrunk(items, num_items), float(_logit(overall))


def _logit(p):
    p = np.clip(p, 1e-6, 1.0 - 1e-6)    # a rate of 0 or 1 only when every label agrees
    return np.log(p) - np.log1p(-p)


def popularity_prob(params: dict, users, items):
    """``sigmoid(logit r_u + logit r_i - logit r)``, ``[R, n]``."""
    return tf.sigmoid(tf.gather(params["pop_user"], users, batch_dims=1)
                      + tf.gather(params["pop_item"], items, batch_dims=1)
                      - params["pop_mean"][:, None])


class Popularity(BinaryMethod):
    """The popularity score (module doc): each user's and item's training positive rate, no
    model, nothing trained."""

    name = "popularity"
    label = "Popularity"
    description = "each user's and item's training positive rate, no model (binary protocols)"
    reference = "atrec's baseline (no reference script)"
    hyperparameters = (POP_DIM, POP_PRIOR)
    reference_params = reference_table("popularity", POP_REFERENCE, POP_REFERENCE)
    trains = False       # no learning rate, no batches (atrec.testing.binary)

    def predict(self, params: dict, users, items):
        return popularity_prob(params, users, items)

    def train(self, run) -> Trained:
        t, prior = run.problem.train, float(run.values["lam"])
        per = [positive_rates(t["user"][k], t["item"][k], t["rating"][k], run.num_users,
                              run.num_items, prior) for k in range(run.replicas)]
        params = {"pop_user": tf.constant(np.stack([p[0] for p in per]), tf.float32),
                  "pop_item": tf.constant(np.stack([p[1] for p in per]), tf.float32),
                  "pop_mean": tf.constant([p[2] for p in per], tf.float32)}
        train_loss = tf.reduce_mean(losses.bce(
            popularity_prob(params, run.consts["train_user"], run.consts["train_item"]),
            run.consts["train_label"]), -1)
        ones = np.ones(run.replicas, np.int64)
        train_losses = np.asarray(train_loss, np.float64)[None, :]
        if not run.clean:
            return Trained(params, StageResult(params, ones, train_losses), {})
        val = np.asarray(run.criterion(popularity_prob)(params), np.float64)
        return Trained(params, StageResult(params, ones, train_losses, val[None, :],
                                           np.zeros(run.replicas, np.int64), val), {})
