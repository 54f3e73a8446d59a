"""Fair tuning: one budget for every study, and a method's reference values as the first trial
of its studies, so the best value found is never worse than theirs on the objective."""

from types import SimpleNamespace

import optuna
import pytest
from test_tuning import FAST
from test_tuning import fake_loss as loss

from atrec.cli import main
from atrec.methods.catalogue import catalogue_rows
from atrec.methods.registry import METHODS
from atrec.protocol import TUNING_BUDGET
from atrec.results.params import HyperParams, get_params
from atrec.tuning import run_study, study_name, tune_config
from atrec.tuning.configs import reference_start


def trials_of(url, name):
    return optuna.load_study(study_name=name, storage=url).get_trials(deepcopy=False)


def test_start_values_are_the_first_trial_and_bound_the_best(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    start = {"dim": 45, "lam": 0.3}
    out = run_study("fair", loss, False, 6, url, worker=FAST, first_trial=start)
    first = trials_of(url, "fair")[0]
    assert first.params == start and first.user_attrs["start"] == "reference"
    assert out.start_value == loss(HyperParams(45, 0.3)) == first.value
    assert out.best_value <= out.start_value and out.complete == 6
    # a resumed study does not enqueue the start again
    out = run_study("fair", loss, False, 8, url, worker=FAST, first_trial=start)
    trials = trials_of(url, "fair")
    assert sum("start" in t.user_attrs for t in trials) == 1 and out.complete == 8


def test_with_at_the_start_fixes_the_given_names_and_samples_epsilon(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    run_study("fair-at", loss, True, 2, url, worker=FAST, first_trial={"dim": 45, "lam": 0.3})
    first = trials_of(url, "fair-at")[0]
    assert (first.params["dim"], first.params["lam"]) == (45, 0.3)
    assert 1e-3 <= first.params["epsilon"] <= 1


@pytest.mark.parametrize("method", ["cause", "damf"])
def test_reference_start_is_the_methods_reference_values(method):
    ref = METHODS.get(method).reference_params["coat"][f"{method}/none"]
    assert reference_start("coat", "none", False, method) == ref
    assert reference_start("coat", "none", True, method) == ref   # epsilon left to the sampler
    assert reference_start("ml-100k", "none", False, method) is None
    assert reference_start("coat", "item", False, "mf-ips") is None
    assert reference_start("coat", "item", True, "dr-jl") is None


def test_tune_config_starts_from_reference_and_exports_its_value(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    data = SimpleNamespace(name="coat", checksums={})      # the objective is injected
    url = f"sqlite:///{tmp_path / 's.db'}"
    out = tune_config(data, "none", False, 5, url, objective=loss, objective_note="fake",
                      worker=FAST, method="damf")
    ref = METHODS.get("damf").reference_params["coat"]["damf/none"]
    first = trials_of(url, study_name("atrec", "coat", "none", False, "damf"))[0]
    assert first.params == ref
    assert out.start_value == loss(HyperParams.from_values(ref)) >= out.best_value
    params, _ = get_params("tuned", "coat", "none", False, "damf")
    assert params == out.best_params
    exported = (tmp_path / "tuned_params.yaml").read_text()
    assert f"reference_value: {out.start_value}" in exported


def test_one_budget_is_the_default_of_tune_and_listed_by_methods():
    trials = next(p for p in main.commands["tune"].params if p.name == "trials")
    assert trials.default == TUNING_BUDGET >= 50
    methods, _, _ = catalogue_rows()
    budgets = {row["method"]: row["tuning budget"] for row in methods}
    assert budgets["mf-ips"] == budgets["dr-jl"] == f"{TUNING_BUDGET} trials"
    assert budgets["damf"] == f"{TUNING_BUDGET} trials, 1st = reference values"
