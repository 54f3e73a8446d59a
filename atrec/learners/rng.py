"""Stateless random numbers inside compiled (XLA) loops: uniforms, integers, binomials.

Every draw is a pure function of a 64-bit *key* and a *counter*, so a compiled loop needs no
random state, the same seeds give the same numbers on CPU, and the draw for counter ``j`` can be
made anywhere (AT gives slot ``j`` of a pseudo-label pool its content from counter ``j``; equal
slots then get equal pairs without any bookkeeping).

- :func:`key`: a key from a TF stateless seed ``[2]`` (``tf.random.stateless_uniform``).
- :func:`uniform01_at`: SplitMix64 (Steele, Lea & Flood, OOPSLA 2014, the generator behind
  Java's ``SplittableRandom``) of the counters ``key + (counter + 1) * golden``, 53 random bits
  per float64 uniform on [0, 1). About ten times cheaper under XLA on CPU than
  ``stateless_uniform`` for millions of draws.
- :func:`uniform_ints`: ``floor(u * maxval)``, uniform on ``0..maxval-1`` up to ``maxval / 2^53``.
- :func:`binomial`: exact Binomial(n, p) variates, one per replica. TF's own binomial sampler has
  no XLA kernel. For ``n * min(p, 1 - p) < 10`` sequential inversion of the CDF (the BINV method
  of Kachitvichyanukul & Schmeiser, CACM 1988), else Hoermann's transformed rejection with
  squeeze, BTRS (J. Statist. Comput. Simul. 46, 1993), with ``lgamma`` for the exact log
  probabilities; ``p > 1/2`` draws ``n - Binomial(n, 1 - p)``. Both are exact methods: the law
  is Binomial(n, p) up to float64 rounding. ``tests/test_rng.py`` checks it against
  ``scipy.stats.binom``.
"""

from __future__ import annotations

import numpy as np

from atrec.runtime import tf

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
# BINV below this mean (of the smaller tail), BTRS above: Hoermann's constants assume n p >= 10.
INVERSION_BELOW = 10.0


def key(seed):
    """A uint64 key (scalar) from a stateless seed ``[2]`` (int32 or int64)."""
    return tf.bitcast(tf.random.stateless_uniform([], seed, minval=None, maxval=None,
                                                  dtype=tf.int64), tf.uint64)


def keys(stream_seeds, salt):
    """One key per replica ``[R]`` from ``stream_seeds`` ``[R]`` int64 and a scalar ``salt``:
    replica ``r``'s is :func:`key` of ``[stream_seeds[r], salt]``.

    A loop over the replicas (``map_fn``, one copy of :func:`key`'s program), not one copy per
    replica: TensorFlow's stateless seeding compiles to about 270 XLA instructions, so per
    replica a 20-replica AT stack on Coat had 16,000 of its pseudo-labelling step's 18,400
    instructions here, which cost compilation and about 150 MB per loop held; the keys are
    the same (``docs/performance.md``, "One key derivation per loop")."""
    salt = tf.cast(salt, tf.int64)
    return tf.map_fn(lambda s: key(tf.stack([s, salt])), stream_seeds,
                     fn_output_signature=tf.uint64)


def uniform01_at(k, counters):
    """Uniforms on [0, 1) (float64, 53 bits) for ``counters`` (integers >= 0, any shape);
    ``k`` is a key broadcastable against ``counters`` (e.g. ``[R, 1]`` with ``[R, n]``)."""
    x = (tf.cast(counters, tf.uint64) + np.uint64(1)) * _GOLDEN + tf.cast(k, tf.uint64)
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, np.uint64(30))) * _MIX1
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, np.uint64(27))) * _MIX2
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, np.uint64(31)))
    return tf.cast(tf.bitwise.right_shift(x, np.uint64(11)), tf.float64) * (2.0 ** -53)


def uniform01(seed, n: int):
    """``n`` uniforms (float64 ``[n]``) of the stream of stateless seed ``seed`` ``[2]``."""
    return uniform01_at(key(seed), tf.range(n, dtype=tf.int64))


def uniform_ints(u01, maxval):
    """``floor(u01 * maxval)`` as int32: uniform on ``0..maxval-1`` up to ``maxval / 2^53``."""
    return tf.cast(tf.floor(u01 * tf.cast(maxval, tf.float64)), tf.int32)


def _inversion(k, n: int, p, active):
    """BINV: the smallest ``x`` with ``U <= F(x)``, walking the pmf up from ``(1 - p)^n``.
    Replicas with ``active`` False return 0 at once."""
    n64 = tf.constant(float(n), tf.float64)
    q = 1.0 - p
    s = p / q
    a = (n64 + 1.0) * s
    r0 = tf.exp(n64 * tf.math.log1p(-p))
    u0 = uniform01_at(k, tf.zeros_like(k))
    zero = tf.zeros_like(p)

    def body(x, u, r, done):
        go = ~done
        u = tf.where(go, u - r, u)
        x = tf.where(go, x + 1.0, x)
        r = tf.where(go, r * (a / tf.maximum(x, 1.0) - s), r)
        return x, u, r, done | (u <= r) | (x >= n64)

    x, *_ = tf.while_loop(lambda x, u, r, done: ~tf.reduce_all(done), body,
                          (zero, u0, r0, ~active | (u0 <= r0)))
    return tf.cast(x, tf.int32)


def _btrs(k, n: int, p, active):
    """BTRS (Hoermann 1993) for ``n p >= 10``, ``p <= 1/2``; inactive replicas return 0."""
    n64 = tf.constant(float(n), tf.float64)
    p = tf.where(active, p, 0.5)                   # keep the set-up finite where unused
    spq = tf.sqrt(n64 * p * (1.0 - p))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n64 * p + 0.5
    alpha = (2.83 + 5.1 / b) * spq
    v_r = 0.92 - 4.2 / b
    mode = tf.floor((n64 + 1.0) * p)
    lpq = tf.math.log(p / (1.0 - p))
    h = tf.math.lgamma(mode + 1.0) + tf.math.lgamma(n64 - mode + 1.0)

    def body(i, x, done):
        u = uniform01_at(k, 2 * i) - 0.5
        v = uniform01_at(k, 2 * i + 1)
        us = 0.5 - tf.abs(u)
        kk = tf.floor((2.0 * a / us + b) * u + c)
        in_range = (kk >= 0.0) & (kk <= n64)
        squeeze = (us >= 0.07) & (v <= v_r)
        log_v = tf.math.log(v * alpha / (a / (us * us) + b))
        log_f = h - tf.math.lgamma(kk + 1.0) - tf.math.lgamma(n64 - kk + 1.0) + (kk - mode) * lpq
        accept = ~done & in_range & (squeeze | (log_v <= log_f))
        return i + 1, tf.where(accept, kk, x), done | accept

    _, x, _ = tf.while_loop(lambda i, x, done: ~tf.reduce_all(done), body,
                            (tf.constant(0, tf.int64), tf.zeros_like(p), ~active))
    return tf.cast(x, tf.int32)


def binomial(k, n: int, p):
    """Binomial(``n``, ``p``) variates ``[R]`` int32 for keys ``k`` ``[R]`` and ``p`` ``[R]``
    (float64 in [0, 1]); ``n`` is a Python int below 2^31."""
    p = tf.cast(p, tf.float64)
    flip = p > 0.5
    small_p = tf.where(flip, 1.0 - p, p)
    use_inversion = float(n) * small_p < INVERSION_BELOW
    x = tf.where(use_inversion, _inversion(k, n, small_p, use_inversion),
                 _btrs(k, n, small_p, ~use_inversion))
    return tf.where(flip, n - x, x)
