"""The truth's conversion, the prediction matrices and the MNAR mechanism of the forms, on
hand-made vectors."""

import numpy as np
import pytest

from atrec.semisynthetic.conversion import CODE_CUTS, MARGINAL_CUTS, RATES, to_rates
from atrec.semisynthetic.forms import FORMS, INTENDED, Form, propensity
from atrec.semisynthetic.predictions import prediction_matrices

# 100 cells whose prediction is a shuffled 0..99: rank = value
SHUFFLED = np.random.default_rng(1).permutation(100).astype(np.float64)


def test_conversion_cuts_by_rank_at_the_codes_cuts():
    rates = to_rates(SHUFFLED.reshape(10, 10), CODE_CUTS)
    counts = [int(np.sum(rates == r)) for r in RATES]
    assert counts == [53, 24, 14, 7, 2]          # int(100 * cut) boundaries, by hand
    assert rates[SHUFFLED.argmax()] == 0.9 and rates[SHUFFLED.argmin()] == 0.1
    order = np.argsort(SHUFFLED)
    assert np.all(np.diff(rates[order]) >= 0)    # monotone in the prediction


def test_marginal_cuts_put_three_percent_at_0_9():
    rates = to_rates(SHUFFLED, MARGINAL_CUTS)
    assert [int(np.sum(rates == r)) for r in RATES] == [53, 24, 14, 6, 3]


@pytest.mark.parametrize("cuts", [(0.5, 0.7, 0.9), (0.5, 0.4, 0.9, 0.95), (0.0, 0.5, 0.7, 0.9),
                                  (0.5, 0.7, 0.9, 1.0)])
def test_bad_cuts_are_refused(cuts):
    with pytest.raises(ValueError, match="cuts"):
        to_rates(SHUFFLED, cuts)


def test_the_reference_cascade_gives_p_0_9_of_one_eighth():
    rates = np.array(RATES)
    cascade = propensity(rates, "cascade")
    # 0.9 -> 0.5 -> 0.125: the in-place replacement of 0.5 catches the former 0.9 cells
    assert dict(zip(RATES, cascade)) == {0.1: 0.0625, 0.3: 0.0625, 0.5: 0.125, 0.7: 0.25,
                                         0.9: 0.125}
    assert dict(zip(RATES, propensity(rates, "intended"))) == INTENDED
    assert INTENDED[0.9] == 0.5


def test_propensity_refuses_unknown_rules_and_rates():
    with pytest.raises(ValueError, match="rule"):
        propensity(np.array(RATES), "coded")
    with pytest.raises(ValueError, match="rates"):
        propensity(np.array([0.2]), "intended")


def test_forms_hold_the_switches_the_docs_name():
    assert (FORMS["reference"].propensity, FORMS["reference"].labels) == ("cascade", "once")
    assert FORMS["reference"].cuts == CODE_CUTS
    corrected = FORMS["corrected"]
    assert (corrected.propensity, corrected.labels) == ("intended", "per-repetition")
    with pytest.raises(ValueError, match="labels"):
        Form("x", "intended", "twice", CODE_CUTS)


def test_labels_once_repeat_and_per_repetition_labels_differ():
    rates = np.full(1000, 0.5)
    once = FORMS["reference"]
    assert np.array_equal(once.labels_for(rates, 0), once.labels_for(rates, 7))
    fresh = FORMS["corrected"]
    assert not np.array_equal(fresh.labels_for(rates, 0), fresh.labels_for(rates, 7))
    assert np.array_equal(fresh.labels_for(rates, 3), fresh.labels_for(rates, 3))


def test_prediction_matrices_follow_their_rules():
    rates = to_rates(SHUFFLED, CODE_CUTS)
    preds = prediction_matrices(rates, seed=0)
    n_9 = int(np.sum(rates == 0.9))
    for name, low in (("ONE", 0.1), ("THREE", 0.3), ("FIVE", 0.5)):
        changed = preds[name] != rates
        assert changed.sum() == n_9
        assert np.all(rates[changed] == low) and np.all(preds[name][changed] == 0.9)
    assert np.array_equal(preds["CRS"], np.where(rates >= 0.7, 0.1, 0.5))
    assert preds["SKEW"].min() >= 0.1 and preds["SKEW"].max() <= 0.9
    assert not np.array_equal(preds["SKEW"], rates)     # drawn around the rates
    again = prediction_matrices(rates, seed=0)
    assert all(np.array_equal(preds[k], again[k]) for k in preds)
    other = prediction_matrices(rates, seed=1)
    assert not np.array_equal(preds["ONE"], other["ONE"])
