"""Fair tuning: one budget for every study, and the values 'atrec train' would use (the default
chain: published, tuned-atrec, reference) as the first trial of its studies, so the best value
found is never worse than theirs on the objective."""

from types import SimpleNamespace

import optuna
import pytest
import yaml
from click.testing import CliRunner
from test_tuning import FAST
from test_tuning import fake_loss as loss

from atrec.cli import main
from atrec.methods.catalogue import catalogue_rows
from atrec.methods.registry import METHODS
from atrec.run_settings import TUNING_BUDGET
from atrec.params.lookup import ENTRY_METADATA, HyperParams, get_params, load_param_table
from atrec.tuning import run_study, study_name, tune_config
from atrec.tuning.configs import START_PARAMS, chain_start, check_start


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
def test_the_start_is_the_first_set_of_the_chain_with_values(method):
    """The first trial comes from the sets train reads, in their order: tuned-atrec before the
    authors' reference values; with AT and no values with AT, those without (epsilon
    sampled); 'none' or no set with values: the sampler alone."""
    shipped = load_param_table("tuned-atrec")[0]["coat"][f"{method}/none"]
    values, label = chain_start("coat", "none", False, method)
    assert label == "tuned-atrec"
    assert values == {k: v for k, v in shipped.items() if k not in ENTRY_METADATA}
    ref = METHODS.get(method).reference_params["coat"][f"{method}/none"]
    assert chain_start("coat", "none", False, method, "reference") == (ref, "reference")
    assert chain_start("coat", "none", True, method, "reference") == (ref, "reference")
    assert chain_start("ml-100k", "none", False, method) is None
    assert chain_start("coat", "none", False, method, "none") is None
    assert chain_start("coat", "none", False, method, None) is None


def test_mf_ips_starts_from_the_published_values_and_a_new_config_from_nothing(tmp_path):
    published = load_param_table("published")[0]["coat"]["item-at"]
    assert chain_start("coat", "item", True) == (published, "published")
    assert chain_start("yahoo", "coat-shipped", True, "dr-jl") is None
    # a with-AT study whose only values are without AT starts from those (epsilon sampled)
    only = {"dim": 10, "lam": 0.001, "lam_imp": 0.01}
    path = tmp_path / "without_at.yaml"
    path.write_text(yaml.safe_dump({"coat": {"dr-jl/coat-shipped": only}}))
    values, label = chain_start("coat", "coat-shipped", True, "dr-jl", str(path))
    assert label.startswith("file:") and values == only and "epsilon" not in values


def test_tune_config_starts_from_the_chain_and_exports_its_value(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    data = SimpleNamespace(name="coat", checksums={})      # the objective is injected
    url = f"sqlite:///{tmp_path / 's.db'}"
    out = tune_config(data, "none", False, 5, url, objective=loss, objective_note="fake",
                      worker=FAST, method="damf", start="reference")
    ref = METHODS.get("damf").reference_params["coat"]["damf/none"]
    first = trials_of(url, study_name("atrec", "coat", "none", False, "damf"))[0]
    assert first.params == ref and first.user_attrs["start"] == "reference"
    assert out.start_value == loss(HyperParams.from_values(ref)) >= out.best_value
    params, _ = get_params("tuned", "coat", "none", False, "damf")
    assert params == out.best_params
    exported = (tmp_path / "tuned_params.yaml").read_text()
    assert f"reference_value: {out.start_value}" in exported
    # by default the first trial is the chain's: here the shipped tuned-atrec values
    out = tune_config(data, "none", False, 3, url.replace("s.db", "t.db"), objective=loss,
                      objective_note="fake", worker=FAST, method="cause")
    entry = yaml.safe_load((tmp_path / "tuned_params.yaml").read_text())["coat"]["cause/none"]
    assert out.start == entry["start"] == "tuned-atrec"
    assert entry["start_value"] == out.start_value >= entry["best_value"]
    assert "reference_value" not in entry
    # the entry reads back as parameters (start / start_value are not hyperparameters)
    assert get_params("tuned", "coat", "none", False, "cause")[0] == out.best_params


def test_tune_cli_takes_the_start_sets_and_refuses_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    start = next(p for p in main.commands["tune"].params if p.name == "start")
    # no default of its own: the protocol's sets (saito2020's START_PARAMS)
    assert start.default is None and check_start(None) == START_PARAMS == (
        "published,tuned-atrec,reference")
    result = CliRunner().invoke(main, ["tune", "--params", str(tmp_path / "nope.yaml")])
    assert result.exit_code != 0 and "does not exist" in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_one_budget_is_the_default_of_tune_and_listed_by_methods():
    trials = next(p for p in main.commands["tune"].params if p.name == "trials")
    assert trials.default == TUNING_BUDGET >= 50
    methods, _, _ = catalogue_rows()
    budgets = {row["method"]: row["tuning budget"] for row in methods}
    assert set(budgets.values()) == {f"{TUNING_BUDGET} trials, 1st = train's values if any"}
