"""The naive-Bayes propensity on the label of DR-BIAS, DR-MSE and Stable-DR, which reads test
labels: ``p_hat(o = 1 | y) = P(y | o = 1) P(o = 1) / P(y)`` with

- ``P(y = 1)`` the mean label of the 5% MCAR slice (:meth:`BinaryRun.leak_mean`; under
  ``binary-clean`` a slice removed from the test set);
- ``P(o = 1) = (n + mu) / (max_user_id x max_item_id + 2 mu)``: the reference code divides by
  the product of the largest ids of the training pairs (Coat 289 x 299), not by the number of
  pairs;
- ``P(y = 1 | o = 1) = (sum y + mu) / (n + 2 mu)``, the training positive rate;

``mu`` is Stable-DR's learned smoothing (0 for DR-BIAS and DR-MSE). Not clipped. A pair has one
of two weights, ``1 / p_hat(o = 1 | y = 1)`` or ``1 / p_hat(o = 1 | y = 0)``; every unobserved
pair gets the ``y = 0`` value.

The methods' validation criterion under ``binary-clean`` (:func:`label_weighted_criterion`) is
the self-normalised cross-entropy of the validation pairs weighted by these weights.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from atrec.learners import losses
from atrec.runtime import tf

COUNT_KEYS = ("nb_n", "nb_cells", "nb_pos", "nb_py1")


def counts(run) -> dict:
    """Each replica's training count ``n``, ``max_user_id x max_item_id``, number of positives
    and ``P(y = 1)`` read from the 5% MCAR slice, as float32 constants ``[R]`` (keys
    :data:`COUNT_KEYS`)."""
    t = run.problem.train
    users = np.asarray(t["user"], np.int64)
    items = np.asarray(t["item"], np.int64)
    labels = np.asarray(t["rating"], np.float64)
    values = {"nb_n": np.full(run.replicas, users.shape[1], np.float64),
              "nb_cells": users.max(axis=1).astype(np.float64) * items.max(axis=1),
              "nb_pos": labels.sum(axis=1),
              "nb_py1": run.leak_mean().astype(np.float64)}
    return {k: tf.constant(v, tf.float32) for k, v in values.items()}


def propensities(c: dict, mu=0.0):
    """``(p1, p0)``: ``p_hat(o = 1 | y = 1)`` and ``p_hat(o = 1 | y = 0)``, ``[R]``, from the
    counts ``c`` (:func:`counts`, tensors or arrays) and the smoothing ``mu``."""
    po1 = (c["nb_n"] + mu) / (c["nb_cells"] + 2.0 * mu)
    py1o1 = (c["nb_pos"] + mu) / (c["nb_n"] + 2.0 * mu)
    py1 = c["nb_py1"]
    return py1o1 * po1 / py1, (1.0 - py1o1) * po1 / (1.0 - py1)


def fitted(run, mu=0.0) -> tuple:
    """``(p1, p0)`` of every replica as NumPy arrays ``[R]`` (``mu``: the smoothing, a number
    or ``[R]``): what the record's diagnostics report
    (:func:`atrec.methods.binary.nuisance.label_propensity_diagnostics`)."""
    c = {k: np.asarray(v, np.float64) for k, v in counts(run).items()}
    p1, p0 = propensities(c, np.asarray(mu, np.float64))
    return np.asarray(p1), np.asarray(p0)


def weights(p1, p0, label):
    """``1 / p_hat`` of pairs whose weight class is ``label`` (``[R, n]``, 1 or 0), for
    ``p1, p0`` ``[R]``."""
    return tf.where(label > 0.5, 1.0 / p1[:, None], 1.0 / p0[:, None])


def label_weighted_criterion(run, predict: Callable, mu: Callable | None = None) -> Callable:
    """The validation criterion ``value(params) -> [R]``: ``sum w BCE(q, y) / sum w`` over the
    validation pairs, ``w`` the naive-Bayes weight of each pair's label (``mu(params)`` the
    smoothing, 0 when None); under selection ``mcar-auc``, the one rule every method shares
    (:meth:`~atrec.methods.binary.base.BinaryRun.criterion`)."""
    if run.selects_on_mcar:
        return run.criterion(predict)
    val, c = run.val, counts(run)

    @tf.function(jit_compile=True)
    def value(params):
        p1, p0 = propensities(c, 0.0 if mu is None else mu(params))
        e = losses.bce(predict(params, val["user"], val["item"]), val["label"])
        return losses.self_normalised(e, weights(p1, p0, val["label"]))

    return value
