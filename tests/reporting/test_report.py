import json
import math
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from synthetic_records import paper_values, write_records

from atrec.cli import main
from atrec.errors import AtrecError
from atrec.data.ratings import RatingData, Ratings
from atrec.reporting.claims import FAILS, HOLDS, MISSING, evaluate_claims
from atrec.reporting.report import report
from atrec.reporting.table1 import paper_table, table1_rows
from atrec.evaluation.summary import load_summary

# Broken results: each override breaks one claim (see the tests below).
BROKEN = {
    ("yahoo", "user-item", True, "mae"): 1.200,     # (1) AT raises Yahoo user-item MAE
    ("yahoo", "user", False, "mse"): 1.000,         # (2) user beats NB (true) without AT
    ("yahoo", "nb-true", True, "mse"): 0.300,       # (3) with-AT MSE range 1.513 - 0.3 = 1.213
    ("coat", "nb-true", True, "ndcg3_paper"): 0.280,  # (4) AT lowers Coat NB (true) nDCG
}


@pytest.fixture(scope="session")
def root(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("records"))


@pytest.fixture(scope="session")
def summary(root):
    return load_summary(root, expected_seeds=5)


@pytest.fixture(scope="session")
def broken(tmp_path_factory):
    root = write_records(tmp_path_factory.mktemp("broken"), override=BROKEN,
                         rising_mse=[("coat", "user")])
    return load_summary(root, expected_seeds=5)


@pytest.fixture(scope="session")
def coat_gaps(tmp_path_factory):
    root = write_records(tmp_path_factory.mktemp("gaps"), datasets=("coat",),
                         skip=[("coat", "item", True)],
                         override={("coat", "user", True, "mae"): 0.850})
    return root


def test_paper_table_matches_the_transcription():
    table = paper_table()
    assert table == paper_values()
    assert len(table) == 24
    assert table[("yahoo", "user", True)]["ndcg3_paper"] == 0.3525  # PROTOCOL.md, Table 1
    assert table[("coat", "nb-uniform", False)] == {"mae": 0.951, "mse": 1.268,
                                                    "ndcg3_paper": 0.281}


def _row(rows, data, propensity):
    return next(r for r in rows if r["data"] == data and r["propensity"] == propensity)


def test_table1_layout_and_markers(summary):
    rows, columns = table1_rows(summary, "markdown")
    assert columns == ["data", "propensity", "MAE w/o AT", "MAE w/ AT", "MSE w/o AT", "MSE w/ AT",
                       "nDCG@3 w/o AT", "nDCG@3 w/ AT"]
    assert [r["data"] for r in rows] == ["Yahoo! R3"] * 6 + ["Coat"] * 6
    assert [r["propensity"] for r in rows[:6]] == ["uniform", "user", "item", "user-item",
                                                  "NB (uniform)", "NB (true)"]
    coat = _row(rows, "Coat", "uniform")  # MAE 0.873 vs 0.878: lower is better, w/o wins
    assert coat["MAE w/o AT"] == "**0.873**" and coat["MAE w/ AT"] == "0.878"
    assert coat["nDCG@3 w/o AT"] == "0.2910" and coat["nDCG@3 w/ AT"] == "**0.2930**"


@pytest.mark.parametrize("fmt, expected", [
    ("table", "0.832*"), ("csv", "0.832*"), ("latex", "\\textbf{0.832}"), ("markdown", "**0.832**"),
])
def test_better_marker_per_format(summary, fmt, expected):
    rows, _ = table1_rows(summary, fmt)
    assert _row(rows, "Coat", "item")["MAE w/ AT"] == expected
    assert _row(rows, "Coat", "item")["MAE w/o AT"] == "0.873"


def test_json_rows_keep_numbers_and_booleans(summary):
    rows, _ = table1_rows(summary, "json", std=True, compare="paper")
    row = next(r for r in rows if (r["dataset"], r["propensity"]) == ("coat", "item"))
    assert row["mae_with_at"] == pytest.approx(0.832) and row["mae_with_at_better"] is True
    assert row["mae_without_better"] is False and row["mae_with_at_n"] == 5
    assert row["mae_with_at_sd"] == pytest.approx(math.sqrt(0.001 / 4))
    assert row["mae_with_at_paper"] == 0.832
    assert row["mae_with_at_diff"] == pytest.approx(0, abs=1e-12)


def test_std_compare_and_missing_cells(coat_gaps):
    s = load_summary(coat_gaps, expected_seeds=5)
    rows, _ = table1_rows(s, "table", std=True, compare="paper")
    user, item = _row(rows, "Coat", "user"), _row(rows, "Coat", "item")
    # mean 0.850 vs the paper's 0.832; sd of the offsets sqrt(0.001 / 4) = 0.0158
    assert user["MAE w/ AT"] == "0.850* ± 0.016 (paper 0.832, +0.018)"
    assert item["MAE w/ AT"] == "- (paper 0.832)"
    assert item["MAE w/o AT"] == "0.873 ± 0.016 (paper 0.873, +0.000)"  # unmarked: no pair
    assert [r["data"] for r in rows] == ["Coat"] * 6


def test_selected_dataset_without_results_is_dashes_and_a_notice(coat_gaps):
    out = report(datasets=["yahoo", "coat"], root=coat_gaps, figures=False, claims=False,
                 significance=False, fmt="csv", expected_seeds=5)
    lines = out.text.splitlines()
    assert lines[2] == "Yahoo! R3,uniform,-,-,-,-,-,-"
    assert out.notices == ("no results for Yahoo! R3: run atrec train --dataset yahoo",)


def test_ndcg_variants_are_labelled(summary):
    _, columns = table1_rows(summary, "table", ndcg="standard")
    assert columns[-2:] == ["nDCG@3 (standard) w/o AT", "nDCG@3 (standard) w/ AT"]
    rows, columns = table1_rows(summary, "table", ndcg="both", compare="paper")
    assert columns[-4:] == ["nDCG@3 (paper) w/o AT", "nDCG@3 (paper) w/ AT",
                            "nDCG@3 (standard) w/o AT", "nDCG@3 (standard) w/ AT"]
    assert rows[0]["nDCG@3 (standard) w/ AT"] == "0.6100* (paper -)"


@pytest.mark.parametrize("kwargs, message", [
    ({"fmt": "html"}, "unknown format 'html'"),
    ({"ndcg": "ideal"}, "unknown nDCG variant 'ideal'"),
    ({"compare": "authors"}, "unknown comparison 'authors'"),
])
def test_bad_options_are_one_line_errors(summary, kwargs, message):
    with pytest.raises(AtrecError, match=message):
        table1_rows(summary, **kwargs)


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


def test_report_sections_and_json(root, tmp_path):
    out = report(root=root, fmt="json", expected_seeds=5, figures=False)
    doc = json.loads(out.text, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert set(doc) == {"params", "datasets", "table1", "significance", "claims"}
    assert len(doc["table1"]) == 12 and len(doc["significance"]) == 36
    assert [c["status"] for c in doc["claims"]] == [HOLDS] * 5
    text = report(root=root, fmt="table", expected_seeds=5, figures=False,
                  significance=False, claims=False).text
    assert text.startswith("Table 1\n") and "Paired tests" not in text and "Claims" not in text
    assert "Means over 5 seeds (params: published)" in text


def test_report_writes_figures_and_data_statistics(coat_gaps, tmp_path, monkeypatch):
    import atrec.data.preprocess

    rng = np.random.default_rng(0)
    train = Ratings.from_arrays(rng.integers(0, 4, 40), rng.integers(0, 5, 40), [1, 2, 3, 4, 5] * 8)
    test = Ratings.from_arrays(rng.integers(0, 4, 20), rng.integers(0, 5, 20), [1, 1, 2, 3] * 5)
    monkeypatch.setattr(atrec.data.preprocess, "load_processed",
                        lambda name: RatingData(name, train, test, 4, 5, {}))
    out = report(root=coat_gaps, stats=True, expected_seeds=5, figures_dir=tmp_path)
    assert "Data statistics" in out.text
    names = sorted(p.name for p in out.figures)
    assert names == sorted(f"{f}.{e}" for f in ("figure1_rating_distributions",
                                                "figure3_pseudo_labelling", "figure4_test_mse")
                           for e in ("png", "pdf"))
    assert out.notices == ()


def test_report_without_datastats_module_skips_with_a_notice(coat_gaps, monkeypatch):
    monkeypatch.setitem(sys.modules, "atrec.data.datastats", None)
    out = report(root=coat_gaps, stats=True, figures=False, expected_seeds=5)
    assert "Data statistics" not in out.text
    assert out.notices[0].startswith("data statistics skipped")


def test_report_without_results_says_what_to_run(root, tmp_path):
    with pytest.raises(AtrecError, match=r"no results .*run 'atrec train' \(or 'make reproduce'\)"):
        report(root=tmp_path, figures=False)
    with pytest.raises(AtrecError, match="there are results for --params published, tuned"):
        report(root=root, params="file-0000000000", figures=False)


def test_cli_report(root, tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(root))
    runner = CliRunner()
    result = runner.invoke(main, ["report", "--dataset", "coat", "--format", "markdown",
                                  "--no-figures", "--expected-seeds", "5", "--no-significance"])
    assert result.exit_code == 0, result.output
    assert "| Coat   | item" in result.output and "**0.832**" in result.output
    assert "## Claims of the paper" in result.output

    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    result = runner.invoke(main, ["report", "--no-figures"])
    assert result.exit_code == 3
    assert result.output.count("\n") == 1 and result.output.startswith("error: no results")

    result = runner.invoke(main, ["report", "--dataset", "ml-100k"])
    assert result.exit_code == 2 and "unknown dataset 'ml-100k'" in result.output


def test_latex_report_has_no_unescaped_underscores(root):
    text = report(root=root, fmt="latex", ndcg="both", std=True, expected_seeds=5,
                  figures=False).text
    assert "_" not in text and "±" not in text
    assert "\\textbf{0.832} $\\pm$ 0.016" in text and "\\begin{itemize}" in text


def test_records_of_other_experiments_are_not_read(tmp_path):
    root = write_records(tmp_path, datasets=("coat",))
    other = tmp_path / "runs" / "ml-100k" / "item-at" / "published" / "seed-00.json"
    other.parent.mkdir(parents=True)
    other.write_text('{"dataset": "ml-100k", "min_items": 5}')  # another experiment's layout
    out = report(root=root, fmt="json", figures=False, expected_seeds=5)
    doc = json.loads(out.text)
    assert doc["datasets"] == ["coat"] and "falls in 6 of 6" in doc["claims"][4]["evidence"]
