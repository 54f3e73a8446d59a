"""Tuning on several validation splits (``atrec tune --splits N``): one study per split, the
spread of their best values reported and stored, one configuration exported by the mean rule,
``--splits 1`` exactly the single-split tuning, and a re-run that runs nothing again."""

import json
import math
import statistics
from types import SimpleNamespace

import optuna
import pytest
import yaml
from click.testing import CliRunner
from test_tuning import FAST

from atrec.cli import main
from atrec.names import NO_PROPENSITY, config_key
from atrec.params.budget import params_budget
from atrec.params.lookup import HyperParams, get_params
from atrec.run_settings import TUNING_SEED
from atrec.tuning import study_name
from atrec.tuning.configs import split_study_name, tune_config_splits
from atrec.tuning.splits import combine, measured, split_seeds
from atrec.tuning.study import StudyOutcome

DATA = SimpleNamespace(name="coat", checksums={})       # the objective is injected
PREFIX = "atrec-binary-clean"
BASE = study_name(PREFIX, "coat", NO_PROPENSITY, False, "mf")
KEY = config_key(NO_PROPENSITY, False, "mf")


class SplitLoss:
    """A fake objective per split: its minimum moves with the seed (dim 10 + 40 * (seed -
    TUNING_SEED)), so each split's study finds another winner; every call is counted. Scaled
    below ln 2 so that a binary protocol's study does not count as failed. (The splits'
    studies share the sampler's seed, so they try the same first values: only the split
    decides which wins.)"""

    def __init__(self):
        self.calls = []

    def __call__(self, seed: int):
        def loss(params: HyperParams) -> float:
            self.calls.append((seed, params.as_dict()))
            return self.value(seed, params)
        return loss

    @staticmethod
    def value(seed: int, params: HyperParams) -> float:
        best_dim = 10 + 40 * (seed - TUNING_SEED)
        return (((params.dim - best_dim) / 10) ** 2 + (math.log10(params.lam) + 3) ** 2) / 100


def _tune(tmp_path, splits, objective_for, trials=4):
    return tune_config_splits(
        DATA, NO_PROPENSITY, False, trials, f"sqlite:///{tmp_path / 's.db'}", splits,
        export_path=tmp_path / "tuned_params.yaml", objective_for=objective_for,
        objective_note="fake", worker=FAST, method="mf", protocol="binary-clean",
        study_prefix=PREFIX)


def test_split_seeds_start_at_the_single_split_seed_and_name_the_others():
    assert split_seeds(3) == (TUNING_SEED, TUNING_SEED + 1, TUNING_SEED + 2)
    assert split_study_name(BASE, TUNING_SEED) == BASE
    assert split_study_name(BASE, TUNING_SEED + 2) == f"{BASE}-seed{TUNING_SEED + 2}"
    with pytest.raises(ValueError, match="splits must be a positive integer"):
        split_seeds(0)


def test_two_splits_make_two_studies_report_the_spread_and_export_the_mean_winner(
        tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    loss = SplitLoss()
    out = _tune(tmp_path, 2, loss)
    url = f"sqlite:///{tmp_path / 's.db'}"
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(url))
    assert names == sorted([BASE, f"{BASE}-seed{TUNING_SEED + 1}"])
    studies = [optuna.load_study(study_name=n, storage=url) for n in (names[0], names[1])]
    assert all(len(s.trials) == 4 for s in studies)
    bests = [s.best_trial for s in studies]
    assert bests[0].params != bests[1].params       # the splits disagree: the rule decides
    # the spread, recomputed from the studies themselves
    s = out.spread
    assert s.seeds == split_seeds(2) and s.best_values == tuple(b.value for b in bests)
    spread = s.summary()
    assert spread["min"] == min(b.value for b in bests)
    assert spread["max"] == max(b.value for b in bests)
    assert spread["sd"] == pytest.approx(statistics.stdev(b.value for b in bests))
    # the rule: each winner measured by hand on both splits, the lowest mean exported
    means = [statistics.fmean(SplitLoss.value(seed, HyperParams.from_values(b.params))
                              for seed in split_seeds(2)) for b in bests]
    chosen = min(range(2), key=lambda i: (means[i], i))
    assert out.best_params.as_dict() == bests[chosen].params
    assert out.best_value == pytest.approx(means[chosen])
    entry = yaml.safe_load((tmp_path / "tuned_params.yaml").read_text())["coat"][KEY]
    assert entry["study"] == BASE and entry["best_value"] == pytest.approx(means[chosen])
    assert entry["splits"]["n"] == 2 and entry["splits"]["rule"] == "mean"
    assert entry["splits"]["chosen_seed"] == split_seeds(2)[chosen]
    assert entry["splits"]["sd"] == pytest.approx(spread["sd"])
    assert entry["dim"] == bests[chosen].params["dim"]
    # --params tuned reads the entry (the splits record is not taken for a parameter)
    tuned, _ = get_params(str(tmp_path / "tuned_params.yaml"), "coat", NO_PROPENSITY, False,
                          "mf", "binary-clean")
    assert tuned.as_dict() == bests[chosen].params
    # and tables say what the values cost
    assert params_budget(f"file:{tmp_path / 'tuned_params.yaml'}", "coat", KEY,
                         protocol="binary-clean") == "4 trials x 2 splits"
    # every split's result is stored beside the tuned file, and the report shows it
    record = json.loads((tmp_path / "tuning_spread.json").read_text())[BASE]
    assert [x["best_value"] for x in record["splits"]] == list(s.best_values)
    assert [x["mean"] for x in record["splits"]] == pytest.approx(means)
    # a re-run resumes: no trial and no cross measurement again
    loss.calls.clear()
    again = _tune(tmp_path, 2, loss)
    assert loss.calls == [] and again.ran == 0
    assert again.best_params == out.best_params and again.best_value == out.best_value


def test_one_split_is_the_single_split_tuning(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    out = _tune(tmp_path, 1, SplitLoss())
    assert out.study == BASE and out.spread is None
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert [s.study_name for s in optuna.get_all_study_summaries(url)] == [BASE]
    entry = yaml.safe_load((tmp_path / "tuned_params.yaml").read_text())["coat"][KEY]
    assert "splits" not in entry and entry["best_value"] == out.best_value
    assert not (tmp_path / "tuning_spread.json").exists()


def test_a_measurement_on_another_split_is_run_once_and_kept_in_its_study(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = optuna.create_study(study_name="s", storage=url)
    study.enqueue_trial({"dim": 10, "lam": 1e-3})
    study.optimize(lambda t: t.suggest_int("dim", 5, 50) + t.suggest_float("lam", 1e-6, 1.0),
                   n_trials=1)
    loss = SplitLoss()
    # a trial of the study at these values: its value, no run
    assert measured(study, {"dim": 10, "lam": 1e-3}, loss(TUNING_SEED)) == 10.001
    assert loss.calls == []
    other = {"dim": 20, "lam": 1e-2}
    value = measured(study, other, loss(TUNING_SEED))
    assert value == SplitLoss.value(TUNING_SEED, HyperParams(20, 1e-2)) and len(loss.calls) == 1
    again = optuna.load_study(study_name="s", storage=url)      # another worker, later
    assert measured(again, other, loss(TUNING_SEED)) == value and len(loss.calls) == 1
    assert len(again.trials) == 1                   # no trial added: the count stays exact


def _outcome(seed, value, dim, failed=None):
    return StudyOutcome(study=f"s{seed}", target=2, complete=2, best_value=value,
                        best_params=HyperParams(dim, 1e-3), best_trial=0, seed=seed,
                        failed=failed)


def test_the_rule_prefers_the_winner_that_holds_on_every_split():
    """Split 0's winner is best on its own split (0.1) but poor on the others (0.9, 0.9: mean
    0.633); split 1's is 0.3 on its own and 0.4, 0.35 elsewhere (mean 0.35): it is exported."""
    table = {(0, 1): 0.9, (0, 2): 0.9, (1, 0): 0.4, (1, 2): 0.35, (2, 0): 0.6, (2, 1): 0.7}
    outs = [_outcome(0, 0.1, 10), _outcome(1, 0.3, 20), _outcome(2, 0.2, 30)]
    total = combine(outs, lambda i, j: table[(i, j)])
    assert total.best_params.dim == 20 and total.best_value == pytest.approx(1.05 / 3)
    assert total.study == "s0" and total.spread.chosen == 1
    assert total.spread.summary() == pytest.approx({"min": 0.1, "max": 0.3, "sd": 0.1})
    assert total.failed is None


def test_an_entry_on_other_splits_is_replaced_not_compared(tmp_path):
    """One split's best (another prefix's, 0.05) and a mean over two splits (0.2) are not the
    same measure: the newer replaces the entry, whichever is lower."""
    from atrec.tuning.export import export_best

    path = tmp_path / "tuned_params.yaml"
    single = _outcome(TUNING_SEED, 0.05, 10)
    single.study, single.dataset, single.propensity = "other-coat-item", "coat", "item"
    export_best([single], path)
    outs = [_outcome(TUNING_SEED, 0.1, 20), _outcome(TUNING_SEED + 1, 0.3, 30)]
    for o in outs:
        o.dataset, o.propensity = "coat", "item"
    total = combine(outs, lambda i, j: 0.3 if i == 0 else 0.1)
    export_best([total], path)
    entry = yaml.safe_load(path.read_text())["coat"]["item"]
    assert total.kept is None and entry["dim"] == 20 and entry["splits"]["n"] == 2
    assert entry["best_value"] == pytest.approx(0.2)
    export_best([single], path)              # and a single split's does not stand beside it
    assert yaml.safe_load(path.read_text())["coat"]["item"]["dim"] == 10


def test_a_failed_split_fails_the_configuration():
    outs = [_outcome(0, 0.1, 10), _outcome(1, 0.69, 20, failed="at ln 2")]
    total = combine(outs, lambda i, j: 0.5)
    assert total.failed == "split seed 1: at ln 2"


def test_report_shows_the_spread_and_cli_refuses_zero_splits(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    root = tmp_path / "protocols" / "binary-clean"
    root.mkdir(parents=True)
    _tune(root, 2, SplitLoss())
    result = CliRunner().invoke(main, ["report", "--table", "tuning-spread", "--protocol",
                                       "binary-clean", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["split seed"] for r in rows] == list(split_seeds(2))
    assert sum(r["exported"] == "*" for r in rows) == 1
    latex = CliRunner().invoke(main, ["report", "--table", "tuning-spread", "--protocol",
                                      "binary-clean", "--format", "latex"])
    assert latex.exit_code == 0 and r"batch\_size=" in latex.stdout
    empty = CliRunner().invoke(main, ["report", "--table", "tuning-spread"])
    assert empty.exit_code == 0 and "atrec tune --splits 3" in empty.stderr
    bad = CliRunner().invoke(main, ["tune", "--splits", "0"])
    assert bad.exit_code == 2 and "--splits" in bad.output


@pytest.mark.slow
def test_cli_tune_on_two_real_splits_measures_each_on_its_own_split(coat_dir, tmp_path):
    """``atrec tune --splits 2`` on Coat (binary-clean, MF, one trial) after a plain tune: the
    plain tune's study is the first split's and resumes; two studies, each measuring the shared
    first trial on its own split (so two values), the spread printed and stored, one entry
    exported with its splits; a second call runs nothing."""
    env = {"ATREC_DATA_DIR": str(coat_dir), "ATREC_RESULTS_DIR": str(tmp_path)}
    args = ["tune", "--protocol", "binary-clean", "--dataset", "coat", "--method", "mf",
            "--without-at", "--trials", "1"]
    # the single-split tuning first: --splits 2 then resumes its study and adds one
    single = CliRunner().invoke(main, [*args, "--format", "json"], env=env)
    assert single.exit_code == 0, single.output
    assert [(r["study"], r["ran"]) for r in json.loads(single.stdout)] == [(BASE, 1)]
    args += ["--splits", "2"]
    result = CliRunner().invoke(main, [*args, "--format", "json"], env=env)
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert (row["study"], row["splits"], row["ran"]) == (BASE, 2, 1)
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    values = [optuna.load_study(study_name=split_study_name(BASE, seed), storage=url)
              .trials[0].value for seed in split_seeds(2)]
    assert values[0] != values[1]           # the same values, measured on two splits
    assert f"best per split {TUNING_SEED}: {values[0]:.4f}" in result.stderr
    root = tmp_path / "protocols" / "binary-clean"
    entry = yaml.safe_load((root / "tuned_params.yaml").read_text())["coat"][KEY]
    assert entry["splits"]["best_values"] == values
    assert entry["best_value"] == pytest.approx(statistics.fmean(values))
    assert set(json.loads((root / "tuning_spread.json").read_text())) == {BASE}
    again = json.loads(CliRunner().invoke(main, [*args, "--format", "json"], env=env).stdout)
    key = "val loss (mean over splits)"
    assert row[key] == pytest.approx(statistics.fmean(values))
    assert again[0]["ran"] == 0 and again[0][key] == row[key]
