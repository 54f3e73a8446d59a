"""Losses of binary labels, element-wise, in the forms the reference codes compute them.

The binary reference code uses three cross-entropies (docs/protocols.md, "The binary methods"); each
changes gradients and the sums a stopping rule reads, so each is reproduced where its code uses it:

- :func:`bce`: PyTorch's ``binary_cross_entropy`` on float32 probabilities, each log clamped at
  -100: a saturated ``q == 1`` with ``t == 0`` costs 100 and passes ZERO gradient;
- :func:`bce_eps`: the hand-written form ``-[t log(q + 1e-6) + (1 - t) log(1 - q + 1e-6)]``;
- :func:`bce_logits`: the cross-entropy of ``sigmoid(logit)``, computed from the logit (finite
  gradient everywhere), which atrec's corrected variants use.

Beside them the squared error (the learned propensity of the binary reference code regresses
``o`` by it, and the 1-5 star protocols' loss) and the weighted means the estimators take.
Every function maps tensors of any shape element-wise (weighted means reduce the last axis), so
the stacked replica axis passes through.
"""

from __future__ import annotations

from atrec.runtime import tf

LOG_CLAMP = -100.0     # PyTorch's clamp of each log in binary_cross_entropy
BCE_EPS = 1e-6         # the epsilon of the hand-written cross-entropies (BCE_eps)


def _clamped_log(x):
    """``max(log x, -100)`` with PyTorch's gradient: zero where the clamp is active (and at
    ``x == 0``, where the log is -inf), ``1 / x`` elsewhere."""
    safe = tf.where(x > 0, x, tf.ones_like(x))
    log = tf.math.log(safe)
    live = (x > 0) & (log > LOG_CLAMP)
    return tf.where(live, log, tf.fill(tf.shape(x), tf.constant(LOG_CLAMP, x.dtype)))


def bce(q, t):
    """PyTorch's ``binary_cross_entropy(q, t)``, element-wise: ``-[t log q + (1 - t) log(1 - q)]``
    with each log clamped at -100 (and its gradient zero there)."""
    return -(t * _clamped_log(q) + (1.0 - t) * _clamped_log(1.0 - q))


def bce_eps(q, t):
    """The hand-written cross-entropy of the reference code: ``-[t log(q + 1e-6) + (1 - t)
    log(1 - q + 1e-6)]``, element-wise."""
    return -(t * tf.math.log(q + BCE_EPS) + (1.0 - t) * tf.math.log(1.0 - q + BCE_EPS))


def bce_logits(logit, t):
    """The cross-entropy of ``sigmoid(logit)`` against ``t``, from the logit (stable, no clamp)."""
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=t, logits=logit)


def squared(q, t):
    """``(q - t)^2``, element-wise."""
    return tf.square(q - t)


def weighted_mean(values, weights):
    """``sum(w v) / n`` over the last axis (the plain IPS mean)."""
    n = tf.cast(tf.shape(values)[-1], values.dtype)
    return tf.reduce_sum(weights * values, axis=-1) / n


def self_normalised(values, weights):
    """``sum(w v) / sum(w)`` over the last axis (SNIPS)."""
    return tf.reduce_sum(weights * values, axis=-1) / tf.reduce_sum(weights, axis=-1)
