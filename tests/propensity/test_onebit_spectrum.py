"""The 1bit-mc solver's leading-spectrum path (block Krylov on the matrix itself, used from
KRYLOV_MIN_SIZE rows of the smaller Gram matrix) against the full ``eigh``: same pairs, same
projection, same iterations, same objective; its fallback to ``eigh``; the objective's two
softplus forms. The threshold is lowered here so that small matrices take the Krylov path (the
same code as ML-100K's, in a fraction of the time)."""

import numpy as np
import pytest

from atrec.propensity import spectrum
from atrec.propensity.solvers import (
    bernoulli_nll,
    default_radius,
    duality_gap,
    fit_onebit_mc,
    sigmoid,
)
from atrec.propensity.spectrum import (
    LeadingSpectrum,
    keep_needed,
    project_nuclear_ball,
    project_with,
)


def _observed(seed=0, m=160, n=140):
    rng = np.random.default_rng(seed)
    z = -2.5 + rng.normal(0, 0.8, (m, 3)) @ rng.normal(0, 0.8, (3, n))
    return (rng.random((m, n)) < sigmoid(z)).astype(float)


def _low_rank_plus_noise(seed, m=150, n=260, rank=6):
    rng = np.random.default_rng(seed)
    signal = (rng.normal(size=(m, rank)) * np.linspace(30, 10, rank)) @ rng.normal(size=(rank, n))
    return signal / np.sqrt(n) + rng.normal(size=(m, n))


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch):
    monkeypatch.setattr(spectrum, "KRYLOV_MIN_SIZE", 100)


def _seeded(a, needed, **kw):
    """A LeadingSpectrum whose first (eigh) call was on a nearby matrix, as in the solver."""
    rng = np.random.default_rng(7)
    lead = LeadingSpectrum(**kw)
    lead.pairs(a + 0.05 * rng.normal(size=a.shape), needed)
    assert lead.fallbacks == 1 and lead.products == 0
    return lead


@pytest.mark.parametrize("transpose", [False, True])
def test_krylov_pairs_equal_eigh_on_low_rank_plus_noise(transpose):
    a = _low_rank_plus_noise(3)
    a = a.T if transpose else a
    exact = np.linalg.svd(a, compute_uv=False)
    needed = lambda values: 7        # the 6 of the signal and the first of the noise
    lead = _seeded(a, needed, max_depth=16)
    s, vecs, flip = lead.pairs(a, needed)
    assert lead.fallbacks == 1 and lead.products > 0             # no eigh: the Krylov path
    assert flip == (a.shape[0] < a.shape[1])
    np.testing.assert_allclose(s[:7], exact[:7], rtol=1e-10)
    tall = a.T if flip else a
    gram = tall.T @ tall
    for j in range(7):                                           # residual of each pair
        v = vecs[:, j]
        assert np.linalg.norm(gram @ v - s[j] ** 2 * v) <= 1e-9 * exact[0] ** 2
        assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-12)


def test_values_only_reaches_sigma_max_or_stops_at_a_bound_above_the_question():
    a = _low_rank_plus_noise(4)
    top = np.linalg.svd(a, compute_uv=False)[0]
    one = lambda values: 1                                     
    lead = _seeded(a, one, margin=8, tol=1e-12, values_only=True)
    assert lead.pairs(a, one)[0][0] == pytest.approx(top, rel=1e-11)
    used = lead.products
    lower = lead.pairs(a, one, enough=lambda values: values[0] > 0.5 * top)[0][0]
    assert lead.products == used + 1                             # one block: already enough
    assert 0.5 * top < lower <= top * (1 + 1e-12)


def test_a_block_that_cannot_decide_falls_back_to_the_exact_eigh():
    a = _low_rank_plus_noise(5)
    exact = np.linalg.svd(a, compute_uv=False)
    few = lambda values: 6                                     
    lead = _seeded(a, few, margin=2)
    many = lambda values: len(values)                            # more than the block holds
    s = lead.pairs(a, many)[0]
    assert lead.fallbacks == 2 and len(s) == min(a.shape)
    np.testing.assert_allclose(s, exact, rtol=1e-9, atol=1e-9 * exact[0])
    stuck = _seeded(a, few, max_depth=1, tol=1e-15)              # cannot converge in one block
    stuck.pairs(a, few)
    assert stuck.fallbacks == 2 and stuck.products == 1


def test_an_exactly_low_rank_matrix_keeps_the_space_orthonormal():
    rng = np.random.default_rng(6)
    a = rng.normal(size=(120, 3)) @ rng.normal(size=(3, 110))   # rank 3 < the block's width
    radius = 0.5 * np.linalg.svd(a, compute_uv=False).sum()
    needed = keep_needed(radius)
    lead = _seeded(a, needed)
    out, rank = project_with(a, radius, *lead.pairs(a, needed))
    assert lead.fallbacks == 1          # the Krylov path, past its invariant space
    exact, exact_rank = project_nuclear_ball(a, radius)
    assert rank == exact_rank
    np.testing.assert_allclose(out, exact, atol=1e-9 * np.abs(exact).max())


def test_warm_started_projection_equals_the_exact_one():
    y = _observed()
    radius = default_radius(*y.shape, int(y.sum()))
    lead, needed = LeadingSpectrum(), keep_needed(radius)
    rng = np.random.default_rng(1)
    base = -2.0 + rng.normal(0, 1, (y.shape[0], 4)) @ rng.normal(0, 1, (4, y.shape[1]))
    for k in range(4):      # a slowly moving sequence, as the solver's iterates are
        a = base + 0.05 * k * (y - sigmoid(base))
        out, rank = project_with(a, radius, *lead.pairs(a, needed))
        exact, exact_rank = project_nuclear_ball(a, radius)
        assert rank == exact_rank
        np.testing.assert_allclose(out, exact, atol=1e-7 * np.abs(exact).max())
    assert lead.fallbacks == 1          # only the first call needed the full eigh


def test_fit_reaches_the_same_objective_by_the_same_rule(monkeypatch):
    y = _observed()
    radius = default_radius(*y.shape, int(y.sum()))
    fast = fit_onebit_mc(y, radius)
    monkeypatch.setattr(spectrum, "KRYLOV_MIN_SIZE", 10**9)   # full eigh everywhere
    exact = fit_onebit_mc(y, radius)
    assert fast.converged and exact.converged
    assert fast.iterations == exact.iterations and fast.rank == exact.rank
    assert fast.objective == pytest.approx(exact.objective, rel=1e-10)
    assert fast.duality_gap == pytest.approx(exact.duality_gap, rel=1e-4, abs=1e-6)
    assert fast.duality_gap == pytest.approx(duality_gap(fast.z, y, radius), rel=1e-6)


def test_objective_softplus_forms_agree_and_survive_large_logits():
    rng = np.random.default_rng(2)
    z, y = rng.normal(-2, 3, (30, 40)), (rng.random((30, 40)) < 0.2).astype(float)
    by_hand = float(np.sum(np.logaddexp(0.0, z) - y * z))
    assert bernoulli_nll(z, y) == pytest.approx(by_hand, rel=1e-13)       # log1p(exp) form
    big, one = np.array([[0.0, 800.0]]), np.array([[1.0, 0.0]])
    # log(2) - 0 + softplus(800) = log(2) + 800 (exp(800) overflows: the logaddexp form)
    assert bernoulli_nll(big, one) == pytest.approx(np.log(2.0) + 800.0, rel=1e-15)


def test_the_gap_from_a_given_exp_equals_the_gap_from_the_logits():
    y = _observed()
    rng = np.random.default_rng(3)
    z = -2.0 + rng.normal(0, 1, (y.shape[0], 3)) @ rng.normal(0, 1, (3, y.shape[1]))
    radius = default_radius(*y.shape, int(y.sum()))
    plain = duality_gap(z, y, radius)
    assert duality_gap(z, y, radius, exp_z=np.exp(z)) == pytest.approx(plain, rel=1e-12)
    assert duality_gap(z, y, radius, exp_z=np.exp(z + 0.01)) != pytest.approx(plain, rel=1e-6)
