"""The ML-100K variance experiment (Figure 2): pieces by hand, and end to end on the real u.data."""

import dataclasses
import json
import math
import os

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import SHARED  # noqa: E402  (tests/ is on sys.path)

from atrec.cli import main
from atrec.data.ratings import Ratings
from atrec.data.splits import Split
from atrec.errors import AtrecError
from atrec.learners import mf
from atrec.propensity.builtin import DataItem
from atrec.params.lookup import HyperParams
from atrec.results.records import record_path
from atrec.workflows.variance import (
    VARIANCE_PARAMS,
    MeanSE,
    VarianceRequest,
    describe_params,
    describe_settings,
    load_variance_params,
    parse_min_items,
    protocol_settings,
    run_variance,
    summarize_point,
    variance_dataset,
    variance_params,
    variance_report,
    variance_rows,
)

FEW_STEPS = mf.TrainSettings(steps=30)


@pytest.mark.parametrize("spec, expected", [
    ("1,2,5,10,20,50", (1, 2, 5, 10, 20, 50)), ("all", (1, 2, 5, 10, 20, 50)),
    ("50, 1,50", (1, 50)), ([20, 3], (3, 20)),
])
def test_parse_min_items(spec, expected):
    assert parse_min_items(spec) == expected


@pytest.mark.parametrize("spec", ["0", "", "1,x", "-5", "2.5"])
def test_parse_min_items_rejects(spec):
    with pytest.raises(AtrecError, match="--min-items"):
        parse_min_items(spec)


def test_dataset_label():
    assert variance_dataset(5) == "ml-100k-min5"


def test_data_item_propensity_looks_up_the_fixed_values():
    p = np.array([0.5, 1.0, 0.25])
    train = Ratings.from_arrays([0, 1, 2], [2, 0, 1], [1, 2, 3])
    val = Ratings.from_arrays([0], [2], [4])
    split = Split("x", 0, train, val, val, val, val, 3, 3)
    est = DataItem(p).estimate(split)
    assert est.train.tolist() == [0.25, 0.5, 1.0] and est.val.tolist() == [0.25]


@pytest.mark.parametrize("bad", [np.array([]), np.array([0.5, 0.0]), np.array([1.5]),
                                 np.ones((2, 2))])
def test_data_item_propensity_rejects(bad):
    with pytest.raises(ValueError, match="item_propensity"):
        DataItem(bad)


def test_mean_se_by_hand():
    s = MeanSE.of([1.0, 2.0, 3.0])  # sd = 1, se = 1 / sqrt(3)
    assert (s.mean, s.n) == (2.0, 3) and s.se == pytest.approx(1 / math.sqrt(3))
    assert s.text(2) == "2.00 ± 0.58"
    one = MeanSE.of([0.5])
    assert math.isnan(one.se) and one.text(2) == "0.50"


def _record(seed, with_at, mse, mae):
    return {"seed": seed, "with_at": with_at, "metrics": {"mse": mse, "mae": mae}}


def test_ratio_is_paired_per_seed():
    records = [_record(0, False, 1.0, 0.8), _record(1, False, 2.0, 1.0), _record(2, False, 4.0, 1.0),
               _record(0, True, 0.5, 0.8), _record(1, True, 1.5, 0.5)]
    p = summarize_point(5, 0.01, 10, 20, records)
    assert p.paired_seeds == (0, 1)
    # seed 2 has no AT run: it counts for w/o AT but not for the ratio
    assert p.without["mse"].mean == pytest.approx(7 / 3) and p.with_at["mse"].n == 2
    # per-seed ratios 0.5 and 0.75 (not the ratio of means 1.0 / 1.5)
    assert p.ratio["mse"].mean == pytest.approx(0.625)
    assert p.ratio["mse"].se == pytest.approx(np.std([0.5, 0.75], ddof=1) / math.sqrt(2))
    assert p.ratio["mae"].mean == pytest.approx((1.0 + 0.5) / 2)
    only = summarize_point(5, 0.01, 10, 20, records[:3])
    assert only.ratio is None and only.with_at is None and only.paired_seeds == ()


def test_rows_text_and_numeric():
    records = [_record(s, at, 1.0 + s + 0.5 * at, 0.8) for s in (0, 1) for at in (False, True)]
    p = summarize_point(50, 50 / 583, 943, 603, records)
    text = variance_rows([p])[0]
    assert text["min P(i)"] == "0.0858" and text["seeds"] == 2
    assert text["MSE w/o AT"] == "1.5000 ± 0.5000" and text["MAE w/ / w/o"] == "1.0000 ± 0.0000"
    num = variance_rows([p], numeric=True)[0]
    assert num["MSE w/ AT"] == 2.0 and num["MSE w/ AT se"] == pytest.approx(0.5)
    assert num["min P(i)"] == pytest.approx(50 / 583)


def test_default_params_and_sources(tmp_path):
    hp, label = load_variance_params("default", 5, False)
    assert (hp, label) == (HyperParams(15, 0.001971959151305676), "default")
    hp_at, _ = load_variance_params("default", 1, True)
    assert hp_at.dim == 20 and hp_at.epsilon == pytest.approx(0.16376442797241736)
    with pytest.raises(AtrecError, match="published no parameters for ML-100K"):
        load_variance_params("published", 5, False)
    with pytest.raises(AtrecError, match="ml-100k-min7"):
        load_variance_params("default", 7, False)
    path = tmp_path / "p.yaml"
    path.write_text("ml-100k-min7:\n  item: {dim: 10, lam: 0.5}\n")
    hp, label = load_variance_params(str(path), 7, False)
    assert hp == HyperParams(10, 0.5) and label.startswith("file:")


@pytest.fixture(scope="module")
def reduced_run(ml100k_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    request = VarianceRequest(min_items=(20, 50), at_options=(False,), seeds=(0, 1),
                              settings=FEW_STEPS)
    return root, request, run_variance(request, ml100k_data, root=root, out_dir=root / "fig")


def test_end_to_end_reduced(reduced_run):
    root, _, result = reduced_run
    assert [p.min_items for p in result.points] == [20, 50]
    # the data check of the paper: min P(i) = min n_i / max n_i with Star Wars' 583 ratings
    assert [p.min_relative_propensity for p in result.points] == pytest.approx([20 / 583, 50 / 583])
    assert result.points[1].num_items == 603
    assert result.trained == 4 and result.reused == 0
    for p in result.points:
        assert p.with_at is None and p.ratio is None and p.without["mse"].n == 2
        mae, mse = p.without["mae"].mean, p.without["mse"].mean
        assert np.isfinite(mse) and mse >= mae ** 2 > 0  # Jensen: E[e^2] >= E[|e|]^2
    rec = json.loads(record_path("ml-100k-min50", "data-item", "default", 1, root).read_text())
    assert rec["dataset"] == "ml-100k-min50" and rec["params_source"] == "default"
    assert rec["experiment"]["min_items"] == 50 and rec["experiment"]["data_seed"] == 12345
    assert rec["protocol"]["settings"]["steps"] == 30 and rec["protocol"]["num_items"] == 603
    assert [p.name for p in result.figures] == ["figure2_variance.png", "figure2_variance.pdf"]
    assert all(p.stat().st_size > 1000 for p in result.figures)
    assert "w/o AT: dim=15, lam=0.00197196" in describe_params(result)


def test_fixed_draw_is_shared_and_per_seed_draws_differ(reduced_run, ml100k_data, tmp_path):
    root, request, _ = reduced_run
    fixed = [json.loads(record_path("ml-100k-min20", "data-item", "default", s, root).read_text())
             for s in (0, 1)]
    assert fixed[0]["protocol"]["n_test"] == fixed[1]["protocol"]["n_test"]
    assert [r["experiment"]["data_draw"] for r in fixed] == ["fixed", "fixed"]
    per_seed = dataclasses.replace(request, min_items=(20,), data_draw="per-seed")
    run_variance(per_seed, ml100k_data, root=tmp_path, figures=False)
    recs = [json.loads(record_path("ml-100k-min20", "data-item", "default", s, tmp_path).read_text())
            for s in (0, 1)]
    # same data size, different 50% test draws -> different re-sampled test sizes
    assert [r["experiment"]["data_seed"] for r in recs] == [0, 1]
    assert recs[0]["protocol"]["n_train"] == recs[1]["protocol"]["n_train"]
    assert recs[0]["protocol"]["n_test"] != recs[1]["protocol"]["n_test"]
    # records of one draw are never reused for the other
    with pytest.raises(AtrecError, match="data draw of seed 12345, not 0"):
        run_variance(per_seed, ml100k_data, root=root, figures=False)


def test_each_point_releases_its_loops_after_training(ml100k_data, tmp_path, monkeypatch):
    """Every min_items has its own table sizes, so its compiled loops are dropped once the point
    is trained (atrec.runtime.compiled.retire), unless ATREC_MEMORY_BOUND_MB=0 keeps them."""
    from atrec.runtime import compiled

    request = VarianceRequest(min_items=(50, 20), at_options=(False,), seeds=(0,),
                              settings=FEW_STEPS)
    before = compiled.releases
    run_variance(request, ml100k_data, root=tmp_path / "a", figures=False)
    assert compiled.releases == before + 2
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")
    run_variance(request, ml100k_data, root=tmp_path / "b", figures=False)
    assert compiled.releases == before + 2


def test_rerun_resumes_and_gives_the_same_summary(reduced_run, ml100k_data):
    root, request, first = reduced_run
    again = run_variance(request, ml100k_data, root=root, figures=False)
    assert again.trained == 0 and again.reused == 4 and again.figures == []
    assert variance_rows(again.points) == variance_rows(first.points)
    record_path("ml-100k-min20", "data-item", "default", 0, root).unlink()
    third = run_variance(request, ml100k_data, root=root, figures=False)
    assert third.trained == 1 and third.reused == 3
    assert third.points[0].without["mse"].mean == pytest.approx(
        first.points[0].without["mse"].mean, rel=1e-5)


@pytest.fixture()
def cli_env(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("ATREC_ML_100K_SOURCE", str(SHARED / "ml-100k"))
    return tmp_path


@pytest.mark.parametrize("args, fragment", [
    (["--min-items", "0"], "--min-items 0"),
    (["--min-items", "1,a"], "--min-items 1,a"),
    (["--seeds", "x"], "--seeds x"),
    (["--params", "published"], "published no parameters for ML-100K"),
    (["--min-items", "600", "--without-at"], "the most-rated movie has 583"),
    (["--min-items", "3", "--without-at"], "no parameters for ml-100k-min3/data-item"),
    (["--tune", "--params", "published"], "--tune writes the tuned set"),
])
def test_cli_bad_input_is_one_line(cli_env, args, fragment):
    result = CliRunner().invoke(main, ["variance", "--quiet"] + args)
    assert result.exit_code != 0
    assert fragment in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_cli_downloads_trains_and_prints_json(cli_env):
    result = CliRunner().invoke(main, ["variance", "--min-items", "50", "--seeds", "1",
                                       "--without-at", "--format", "json", "--quiet",
                                       "--no-figure"])
    assert result.exit_code == 0, result.output
    start = result.output.index("[")
    rows = json.loads(result.output[start:result.output.rindex("]") + 1])
    assert len(rows) == 1 and rows[0]["min_items"] == 50 and rows[0]["seeds"] == 1
    assert rows[0]["MSE w/ AT"] is None and 0.5 < rows[0]["MSE w/o AT"] < 2.0
    assert "parameters: default set" in result.output


def test_tuning_per_min_items_feeds_the_tuned_set(ml100k_data, tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    request = VarianceRequest(min_items=(50,), at_options=(False,), seeds=(0,), params="tuned",
                              settings=FEW_STEPS, tune_trials=2)
    result = run_variance(request, ml100k_data, figures=False)
    (study,) = result.studies
    assert study.study == "atrec-ml-100k-min50-data-item" and study.complete == 2
    best = study.best_params
    assert load_variance_params("tuned", 50, False)[0] == best
    rec = json.loads(record_path("ml-100k-min50", "data-item", "tuned", 0, tmp_path).read_text())
    assert rec["params"] == best.as_dict() and rec["params_source"].startswith("tuned")
    # a rerun finds the study complete and the record present: nothing is run again
    again = run_variance(request, ml100k_data, figures=False)
    assert again.studies[0].ran == 0 and again.trained == 0


def test_request_rejects_unknown_data_draw():
    with pytest.raises(ValueError, match="unknown data_draw 'each'"):
        VarianceRequest(data_draw="each")


def test_tuning_needs_the_tuned_set():
    with pytest.raises(ValueError, match="params must be 'tuned'"):
        VarianceRequest(tune_trials=3)
    with pytest.raises(ValueError, match="tune_trials must be a positive integer"):
        VarianceRequest(tune_trials=0, params="tuned")


def test_missing_parameters_fail_before_any_training(ml100k_data, tmp_path):
    request = VarianceRequest(min_items=(50, 7), at_options=(False,), seeds=(0,),
                              settings=FEW_STEPS)
    with pytest.raises(AtrecError, match="no parameters for ml-100k-min7/data-item"):
        run_variance(request, ml100k_data, root=tmp_path, figures=False)
    assert not (tmp_path / "runs").exists()


def test_records_of_other_settings_are_not_reused(reduced_run, ml100k_data):
    root, request, _ = reduced_run
    other = dataclasses.replace(request, settings=mf.TrainSettings(steps=31))
    with pytest.raises(AtrecError, match=r"made with other settings: steps 30 \(now 31\)"):
        run_variance(other, ml100k_data, root=root, figures=False)


def test_protocol_settings_and_their_description():
    assert protocol_settings() == (None, None)
    settings, _ = protocol_settings(steps=40)
    assert settings == mf.TrainSettings(steps=40)
    request = VarianceRequest(at_options=(False,), settings=settings)
    assert describe_settings(request) == (
        "settings: MF-IPS 40 steps; one data draw (seed 12345) for all seeds")
    assert describe_settings(VarianceRequest(at_options=(False,), data_draw="per-seed")) == (
        "settings: MF-IPS 500 steps (the paper's protocol); a data draw per seed")


def test_end_to_end_with_at_reduced(ml100k_data, tmp_path):
    from atrec.learners import at

    short_at = at.ATSettings(pre_steps=20, iterations=2, steps_per_iteration=3)
    request = VarianceRequest(min_items=(50,), seeds=(0, 1), settings=FEW_STEPS,
                              at_settings=short_at)
    result = run_variance(request, ml100k_data, root=tmp_path)
    (p,) = result.points
    assert p.paired_seeds == (0, 1) and result.trained == 4
    recs = {(at_, s): json.loads(record_path("ml-100k-min50", "data-item-at" if at_ else "data-item",
                                             "default", s, tmp_path).read_text())
            for at_ in (False, True) for s in (0, 1)}
    ratios = [recs[True, s]["metrics"]["mse"] / recs[False, s]["metrics"]["mse"] for s in (0, 1)]
    assert p.ratio["mse"].mean == pytest.approx(np.mean(ratios))
    at_rec = recs[True, 1]
    assert at_rec["params"]["epsilon"] == pytest.approx(0.16376442797241736)
    assert at_rec["protocol"]["settings"]["pre_steps"] == 20
    assert len(at_rec["trace"]["test_mse"]) == 6 and at_rec["experiment"]["data_seed"] == 12345
    # A1/A2 and MF-IPS see the same data and weights: same train/test sizes per seed
    assert at_rec["protocol"]["n_test"] == recs[False, 1]["protocol"]["n_test"]
    assert "w/ AT: dim=20, lam=0.00100694, epsilon=0.163764" in describe_params(result)
    assert describe_settings(request) == (
        "settings: MF-IPS 30 steps; AT 20 pre-training + 2 x 3 pseudo-labelling steps; "
        "one data draw (seed 12345) for all seeds")
    assert [f.name for f in result.figures] == ["figure2_variance.png", "figure2_variance.pdf"]
    # the report for 'atrec reproduce' reuses every record and writes the table beside the figure
    report = variance_report(request, ml100k_data, root=tmp_path)
    assert report.result.trained == 0 and report.result.reused == 4
    assert set(report.outputs) == {"variance table", "figure 2 (png)", "figure 2 (pdf)"}
    text = report.outputs["variance table"].read_text()
    assert "| 50 " in text and p.ratio["mse"].text() in text
    assert "parameters: default set" in text and "AT 20 pre-training" in text
    assert report.summary.endswith(f"MSE w/ / w/o AT by min_items: 50: {p.ratio['mse'].mean:.3f}")


def test_cli_variance_progress_lines_and_quiet(data_dir, tmp_path, monkeypatch):
    """One line per (min_items, method) with the counts on standard error; none with --quiet."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    from conftest import SHARED

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, ATREC_RESULTS_DIR=str(tmp_path / "results"), PYTHONPATH=str(repo),
               ATREC_ML_100K_SOURCE=str(SHARED / "ml-100k"), TF_CPP_MIN_LOG_LEVEL="3")
    # two points without AT: a line per (min_items, method) as with AT (whose loop would cost
    # this process its compilation; test_end_to_end_with_at_reduced trains it)
    args = [sys.executable, "-m", "atrec", "variance", "--min-items", "20,50", "--seeds", "2",
            "--without-at", "--steps", "5", "--pre-steps", "5", "--no-figure"]
    first = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    lines = [line for line in first.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 2, first.stderr
    assert re.match(r"\[1/2\] ml-100k-min20 \S+: 2 seed\(s\) trained, 0 reused; 2/4 seeds, "
                    r"\d+:\d\d elapsed, about \d+:\d\d left", lines[0]), lines
    assert re.match(r"\[2/2\] ml-100k-min50 \S+: 2 seed\(s\) trained, 0 reused; 4/4 seeds", lines[1])
    quiet = subprocess.run(args + ["--quiet"], cwd=repo, env=env, capture_output=True, text=True,
                           timeout=300)
    assert quiet.returncode == 0 and not any(line.startswith("[") for line in
                                             quiet.stderr.splitlines()), quiet.stderr


def test_the_default_chain_takes_the_whole_grid_from_one_set(tmp_path, monkeypatch):
    """Without --params the variance reads the chain of every command, its documented set
    before the user's tuned values; the grid takes its values from the first set that has
    every point, and when none has, one line names the sets and the tune command."""
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    assert VARIANCE_PARAMS == "published,tuned-atrec,reference,default,tuned"
    option = next(p for p in main.commands["variance"].params if p.name == "params")
    assert option.default == VARIANCE_PARAMS == VarianceRequest().params
    grid = variance_params(VARIANCE_PARAMS, (1, 50), (False, True))
    assert {label for _, label in grid.values()} == {"default"}
    assert grid[(50, True)] == load_variance_params("default", 50, True)
    (tmp_path / "tuned_params.yaml").write_text(
        "ml-100k-min7:\n  data-item: {dim: 5, lam: 0.5}\n"
        "ml-100k-min50:\n  data-item: {dim: 10, lam: 0.25}\n")
    # 50 alone: the documented set comes first; 7 alone: only tuned has it
    assert variance_params(VARIANCE_PARAMS, (50,), (False,))[(50, False)][1] == "default"
    hp, label = variance_params(VARIANCE_PARAMS, (7, 50), (False,))[(50, False)]
    assert label.startswith("tuned:") and hp == HyperParams(10, 0.25)
    with pytest.raises(AtrecError) as err:
        variance_params(VARIANCE_PARAMS, (5, 7), (False,))
    msg = str(err.value)
    assert "\n" not in msg and "in published, tuned-atrec, reference, default, tuned" in msg
    assert "no parameters for ml-100k-min7/data-item" not in msg      # default has 5, tuned 7
    assert "'atrec variance --tune --min-items 5,7 --without-at'" in msg
    with pytest.raises(AtrecError, match="no parameters for ml-100k-min3/data-item-at in"):
        variance_params(VARIANCE_PARAMS, (3,), (True,))
