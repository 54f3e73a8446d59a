"""The 1bit-mc solver's leading-spectrum path (subspace iteration, used from
SUBSPACE_MIN_SIZE rows of the smaller Gram matrix) against the full ``eigh``: same projection,
same iterations, same objective. The threshold is lowered here so that small matrices take
that path (the same code as ML-100K's, in a fraction of the time)."""

import numpy as np
import pytest

from atrec.propensity import solvers
from atrec.propensity.solvers import (
    LeadingSpectrum,
    _keep_needed,
    _project_with,
    default_radius,
    fit_onebit_mc,
    project_nuclear_ball,
    sigmoid,
)


def _observed(seed=0, m=160, n=140):
    rng = np.random.default_rng(seed)
    z = -2.5 + rng.normal(0, 0.8, (m, 3)) @ rng.normal(0, 0.8, (3, n))
    return (rng.random((m, n)) < sigmoid(z)).astype(float)


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch):
    monkeypatch.setattr(solvers, "SUBSPACE_MIN_SIZE", 100)


def test_warm_started_projection_equals_the_exact_one():
    y = _observed()
    radius = default_radius(*y.shape, int(y.sum()))
    spectrum, needed = LeadingSpectrum(), _keep_needed(radius)
    rng = np.random.default_rng(1)
    base = -2.0 + rng.normal(0, 1, (y.shape[0], 4)) @ rng.normal(0, 1, (4, y.shape[1]))
    for k in range(4):      # a slowly moving sequence, as the solver's iterates are
        a = base + 0.05 * k * (y - sigmoid(base))
        out, rank = _project_with(a, radius, *spectrum.pairs(a, needed))
        exact, exact_rank = project_nuclear_ball(a, radius)
        assert rank == exact_rank
        np.testing.assert_allclose(out, exact, atol=1e-7 * np.abs(exact).max())
    assert spectrum.fallbacks == 1          # only the first call needed the full eigh


def test_fit_reaches_the_same_objective_by_the_same_rule(monkeypatch):
    y = _observed()
    radius = default_radius(*y.shape, int(y.sum()))
    fast = fit_onebit_mc(y, radius)
    monkeypatch.setattr(solvers, "SUBSPACE_MIN_SIZE", 10**9)   # full eigh everywhere
    exact = fit_onebit_mc(y, radius)
    assert fast.converged and exact.converged
    assert fast.iterations == exact.iterations and fast.rank == exact.rank
    assert fast.objective == pytest.approx(exact.objective, rel=1e-10)
    assert fast.duality_gap == pytest.approx(exact.duality_gap, rel=1e-4, abs=1e-6)
