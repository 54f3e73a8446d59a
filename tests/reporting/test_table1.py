import math

import pytest
from synthetic_records import make_record, paper_values

from atrec.data.synthetic import SOURCE
from atrec.errors import AtrecError
from atrec.evaluation.summary import load_summary, merge_summaries, summarize
from atrec.reporting.table1 import paper_table, table1_rows


def test_paper_table_matches_the_transcription():
    table = paper_table()
    assert table == paper_values()
    assert len(table) == 24
    assert table[("yahoo", "user", True)]["ndcg3_paper"] == 0.3525  # the paper's Table 1
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


def test_a_dataset_whose_records_came_from_synthetic_data_is_labelled_so():
    """Yahoo's records name a generator where the raw files' checksums would be (a store of
    synthetic data installed as ``yahoo``): Table 1 labels its rows so, and its JSON rows carry
    the generator; Coat's records name files and are labelled as before. Merging parameter
    sets keeps it."""
    records = []
    for dataset, propensity, with_at in (("yahoo", "item", False), ("coat", "item", False)):
        for seed in range(2):
            record = make_record(dataset, propensity, with_at, seed, {"mae": 0.8, "mse": 1.0})
            sums = ({SOURCE: "YAHOO_SIZE, seed 0"} if dataset == "yahoo"
                    else {"rating.txt": "ab" * 32})
            record["provenance"] = {"data_checksums": sums}
            records.append(record)
    made = summarize(records, expected_seeds=2)
    assert made.synthetic == {"yahoo": "YAHOO_SIZE, seed 0"}
    assert merge_summaries([summarize([], expected_seeds=2), made]).synthetic == \
        made.synthetic
    rows, _ = table1_rows(made, "markdown")
    assert {r["data"] for r in rows} == {"Yahoo! R3 (synthetic data: YAHOO_SIZE, seed 0)", "Coat"}
    rows, _ = table1_rows(made, "json")
    assert {r["dataset"]: r.get("synthetic_data") for r in rows} == {
        "yahoo": "YAHOO_SIZE, seed 0", "coat": None}
