"""``atrec reproduce --binary``'s planning (which configurations, which parameter set), without
training: a tuned file under binary-clean holds values for MF on Coat only, and a binary method
registered here ships no values for any dataset."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from atrec.cli import experiments as cli_experiments
from atrec.cli import main
from atrec.methods.binary.ips import BinaryMF
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.methods.registry import every_form, method_class
from atrec.names import NO_PROPENSITY, config_key
from atrec.results.params import tuned_params_path
from atrec.workflows import binary as stage
from atrec.workflows import pipeline

ROOT = Path(__file__).resolve().parents[2]


class NoValues(BinaryMF):
    name, label, reference_params = "no-values", "No values", {}


def _shipping(protocol, dataset):
    """The registered binary methods, in each form, that ship reference values for ``dataset``
    (the code's constants, the same in either form)."""
    key = lambda m: config_key(NO_PROPENSITY, False, method_class(m, protocol).name)
    return [m for m in every_form(protocol)
            if key(m) in (method_class(m, protocol).reference_params.get(dataset) or {})]


def test_plan_reads_tuned_values_where_they_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    path = tuned_params_path("binary-clean")
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump({"coat": {"mf/none": {"dim": 8, "lam": 1e-3, "lr": 0.01,
                                                         "batch_size": 128}}}))
    BINARY_METHODS.names()
    BINARY_METHODS.register(NoValues)
    try:
        plans, notices = stage.plan_binary(["coat", "yahoo"])
        shipped = {(p, d): _shipping(p, d) for p in ("binary-icde24", "binary-clean")
                   for d in ("coat", "yahoo")}
    finally:
        BINARY_METHODS.unregister(NoValues.name)
    got = {(p.protocol, p.dataset, p.params): p.methods for p in plans}
    coat = shipped["binary-icde24", "coat"]
    assert "mf" in coat and "no-values" not in coat
    assert "escm2-dr+form=corrected" in coat and "escm2-dr+form=coded" in shipped[
        "binary-clean", "coat"]                   # every form, the code's under binary-clean too
    assert got == {
        ("binary-icde24", "coat", "reference"): tuple(coat),
        ("binary-icde24", "yahoo", "reference"): tuple(shipped["binary-icde24", "yahoo"]),
        ("binary-clean", "coat", "tuned"): ("mf",),
        ("binary-clean", "coat", "reference"): tuple(
            m for m in shipped["binary-clean", "coat"] if m != "mf"),
        ("binary-clean", "yahoo", "reference"): tuple(shipped["binary-clean", "yahoo"]),
    }
    assert sum("no-values left out" in n for n in notices) == 4   # 2 protocols x 2 datasets


def test_train_binary_asks_train_for_each_plan(monkeypatch):
    asked = []
    monkeypatch.setattr(stage, "train", lambda request, echo=None: asked.append(request) or [])
    plans = [stage.BinaryPlan("binary-icde24", "coat", "reference", ("mf", "mf-ips")),
             stage.BinaryPlan("binary-clean", "coat", "tuned", ("mf",))]
    assert stage.train_binary(plans, seeds=3) == []
    assert [(r.protocol, r.datasets, r.params, r.methods, r.seeds, r.at_options,
             r.propensities) for r in asked] == [
        ("binary-icde24", ["coat"], "reference", ["mf", "mf-ips"], [0, 1, 2], [False],
         [NO_PROPENSITY]),
        ("binary-clean", ["coat"], "tuned", ["mf"], [0, 1, 2], [False], [NO_PROPENSITY])]


def test_cli_and_makefile_pass_binary(reproduce_env, monkeypatch):
    """``atrec reproduce --binary`` and ``make reproduce BINARY=1`` reach the pipeline."""
    seen = {}

    def fake(**kwargs):
        seen.update(kwargs)
        return pipeline.PipelineResult(passed=True)

    monkeypatch.setattr(cli_experiments, "reproduce", fake)
    result = CliRunner().invoke(main, ["reproduce", "--binary", "--no-variance"])
    assert result.exit_code == 0, result.output
    assert seen["binary"] is True
    CliRunner().invoke(main, ["reproduce", "--no-variance"])
    assert seen["binary"] is False
    make = [shutil.which("make") or pytest.skip("no make here"), "-n", "-C", str(ROOT),
            "reproduce", "STAMP=Makefile"]
    assert "--binary" in subprocess.run([*make, "BINARY=1"], capture_output=True, text=True,
                                        check=True).stdout
    assert "--binary" not in subprocess.run(make, capture_output=True, text=True,
                                            check=True).stdout
