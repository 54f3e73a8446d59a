import numpy as np
import pytest
from synthetic_records import paper_values, write_records

from atrec.evaluation.summary import load_summary
from atrec.reporting.claims import FAILS, HOLDS, MISSING, evaluate_claims

# Broken results: each override breaks one claim (see the tests below).
BROKEN = {
    ("yahoo", "user-item", True, "mae"): 1.200,     # (1) AT raises Yahoo user-item MAE
    ("yahoo", "user", False, "mse"): 1.000,         # (2) user beats NB (true) without AT
    ("yahoo", "nb-true", True, "mse"): 0.300,       # (3) with-AT MSE range 1.513 - 0.3 = 1.213
    ("coat", "nb-true", True, "ndcg3_paper"): 0.280,  # (4) AT lowers Coat NB (true) nDCG
}


@pytest.fixture(scope="session")
def broken(tmp_path_factory):
    root = write_records(tmp_path_factory.mktemp("broken"), override=BROKEN,
                         rising_mse=[("coat", "user")])
    return load_summary(root, expected_seeds=5)


def test_all_claims_hold_on_the_paper_numbers(summary):
    claims = evaluate_claims(summary)
    assert [c.key for c in claims] == [1, 2, 3, 4, 5]
    assert [c.status for c in claims] == [HOLDS] * 5
    mse = [paper_values()[("yahoo", p, at)]["mse"] for at in (False, True)
           for p in ("uniform", "user", "item", "user-item", "nb-uniform", "nb-true")]
    sd_without, sd_with = np.std(mse[:6], ddof=1), np.std(mse[6:], ddof=1)
    assert claims[2].evidence == (f"MSE range 0.924 w/o -> 0.499 w/ AT; "
                                  f"sd {sd_without:.3f} w/o -> {sd_with:.3f} w/ AT")
    assert "NB (true) 0.797, best other user 1.062 (gap +0.265)" in claims[1].evidence
    # (a)+(b) = linspace(1.2, 0.6, 100): first 10 steps average 1.2 - 0.6/99 * 4.5
    first, last = 1.2 - 0.6 / 99 * 4.5, 0.6 + 0.6 / 99 * 4.5
    assert f"(average first {first:.4f} -> last {last:.4f})" in claims[4].evidence
    assert "falls in 12 of 12" in claims[4].evidence


def test_each_broken_claim_is_reported(broken):
    claims = evaluate_claims(broken)
    assert [c.status for c in claims] == [FAILS] * 5
    assert "user-item 1.162->1.200 (not improved)" in claims[0].evidence
    assert "best other user 1.000" in claims[1].evidence
    # without AT: 1.979 - 1.000 (user overridden); with AT: 1.513 - 0.300
    assert "MSE range 0.979 w/o -> 1.213 w/ AT" in claims[2].evidence
    assert "NB (true) 0.2840->0.2800 (not improved)" in claims[3].evidence
    assert "not falling: Coat user" in claims[4].evidence


def test_claims_without_results_are_not_evaluated(coat_gaps):
    claims = evaluate_claims(load_summary(coat_gaps, expected_seeds=5))
    assert [c.status for c in claims[:4]] == [MISSING] * 4
    assert claims[0].evidence == "no results for Yahoo! R3: run atrec train --dataset yahoo"
    assert "Coat item with AT (nDCG@3)" in claims[3].evidence
    assert claims[4].status == HOLDS and "falls in 5 of 5" in claims[4].evidence
