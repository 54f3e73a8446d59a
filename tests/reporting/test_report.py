import json

import numpy as np
import pytest
from click.testing import CliRunner
from synthetic_records import write_records

from atrec.cli import main
from atrec.data.ratings import RatingData, Ratings
from atrec.errors import AtrecError
from atrec.reporting.claims import HOLDS
from atrec.reporting.report import report


def test_selected_dataset_without_results_is_dashes_and_a_notice(coat_gaps):
    out = report(datasets=["yahoo", "coat"], root=coat_gaps, figures=False, claims=False,
                 significance=False, fmt="csv", expected_seeds=5)
    lines = out.text.splitlines()
    assert lines[2] == "Yahoo! R3,uniform,-,-,-,-,-,-"
    assert out.notices == ("no results for Yahoo! R3: run atrec train --dataset yahoo",)


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
    import atrec.reporting.report

    rng = np.random.default_rng(0)
    train = Ratings.from_arrays(rng.integers(0, 4, 40), rng.integers(0, 5, 40), [1, 2, 3, 4, 5] * 8)
    test = Ratings.from_arrays(rng.integers(0, 4, 20), rng.integers(0, 5, 20), [1, 1, 2, 3] * 5)
    monkeypatch.setattr(atrec.reporting.report, "load_processed",
                        lambda name: RatingData(name, train, test, 4, 5, {}))
    out = report(root=coat_gaps, stats=True, expected_seeds=5, figures_dir=tmp_path)
    assert "Data statistics" in out.text
    names = sorted(p.name for p in out.figures)
    assert names == sorted(f"{f}.{e}" for f in ("figure1_rating_distributions",
                                                "figure3_pseudo_labelling", "figure4_test_mse")
                           for e in ("png", "pdf"))
    assert out.notices == ()


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

