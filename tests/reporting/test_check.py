import json
import math

import pytest
from click.testing import CliRunner
from synthetic_records import SEEDS, WITH, linear_trace, make_record, paper_values, write_records

from atrec.cli import main
from atrec.errors import AtrecError
from atrec.reporting.check import DEFAULT_TOLERANCES, Tolerance, check, render_check
from atrec.reporting.claims import FAILS, HOLDS, MISSING
from atrec.params.lookup import DEFAULT_PARAMS
from atrec.results.records import record_path, save_record

SE = math.sqrt(0.001 / 4) / math.sqrt(5)  # standard error of every synthetic cell


@pytest.fixture(scope="session")
def good(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("good"))


@pytest.fixture(scope="session")
def coat_off(tmp_path_factory):
    # MAE of Coat item with AT 0.03 above the paper (beyond 3 SE = 0.0212 and 2% = 0.0166);
    # MAE of Coat user with AT 0.018 above (inside 3 SE); NB (true) nDCG w/ AT 0.283 < 0.284
    # (claim 4 fails, but the cell is within tolerance).
    return write_records(tmp_path_factory.mktemp("off"), datasets=("coat",), override={
        ("coat", "item", True, "mae"): 0.862, ("coat", "user", True, "mae"): 0.850,
        ("coat", "nb-true", True, "ndcg3_paper"): 0.283})


@pytest.fixture(scope="session")
def coat_gaps(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("gaps"), datasets=("coat",),
                         skip=[("coat", "item", True)])


def _cell(result, dataset, propensity, with_at, metric):
    return next(c for c in result.cells if (c.dataset, c.propensity, c.with_at, c.metric)
                == (dataset, propensity, with_at, metric))


def test_paper_values_pass_everything(good):
    result = check(good, expected_seeds=5)
    assert result.passed and result.exit_code == 0
    assert len(result.cells) == 72 and all(c.status == "pass" for c in result.cells)
    assert result.gating == (1, 2, 3)
    assert result.datasets == ("yahoo", "coat")


def test_tolerance_is_the_larger_of_floor_and_three_standard_errors(good):
    result = check(good, expected_seeds=5)
    # with AT, MSE floor 2% of 1.452 = 0.02904 > 3 SE = 0.02121
    assert _cell(result, "yahoo", "uniform", True, "mse").tolerance == pytest.approx(0.02 * 1.452)
    # without AT, MAE floor 1% of 0.873 = 0.00873 < 3 SE
    assert _cell(result, "coat", "uniform", False, "mae").tolerance == pytest.approx(3 * SE)


def test_a_cell_beyond_tolerance_fails_with_exit_code_4(coat_off):
    result = check(coat_off, ["coat"], expected_seeds=5)
    bad = _cell(result, "coat", "item", True, "mae")
    assert bad.status == "FAIL" and bad.mean == pytest.approx(0.862)
    assert _cell(result, "coat", "user", True, "mae").status == "pass"
    assert not result.passed and result.exit_code == 4
    # claim 4 does not hold but does not gate; no claim gates Coat alone
    assert result.claims[3].status == FAILS and result.gating == ()
    assert all(result.claim_passed(c) for c in result.claims)


def test_custom_tolerances(coat_off):
    strict = {"mae": Tolerance(relative=0.001, relative_at=0.001, k_se=0.0)}
    result = check(coat_off, ["coat"], tolerances=strict, expected_seeds=5)
    assert _cell(result, "coat", "user", True, "mae").status == "FAIL"
    assert _cell(result, "coat", "user", True, "mse").status == "pass"  # default kept for MSE


def test_missing_cells_fail_unless_allowed(coat_gaps):
    result = check(coat_gaps, ["coat"], expected_seeds=5)
    cell = _cell(result, "coat", "item", True, "mae")
    assert cell.status == "missing - run atrec train --dataset coat --propensity item --with-at"
    assert not result.passed
    allowed = check(coat_gaps, ["coat"], allow_missing=True, expected_seeds=5)
    assert _cell(allowed, "coat", "item", True, "mse").status == "missing (allowed)"
    assert allowed.passed


def test_selected_dataset_without_results_fails_and_its_claims_gate(coat_gaps):
    result = check(coat_gaps, ["yahoo", "coat"], expected_seeds=5)
    assert result.gating == (1, 2, 3)
    assert [c.status for c in result.claims[:3]] == [MISSING] * 3
    assert not result.passed
    assert check(coat_gaps, ["yahoo", "coat"], allow_missing=True, expected_seeds=5).passed


def test_a_failing_gating_claim_fails_the_check(tmp_path):
    root = write_records(tmp_path, datasets=("coat",), rising_mse=[("coat", "item")])
    # claim 5 (test MSE falls over pseudo-labelling) is reported, but does not gate by default
    result = check(root, expected_seeds=5)
    assert all(c.passed for c in result.cells)
    assert result.claims[4].status == FAILS and result.passed
    assert result.claims[3].status == HOLDS
    # the verdict says what the pass does not cover: Yahoo's claims, and claim 5
    verdict = render_check(result).splitlines()[-1]
    assert verdict.startswith("PASSED: 36 of 36 cells within tolerance, 0 gating claim(s) failed; "
                              "claims 1, 2, 3 not evaluated (they need Yahoo! R3); claim 5 does "
                              "not hold (not gating) (datasets: coat"), verdict
    rows = {r["claim"]: r["result"] for r in result.claim_rows()}
    assert rows == {1: "-", 2: "-", 3: "-", 4: "-", 5: "-"}   # no "pass" beside "does not hold"
    # the same claim made gating fails the check
    gated = check(root, expected_seeds=5, gating_claims=(5,))
    assert gated.gating == (5,) and not gated.passed and gated.exit_code == 4


def test_no_results_is_an_error_with_exit_code_3(tmp_path):
    """Nothing to check is results missing (3), as for report and export, not a failed check."""
    with pytest.raises(AtrecError, match="run 'atrec train'") as info:
        check(tmp_path)
    assert info.value.exit_code == 3
    with pytest.raises(AtrecError, match="unknown dataset 'ml-100k'"):
        check(tmp_path, ["ml-100k"])


@pytest.mark.parametrize("kwargs", [{"relative": -0.01, "relative_at": 0.02},
                                    {"relative": 0.01, "relative_at": float("nan")},
                                    {"relative": 0.01, "relative_at": 0.02, "k_se": -1}])
def test_tolerance_validation(kwargs):
    with pytest.raises(ValueError, match="must be >= 0"):
        Tolerance(**kwargs)


def test_default_tolerances_cover_the_published_metrics():
    assert set(DEFAULT_TOLERANCES) == {"mae", "mse", "ndcg3_paper"}


def test_render_formats(coat_off):
    result = check(coat_off, ["coat"], expected_seeds=5)
    doc = json.loads(render_check(result, "json"))
    assert doc["passed"] is False and len(doc["cells"]) == 36
    assert sum(not c["passed"] for c in doc["cells"]) == 1
    text = render_check(result, "table")
    assert text.splitlines()[-1].startswith("FAILED: 35 of 36 cells within tolerance")


def test_cli_check_exit_codes(good, coat_off, tmp_path, monkeypatch):
    runner = CliRunner()
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(good))
    ok = runner.invoke(main, ["check", "--expected-seeds", "5"])
    assert ok.exit_code == 0, ok.output
    assert "PASSED: 72 of 72 cells" in ok.output
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(coat_off))
    failed = runner.invoke(main, ["check", "--dataset", "coat", "--expected-seeds", "5"])
    assert failed.exit_code == 4 and "FAILED" in failed.output
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    empty = runner.invoke(main, ["check"])
    assert empty.exit_code == 3 and empty.output.startswith("error: no results")
    assert empty.output.count("\n") == 1


def test_check_reads_the_default_chain_each_cell_from_the_first_set_with_results(tmp_path):
    """Without --params, check reads the sets train reads: a Table 1 cell that has no published
    results is taken from the next set that has them (here tuned-atrec), and says so."""
    root = write_records(tmp_path, datasets=("coat",), skip=[("coat", "item", True)])
    base = paper_values()[("coat", "item", True)]
    for seed in SEEDS:
        metrics = {m: v + WITH[seed] for m, v in base.items()}
        metrics.update(ndcg3_standard=0.61 + WITH[seed], best_step=10, best_val_loss=1.0)
        save_record(make_record("coat", "item", True, seed, metrics, params_source="tuned-atrec",
                                trace=linear_trace(WITH[seed])),
                    record_path("coat", "item-at", "tuned-atrec", seed, root))
    chained = check(root, expected_seeds=5)
    cell = _cell(chained, "coat", "item", True, "mae")
    assert cell.status == "pass" and cell.n == 5
    assert chained.params == "published, tuned-atrec" and chained.passed
    alone = check(root, params_label="published", expected_seeds=5)
    assert _cell(alone, "coat", "item", True, "mae").status.startswith("missing")
    # the absurd 'tuned' record of coat/uniform never replaces the published cell
    assert _cell(chained, "coat", "uniform", False, "mae").status == "pass"
    option = next(p for p in main.commands["check"].params if p.name == "params")
    assert option.default == DEFAULT_PARAMS
