"""The baselines coat-shipped, logistic and 1bit-mc, their solvers, and the calibration."""

import numpy as np
import pytest
from conftest import SHARED  # noqa: E402  (tests/ is on sys.path)
from scipy.optimize import minimize

from atrec.data.download import download
from atrec.data.preprocess import load_data
from atrec.data.ratings import Ratings
from atrec.data.splits import Split, make_split
from atrec.errors import AtrecError
from atrec.propensity import get_estimator
from atrec.propensity.calibrated import calibrate
from atrec.propensity.solvers import (
    bernoulli_nll,
    default_radius,
    fit_feature_logistic,
    fit_onebit_mc,
    sigmoid,
)
from atrec.propensity.spectrum import project_nuclear_ball


@pytest.fixture(scope="module")
def coat_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("baselines")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATREC_DATA_DIR", str(folder))
        download("coat", source=SHARED / "coat", quiet=True)
    return folder


@pytest.fixture
def coat_split(coat_dir, monkeypatch):
    monkeypatch.setenv("ATREC_DATA_DIR", str(coat_dir))
    return make_split(load_data("coat"), 0)


# --- logistic ------------------------------------------------------------------------------

def test_newton_matches_a_brute_force_optimiser_on_a_tiny_design():
    rng = np.random.default_rng(0)
    xu = np.eye(3)[rng.integers(0, 3, 7)]          # 7 users, one-hot in 3 groups
    xi = np.c_[np.eye(2)[rng.integers(0, 2, 5)], rng.integers(0, 2, 5)]  # 5 items, 3 columns
    y = (rng.random((7, 5)) < 0.3).astype(float)
    lam = 0.7
    fit = fit_feature_logistic(y, xu, xi, lam=lam)

    def objective(t):
        z = t[0] + (xu @ t[1:4])[:, None] + (xi @ t[4:])[None, :]
        return bernoulli_nll(z, y) + 0.5 * lam * (t[1:] @ t[1:])

    ref = minimize(objective, np.zeros(7), method="BFGS", options={"gtol": 1e-10})
    assert fit.converged and fit.iterations <= 10
    assert fit.objective == pytest.approx(ref.fun, abs=1e-9)
    np.testing.assert_allclose(np.r_[fit.intercept, fit.w, fit.v], ref.x, atol=1e-5)
    assert all(b <= a + 1e-12 for a, b in zip(fit.objectives, fit.objectives[1:]))


def test_intercept_only_mle_is_the_density():
    # with no features the MLE is the observed share: sigmoid(b) = mean(y), exactly
    y = np.zeros((4, 5))
    y[0, :3] = y[2, 1] = 1
    fit = fit_feature_logistic(y, np.zeros((4, 0)), np.zeros((5, 0)))
    assert sigmoid(np.array(fit.intercept)) == pytest.approx(4 / 20, abs=1e-12)


def test_logistic_on_coat_is_clipped_and_records_its_fit(coat_split):
    est = get_estimator("logistic")
    cells = est.cell_propensities(coat_split)
    d = est.diagnostics
    assert d["converged"] and d["iterations"] < 20 and d["clip"] == 0.05
    # clipped below at 0.05 before the max-normalisation
    prob = est.fit_cells(coat_split)
    assert prob.min() == 0.05 and cells.min() == pytest.approx(0.05 / prob.max())
    assert cells.max() == 1.0 and d["clipped_cells"] > 0


# --- 1bit-mc -------------------------------------------------------------------------------

def test_nuclear_projection_matches_the_svd_formula():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(9, 6))
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    radius = 0.5 * s.sum()
    out, rank = project_nuclear_ball(a, radius)
    assert np.linalg.svd(out, compute_uv=False).sum() == pytest.approx(radius, rel=1e-9)
    # the soft-thresholded spectrum: theta solves sum(max(s - theta, 0)) = radius
    lo, hi = 0.0, s[0]
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.maximum(s - mid, 0).sum() > radius else (lo, mid)
    np.testing.assert_allclose(out, (u * np.maximum(s - lo, 0)) @ vt, atol=1e-9)
    assert rank == int(np.count_nonzero(s > lo))
    inside, _ = project_nuclear_ball(a, 2 * s.sum())
    np.testing.assert_array_equal(inside, a)
    np.testing.assert_allclose(project_nuclear_ball(a.T, radius)[0], out.T, atol=1e-9)


def _low_rank_model(seed=0, m=240, n=200):
    rng = np.random.default_rng(seed)
    z = -2.5 + rng.normal(0, 0.8, (m, 2)) @ rng.normal(0, 0.8, (2, n))
    p = sigmoid(z)
    return p, (rng.random((m, n)) < p).astype(float)


def test_onebit_converges_monotonically_and_beats_uniform_on_a_low_rank_model():
    p, y = _low_rank_model()
    fit = fit_onebit_mc(y, default_radius(*y.shape, int(y.sum())))
    assert fit.converged and fit.iterations < 500
    assert all(b <= a for a, b in zip(fit.objectives, fit.objectives[1:]))
    assert fit.objectives[-1] < fit.objectives[0]
    assert 0 <= fit.duality_gap <= 1e-5 * fit.objective
    err_mc = np.sqrt(np.mean((sigmoid(fit.z) - p) ** 2))
    err_uniform = np.sqrt(np.mean((y.mean() - p) ** 2))
    assert err_mc < 0.8 * err_uniform, (err_mc, err_uniform)  # measured: about 0.7


def test_onebit_gap_bounds_the_distance_to_a_much_tighter_solve():
    # the stopping certificate: F(x) - min F <= gap, checked against a solve to tol 1e-10
    # (the restarts change the path, never the problem or the rule)
    _, y = _low_rank_model(seed=1)
    radius = default_radius(*y.shape, int(y.sum()))
    fit = fit_onebit_mc(y, radius)
    tight = fit_onebit_mc(y, radius, tol=1e-10, max_iter=3000)
    assert tight.converged and tight.objective <= fit.objective
    assert fit.objective - tight.objective <= fit.duality_gap
    assert tight.iterations > fit.iterations


def test_onebit_estimator_reports_diagnostics(small_mnar):
    split = make_split(small_mnar, 0)
    est = get_estimator("1bit-mc")
    est.estimate(split)
    d = est.diagnostics
    assert d["converged"] and d["objective"] <= d["objective_start"]
    assert d["radius"] == pytest.approx(default_radius(split.num_users, split.num_items,
                                                       len(split.train)))


# --- coat-shipped --------------------------------------------------------------------------

def test_coat_shipped_reads_the_files_cells(coat_split):
    shipped = np.loadtxt(SHARED / "coat" / "propensities.ascii")
    est = get_estimator("coat-shipped")
    np.testing.assert_array_equal(est.cell_propensities(coat_split), shipped / shipped.max())
    pairs = est.estimate(coat_split)
    tr = coat_split.train
    np.testing.assert_array_equal(pairs.train, (shipped / shipped.max())[tr.user, tr.item]
                                  .astype(np.float32))
    cal = est.calibrated(coat_split)
    np.testing.assert_allclose(cal.train, shipped[tr.user, tr.item] * len(tr) / shipped.sum(),
                               rtol=1e-6)


@pytest.mark.parametrize("name, dataset, fragment", [
    ("coat-shipped", "ml-100k", "it supports coat only"),
    ("coat-shipped", "yahoo", "it supports coat only"),
    ("logistic", "yahoo", "it supports coat, ml-100k only"),
])
def test_refusals_name_the_dataset(name, dataset, fragment):
    r = Ratings.from_arrays([0], [0], [5])
    split = Split(dataset, 0, r, r, r, r, r, 2, 2)
    with pytest.raises(AtrecError, match=f"'{name}' does not apply to dataset '{dataset}'"):
        get_estimator(name).estimate(split)
    with pytest.raises(AtrecError, match=fragment):
        get_estimator(name).calibrated(split)


# --- calibration ---------------------------------------------------------------------------

def _full_split():
    # 3 users x 4 items; every rating value present in train and in the MCAR prior
    train = Ratings.from_arrays([0, 0, 0, 1, 1, 2, 2], [0, 1, 2, 0, 3, 1, 2], [1, 2, 3, 4, 5, 5, 1])
    val = Ratings.from_arrays([2], [3], [4])
    prior = Ratings.from_arrays(range(10), range(10), [1, 1, 1, 1, 2, 2, 3, 3, 4, 5])
    return Split("toy", 0, train, val, prior, prior, prior, 3, 4)


def test_calibration_identities_of_the_count_estimators():
    sp = _full_split()
    rho = 7 / 12
    np.testing.assert_allclose(get_estimator("uniform").calibrated(sp).train, rho)
    # user: P = n_u / num_items, the user's observed share
    np.testing.assert_allclose(get_estimator("user").calibrated(sp).train,
                               np.array([3, 3, 3, 2, 2, 2, 2]) / 4, rtol=1e-6)
    for name in ("item", "user-item"):
        cal = get_estimator(name).calibrated(sp)
        cells = get_estimator(name).cell_propensities(sp)
        assert (cells * cal.scale).mean() == pytest.approx(rho)


@pytest.mark.parametrize("name", ["nb-uniform", "nb-true"])
def test_naive_bayes_calibration_is_bayes_rule(name):
    sp = _full_split()
    rho = 7 / 12
    p_r_obs = np.bincount(sp.train.rating, minlength=6)[1:] / 7
    prior = (np.full(5, 0.2) if name == "nb-uniform"
             else np.bincount(sp.test_prior.rating, minlength=6)[1:] / 10)
    expected = p_r_obs * rho / prior
    cal = get_estimator(name).calibrated(sp)
    np.testing.assert_allclose(cal.train, np.minimum(expected[sp.train.rating - 1], 1), rtol=1e-6)
    with pytest.raises(AtrecError, match="depends on the rating"):
        get_estimator(name).cell_propensities(sp)


def test_calibrate_clips_and_counts():
    p = np.array([0.01, 0.5, 1.0])
    np.testing.assert_allclose(calibrate(p, 1.0, 1), [0.01, 0.5, 1.0])
    np.testing.assert_allclose(calibrate(p, 1.0, 2), [0.02, 1.0, 1.0])
    np.testing.assert_allclose(calibrate(p, 1.0, 1, min_propensity=0.1), [0.1, 0.5, 1.0])
    with pytest.raises(ValueError):
        calibrate(p, 0.0, 1)
    cal = get_estimator("uniform").calibrated(_full_split(), min_propensity=0.9)
    assert cal.min_propensity == 0.9 and cal.n_clipped == 8
    np.testing.assert_allclose(cal.train, 0.9)
