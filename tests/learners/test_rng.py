"""Stateless random numbers: determinism, ranges, and the binomial sampler's law."""

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from atrec.learners import rng


def test_uniforms_are_deterministic_in_range_and_counter_addressed():
    seed = tf.constant([7, 3], tf.int64)
    a = rng.uniform01(seed, 1000).numpy()
    assert np.array_equal(a, rng.uniform01(seed, 1000).numpy())
    assert a.min() >= 0.0 and a.max() < 1.0
    assert not np.array_equal(a, rng.uniform01(tf.constant([7, 4], tf.int64), 1000).numpy())
    # counter j gives the j-th uniform wherever it is asked for
    k = rng.key(seed)
    np.testing.assert_array_equal(rng.uniform01_at(k, tf.constant([[999, 0], [5, 5]])).numpy(),
                                  [[a[999], a[0]], [a[5], a[5]]])
    assert stats.kstest(a, "uniform").pvalue > 1e-3


def test_uniform_ints_cover_their_range():
    u = rng.uniform01(tf.constant([1, 2], tf.int64), 20000)
    x = rng.uniform_ints(u, 7).numpy()
    assert x.min() == 0 and x.max() == 6
    assert stats.chisquare(np.bincount(x, minlength=7)).pvalue > 1e-3


def _binomial_sample(n, p, size=4000, seed=0):
    keys = np.random.default_rng(seed).integers(0, 2**63, size, dtype=np.uint64)
    draw = tf.function(lambda k, p: rng.binomial(k, n, p), jit_compile=True)
    return draw(tf.constant(keys), tf.fill([size], tf.constant(p, tf.float64))).numpy()


def _binomial_fit_pvalue(x, n, p):
    """Chi-square p-value of sample ``x`` against Binomial(n, p), bins of about equal mass."""
    cuts = np.unique(stats.binom.ppf(np.linspace(0.05, 0.95, 12), n, p))
    edges = np.concatenate([[-1], cuts, [n]])
    observed = np.histogram(x, edges + 0.5)[0]
    expected = np.diff(stats.binom.cdf(edges, n, p)) * len(x)
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


@pytest.mark.parametrize("n,p", [(60, 0.05), (60, 0.3), (60, 0.9), (1_402_665, 0.012),
                                 (1_402_665, 3e-6)],
                         ids=["inversion", "btrs", "flipped", "yahoo-size", "rare"])
def test_binomial_has_the_binomial_law(n, p):
    """Chi-square against scipy.stats.binom."""
    x = _binomial_sample(n, p)
    assert x.min() >= 0 and x.max() <= n
    assert _binomial_fit_pvalue(x, n, p) > 1e-3
    assert abs(x.mean() - n * p) < 5 * np.sqrt(n * p * (1 - p) / len(x))


def test_binomial_power_against_a_wrong_law():
    """The test above rejects a sample of the wrong law (n p = 18 against n p = 19.2)."""
    assert _binomial_fit_pvalue(_binomial_sample(60, 0.32), 60, 0.3) < 1e-3


def test_binomial_edges_and_determinism():
    assert set(_binomial_sample(60, 0.0, 50)) == {0}
    assert set(_binomial_sample(60, 1.0, 50)) == {60}
    np.testing.assert_array_equal(_binomial_sample(500, 0.4, 50, seed=1),
                                  _binomial_sample(500, 0.4, 50, seed=1))


def _compiled_keys(replicas: int):
    """``rng.keys`` of ``replicas`` stream seeds in an XLA-compiled function: its keys and the
    size of the HLO XLA is handed (instructions before optimisation)."""
    fn = tf.function(lambda s, salt: rng.keys(s, salt), jit_compile=True)
    seeds = tf.constant(np.arange(replicas, dtype=np.int64) * 7919 + 11)
    salt = tf.constant(12, tf.int64)
    hlo = fn.experimental_get_compiler_ir(seeds, salt)(stage="hlo")
    return fn(seeds, salt).numpy(), hlo.count(" = ")


def test_keys_are_each_replicas_own_key_and_the_loop_does_not_grow_with_replicas():
    """Replica ``r``'s key is :func:`rng.key` of ``[seed_r, salt]``, compiled as the loops compile
    it; and the program does not repeat the key's derivation per replica (a 20-replica stack
    had 16,000 of its pseudo-labelling step's 18,400 instructions in these derivations, and
    the extra HLO cost compile time and about 150 MB per loop held)."""
    keys20, size20 = _compiled_keys(20)
    one = tf.function(lambda s: rng.key(s), jit_compile=True)
    expected = [one(tf.constant([r * 7919 + 11, 12], tf.int64)).numpy() for r in range(20)]
    np.testing.assert_array_equal(keys20, expected)
    assert len(set(keys20.tolist())) == 20
    _, size1 = _compiled_keys(1)
    assert size20 < 1.5 * size1
