"""The estimators where the truth is known exactly: a hand-computed case, unbiasedness of IPS and
DR with the true propensity, the sign of SNIPS's bias, and the bias the noisy propensity adds."""

import math

import numpy as np
import pytest

from atrec.semisynthetic.benchmark import Setup, repetition
from atrec.semisynthetic.conversion import CODE_CUTS
from atrec.semisynthetic.estimators import ESTIMATORS, Terms, estimate
from atrec.semisynthetic.forms import Form


def _ce(p, y):
    return -(y * math.log(p) + (1 - y) * math.log(1 - p))


def test_estimators_match_a_cell_by_cell_computation():
    p_hat = [0.2, 0.5, 0.8, 0.4, 0.7]
    y = [1, 0, 1, 0, 1]
    observed, w = [0, 2, 4], [2.0, 4.0, 1.5]
    got = estimate(Terms.of(np.array(p_hat)), np.array(observed),
                   np.array([y[i] for i in observed]), np.array(w))
    n = len(p_hat)
    e = [_ce(p, t) for p, t in zip(p_hat, y)]
    e_o = [e[i] for i in observed]
    assert got["Naive"] == pytest.approx(sum(e_o) / 3)
    assert got["IPS"] == pytest.approx(sum(wi * ei for wi, ei in zip(w, e_o)) / n)
    assert got["SNIPS"] == pytest.approx(sum(wi * ei for wi, ei in zip(w, e_o)) / sum(w))

    def dr(m):
        imputed = [_ce(p, m) for p in p_hat]   # cross-entropy of the prediction against m
        return (sum(imputed) + sum(wi * (e[i] - imputed[i]) for wi, i in zip(w, observed))) / n

    # the reference: m = the w-weighted mean PREDICTION over O (MRDR: weights w (w - 1))
    m_dr = sum(wi * p_hat[i] for wi, i in zip(w, observed)) / sum(w)
    v = [wi * (wi - 1) for wi in w]
    m_mrdr = sum(vi * p_hat[i] for vi, i in zip(v, observed)) / sum(v)
    assert got["DR"] == pytest.approx(dr(m_dr))
    assert got["MRDR"] == pytest.approx(dr(m_mrdr))
    imputed = [_ce(p, m_dr) for p in p_hat]
    eib = sum(e[i] if i in observed else imputed[i] for i in range(n)) / n
    assert got["EIB"] == pytest.approx(eib)
    # DR-JL: m minimises sum_O w (e - e_hat(m))^2; check it is a minimum by perturbing m
    b = [math.log((1 - p) / p) for p in p_hat]
    m_jl = (sum(wi * b[i] ** 2 * y[i] for wi, i in zip(w, observed))
            / sum(wi * b[i] ** 2 for wi, i in zip(w, observed)))
    assert got["DR-JL"] == pytest.approx(dr(m_jl))

    def jl_loss(m):
        return sum(wi * (e[i] - _ce(p_hat[i], m)) ** 2 for wi, i in zip(w, observed))
    assert jl_loss(m_jl) < min(jl_loss(m_jl - 1e-3), jl_loss(m_jl + 1e-3))


def _small_setup(form: Form, predictions=None) -> Setup:
    """3,000 cells: rates cycling through 0.1 .. 0.9 (more low ones, as in the benchmark) and two
    prediction matrices, one close to the rates and one constant."""
    base = np.array([0.1, 0.1, 0.1, 0.3, 0.3, 0.5, 0.7, 0.9])
    rates = np.resize(base, 3000)
    predictions = predictions or {"CLOSE": np.clip(rates + 0.05, 0.05, 0.95),
                                  "FLAT": np.full(rates.size, 0.4)}
    return Setup.build(form, rates, predictions)


def _signed(reps, kind, name, estimator, truth="realised"):
    """Signed relative errors of one estimator over repetitions (array)."""
    return np.array([(r["estimate"][kind][name][estimator] - r["truth"][name][truth])
                     / r["truth"][name][truth] for r in reps])


CORRECTED = Form("corrected", "intended", "per-repetition", CODE_CUTS)


@pytest.fixture(scope="module")
def corrected_reps():
    setup = _small_setup(CORRECTED)
    return [repetition(setup, seed) for seed in range(400)]


@pytest.mark.parametrize("estimator", ["IPS", "DR"])
@pytest.mark.parametrize("name", ["CLOSE", "FLAT"])
@pytest.mark.parametrize("truth", ["realised", "expected"])
def test_ips_and_dr_are_unbiased_with_the_true_propensity(corrected_reps, estimator, name,
                                                          truth):
    err = _signed(corrected_reps, "true", name, estimator, truth)
    se = err.std(ddof=1) / math.sqrt(err.size)
    assert abs(err.mean()) < 4 * se, (err.mean(), se)


def test_the_noisy_propensity_biases_ips(corrected_reps):
    # w = 0.5 / p + 0.5 / p_O pulls every weight towards 1 / p_O: the unbiasedness test above
    # would catch an estimator given these weights
    err = _signed(corrected_reps, "noisy", "FLAT", "IPS")
    se = err.std(ddof=1) / math.sqrt(err.size)
    assert abs(err.mean()) > 10 * se


def test_snips_bias_has_the_known_sign():
    """SNIPS = A / B with E[A] = L, E[B] = 1; to first order its bias is
    (1/N^2) sum (1 - p) / p (L - e): negative where the rarely observed cells have the larger
    loss. Labels drawn once make e fixed; few observed cells make the bias visible."""
    rates = np.resize(np.array([0.1, 0.9]), 400)           # p = 0.0625 for 0.1, 0.5 for 0.9
    form = Form("once", "intended", "once", CODE_CUTS)
    # the prediction is good where c = 0.9 (often observed) and bad where c = 0.1 (rarely)
    setup = Setup.build(form, rates, {"P": np.where(rates == 0.9, 0.85, 0.6)})
    reps = [repetition(setup, seed) for seed in range(3000)]
    err = _signed(reps, "true", "P", "SNIPS")
    se = err.std(ddof=1) / math.sqrt(err.size)
    assert err.mean() < -4 * se
    ips = _signed(reps, "true", "P", "IPS")
    assert abs(ips.mean()) < 4 * ips.std(ddof=1) / math.sqrt(ips.size)


def test_a_repetition_reports_every_estimator_and_truth(corrected_reps):
    r = corrected_reps[0]
    assert set(r["relative_error"]) == {"noisy", "true"}
    assert set(r["relative_error"]["true"]) == {"realised", "expected"}
    assert tuple(r["estimate"]["true"]["FLAT"]) == ESTIMATORS
    assert 0 < r["observed_fraction"] < 1
    assert all(v >= 0 for v in r["relative_error"]["true"]["realised"]["FLAT"].values())
