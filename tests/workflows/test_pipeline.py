"""``atrec reproduce --baselines`` (``make reproduce BASELINES=1``): the real stages on Coat.

Nothing is mocked in the training path: the pipeline downloads Coat from the shared copy,
trains Table 1 and the baselines with TensorFlow, and writes the report. Only the selection is
narrowed (two baselines, one propensity, two seeds), and the runner's canonical width (20
replicas at Coat's size, :mod:`atrec.learners.layout`) is set to the two seeds, so that each
fit trains two replicas instead of the two seeds and 18 copies; what a stage does and writes is
the same at any width.
"""

import json

import pytest
import yaml
from click.testing import CliRunner
from conftest import SHARED

from atrec.cli import experiments as cli_experiments
from atrec.cli import main
from atrec.learners import layout
from atrec.names import NO_PROPENSITY
from atrec.run_settings import TUNING_BUDGET
from atrec.params.lookup import DEFAULT_PARAMS, TUNED, TUNED_ATREC, load_param_table
from atrec.workflows import pipeline

SEEDS = 2


@pytest.fixture
def env(reproduce_env):
    return reproduce_env


@pytest.fixture
def narrow(env, monkeypatch):
    """:func:`env` with the canonical width set to the tests' :data:`SEEDS` seeds."""
    monkeypatch.setattr(layout, "STACK", SEEDS)
    return env


def _records(root, method):
    return sorted((root / "results" / "runs" / "coat").glob(f"{method}/*/*/seed-*.json"))


def test_the_default_chain_covers_every_baseline_on_coat():
    """The chain every command reads holds all 28 baseline configurations of Coat, so
    BASELINES=1 tunes nothing there; on Yahoo! R3 it holds only CausE's and DAMF's authors'
    values without AT (reference), so everything else would be tuned, and those not."""
    coat, yahoo = pipeline.plan_baselines(["coat", "yahoo"])
    assert coat.params == yahoo.params == DEFAULT_PARAMS
    assert not coat.needs_tuning and len(coat.configs) == 2 * (2 * 6 + 2)
    assert yahoo.needs_tuning
    assert [c for c in yahoo.configs if c not in yahoo.missing] == [
        ("cause", NO_PROPENSITY, False), ("damf", NO_PROPENSITY, False)]
    table = load_param_table(TUNED_ATREC)[0]["coat"]
    for key in ("cause/none", "cause/none-at", "damf/none", "damf/none-at"):
        assert table[key]["trials"] == TUNING_BUDGET    # retuned with atrec's budget
        assert table[key]["best_value"] <= table[key]["reference_value"]
        assert ("epsilon" in table[key]) == key.endswith("-at")


@pytest.mark.slow
def test_reproduce_with_baselines_trains_them_and_reports_the_benchmark(narrow):
    """The real pipeline: Table 1 (2 seeds), then DR-JL (item) and CausE with the shipped values
    (no tuning stage), and the benchmark table with paired tests in report.md."""
    lines = []
    result = pipeline.reproduce(seeds=SEEDS, variance=False, echo=lines.append, baselines=True,
                                baseline_methods=("dr-jl", "cause"),
                                baseline_propensities=("item",))
    stages = [name for name, _, _ in result.stages]
    assert stages == ["download", "preprocess", "train", "bl-train", "report", "check"]
    assert "4 configurations of dr-jl, cause: 8 runs trained, 0 reused" in lines[3]
    for method in ("dr-jl", "cause"):
        recs = _records(narrow, method)
        assert len(recs) == 4, recs
        for path in recs:
            assert f"/{TUNED_ATREC}/" in str(path)
            assert json.loads(path.read_text())["method"] in (method, f"{method}+at")
    report = (narrow / "results" / "report.md").read_text()
    assert "## Benchmark: methods x propensities" in report
    assert "DR-JL" in report and "CausE" in report and "Paired tests vs MF-IPS" in report
    # a rerun reuses every record
    lines.clear()
    pipeline.reproduce(seeds=SEEDS, variance=False, echo=lines.append, baselines=True,
                       baseline_methods=("dr-jl", "cause"), baseline_propensities=("item",))
    assert "0 runs trained, 8 reused" in lines[3]


@pytest.mark.slow
def test_baselines_without_shipped_values_are_tuned_first(narrow):
    """Where tuned-atrec has no values (here: emptied), the baselines are tuned by the real
    Optuna objective, exported to the tuned file, and trained with --params tuned."""
    from atrec.data.download import download
    from atrec.data.preprocess import preprocess

    download("coat", source=SHARED / "coat", quiet=True)
    preprocess("coat", quiet=True)
    plans = pipeline.plan_baselines(["coat"], ("damf",), ("item",), (False,),
                                    params="published,tuned")   # no shipped values
    assert plans[0].configs == plans[0].missing == [("damf", NO_PROPENSITY, False)]
    assert pipeline.tune_baselines(plans, trials=2) == 1
    tuned = yaml.safe_load((narrow / "results" / "tuned_params.yaml").read_text())
    assert tuned["coat"]["damf/none"]["trials"] == 2
    outcomes = pipeline.train_baselines(plans, seeds=SEEDS)
    assert [len(o.trained) for o in outcomes] == [2]
    assert all(f"/{TUNED}/" in str(p) for p in _records(narrow, "damf"))
    text = pipeline.baseline_report(plans, "published", seeds=SEEDS)
    assert "DAMF" in text


def test_cli_reproduce_passes_baselines(env, monkeypatch):
    """``atrec reproduce --baselines`` (the Makefile's BASELINES=1) reaches the pipeline."""
    seen = {}

    def fake(**kwargs):
        seen.update(kwargs)
        return pipeline.PipelineResult(passed=True)

    monkeypatch.setattr(cli_experiments, "reproduce", fake)   # what the command calls
    result = CliRunner().invoke(main, ["reproduce", "--baselines", "--no-variance"])
    assert result.exit_code == 0, result.output
    assert seen["baselines"] is True
    result = CliRunner().invoke(main, ["reproduce", "--no-variance"])
    assert seen["baselines"] is False
