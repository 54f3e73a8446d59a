"""Tuning means the same under every protocol: the first trial of a study is the values 'atrec
train' would use there (or those of the sets --params names), so the best is never worse than
them on the objective; a tuned entry is replaced only by a better one; a protocol without a
validation split says what it optimises."""

from types import SimpleNamespace

import optuna
import pytest
import yaml
from click.testing import CliRunner
from test_tuning import FAST
from test_tuning import fake_loss as loss

from atrec.cli import main
from atrec.errors import AtrecError
from atrec.names import NO_PROPENSITY
from atrec.protocols import get_protocol, protocol_names
from atrec.params.lookup import default_params, get_params, start_params, tuned_params_path
from atrec.tuning import study_name, tune_config
from atrec.tuning.configs import (
    OBJECTIVE_NOTE,
    TRAINING_OBJECTIVE_NOTE,
    chain_start,
    check_start,
    objective_note_for,
)

# one configuration per protocol that train runs with its default sets
CASES = {"saito2020": ("item", False, "mf-ips"), "ijcai2022": ("item", False, "mf-ips"),
         "binary-icde24": (NO_PROPENSITY, False, "mf-ips"),
         "binary-clean": (NO_PROPENSITY, False, "mf-ips"),
         "binary-icde24-cleantest": (NO_PROPENSITY, False, "mf-ips"),
         "binary-clean-icde24rule": (NO_PROPENSITY, False, "mf-ips"),
         **{p: (NO_PROPENSITY, False, "mf-ips") for p in protocol_names()
            if p.startswith("binary-truth")}}


def test_every_protocol_is_covered():
    assert set(CASES) == set(protocol_names())


@pytest.mark.parametrize("protocol", sorted(CASES))
def test_the_default_first_trial_is_what_train_would_use(protocol, tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    propensity, with_at, method = CASES[protocol]
    dataset = get_protocol(protocol).datasets[0]     # the truth protocols: ML-100K alone
    train_values, train_label = get_params(default_params(protocol), dataset, propensity,
                                           with_at, method, protocol)
    values, label = chain_start(dataset, propensity, with_at, method, start_params(protocol),
                                protocol)
    assert (values, label) == (train_values.as_dict(), train_label)
    assert check_start(None, protocol) == start_params(protocol)


def test_ijcai2022_starts_from_the_protocols_reference_values():
    """The issue's case 4: MF-IPS with the item propensity under ijcai2022."""
    table = get_protocol("ijcai2022").reference_params["coat"]
    assert chain_start("coat", "item", False, "mf-ips", "reference", "ijcai2022") == (
        table["item"], "reference")


def test_binary_clean_starts_from_its_shipped_values_and_honours_params(tmp_path, monkeypatch):
    """The issue's case 3: --params is honoured, and by default the shipped tuned-atrec values
    (what train uses) come first, not the reference ones."""
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    shipped, label = chain_start("coat", NO_PROPENSITY, False, "mf", start_params("binary-clean"),
                                 "binary-clean")
    assert label == "tuned-atrec"
    ref, ref_label = chain_start("coat", NO_PROPENSITY, False, "mf", "reference", "binary-clean")
    assert ref_label == "reference" and ref != shipped
    # a file given as --params is read under the protocol
    path = tmp_path / "mine.yaml"
    mine = {**ref, "dim": 12}
    path.write_text(yaml.safe_dump({"coat": {"mf/none": mine}}))
    assert chain_start("coat", NO_PROPENSITY, False, "mf", str(path), "binary-clean")[0] == mine
    # a set the protocol lacks is one line naming its sets
    with pytest.raises(AtrecError, match="'published' does not exist under protocol "
                                         "'binary-clean'.*tuned-atrec, reference, tuned"):
        check_start("published", "binary-clean")
    assert check_start("none", "binary-clean") is None


def test_tune_config_enqueues_trains_values_and_never_ends_worse(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    data = SimpleNamespace(name="coat", checksums={})        # the objective is injected
    url = f"sqlite:///{tmp_path / 's.db'}"
    out = tune_config(data, NO_PROPENSITY, False, 4, url, objective=loss, objective_note="fake",
                      worker=FAST, method="mf", protocol="binary-clean",
                      study_prefix="atrec-binary-clean")
    train_values, _ = get_params(default_params("binary-clean"), "coat", NO_PROPENSITY, False,
                                 "mf", "binary-clean")
    first = optuna.load_study(study_name=study_name("atrec-binary-clean", "coat", NO_PROPENSITY,
                                                    False, "mf"),
                              storage=url).get_trials(deepcopy=False)[0]
    assert first.params == train_values.as_dict()
    assert first.user_attrs["start"] == "tuned-atrec"
    assert out.best_value <= out.start_value == loss(train_values)


def _outcome(study, value, dim):
    from atrec.params.lookup import HyperParams
    from atrec.tuning.study import StudyOutcome

    return StudyOutcome(study=study, target=2, complete=2, best_value=value,
                        best_params=HyperParams(dim, 1e-3), best_trial=0, dataset="coat",
                        propensity="item", with_at=False)


def test_a_tuned_entry_is_replaced_only_by_a_better_one(tmp_path):
    from atrec.tuning.export import export_best, kept_notes

    path = tmp_path / "tuned_params.yaml"
    export_best([_outcome("atrec-coat-item", 0.6942, 10)], path)
    worse = _outcome("other-coat-item", 0.7679, 20)
    export_best([worse], path)
    entry = yaml.safe_load(path.read_text())["coat"]["item"]
    assert (entry["study"], entry["dim"], entry["best_value"]) == ("atrec-coat-item", 10, 0.6942)
    assert worse.kept == ("atrec-coat-item", 0.6942)
    (note,) = kept_notes([worse], path)
    assert "keeps study atrec-coat-item's values (best 0.6942)" in note and "0.7679" in note
    # the same study resumed, or a better one, replaces it
    export_best([_outcome("other-coat-item", 0.5, 30)], path)
    assert yaml.safe_load(path.read_text())["coat"]["item"]["dim"] == 30
    export_best([_outcome("other-coat-item", 0.9, 40)], path)
    assert yaml.safe_load(path.read_text())["coat"]["item"]["dim"] == 40


def test_a_protocol_without_validation_says_what_it_optimises(tmp_path, monkeypatch):
    icde24_training = ("binary-icde24", "binary-icde24-cleantest")   # no validation part
    assert all(objective_note_for(p) == TRAINING_OBJECTIVE_NOTE for p in icde24_training)
    assert all(objective_note_for(p) == OBJECTIVE_NOTE
               for p in protocol_names() if p not in icde24_training)
    from atrec.tuning.export import outcome_rows

    rows = outcome_rows([_outcome("s", 0.5, 8)], objective="best train loss")
    assert "best train loss" in rows[0] and "best val loss" not in rows[0]


def test_tune_cli_default_start_is_the_protocols(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    result = CliRunner().invoke(main, ["tune", "--protocol", "ijcai2022", "--params",
                                       "published"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "does not exist under protocol 'ijcai2022'" in result.output
    assert tuned_params_path("binary-clean") == (tmp_path / "protocols" / "binary-clean"
                                                 / "tuned_params.yaml")
