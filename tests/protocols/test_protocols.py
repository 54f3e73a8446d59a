"""Protocols as registered objects: the registry, saito2020 as today's settings, ijcai2022's
split against the permutation docs/protocols.md ("ijcai2022") gives, its parameter set and its
schedule on a tiny case."""

import json

import numpy as np
import pytest

from atrec.errors import AtrecError
from atrec.run_settings import ATSettings, TrainSettings
from atrec.protocols import Protocol, get_protocol, protocol_names
from atrec.protocols.base import Schedule, validate_protocol_class
from atrec.protocols.ijcai2022 import mcar_slice_mask
from atrec.reporting.common import train_hint
from atrec.params.lookup import get_params


def test_registry_lists_both_and_defaults_to_saito2020(tmp_path):
    assert protocol_names()[:2] == ("saito2020", "ijcai2022")
    assert get_protocol().name == "saito2020"
    with pytest.raises(AtrecError, match="unknown protocol 'nope'"):
        get_protocol("nope")
    assert get_protocol("saito2020").results_root(tmp_path) == tmp_path
    assert get_protocol("ijcai2022").results_root(tmp_path) == tmp_path / "protocols" / "ijcai2022"


def test_saito2020_settings_are_todays_defaults():
    p = get_protocol("saito2020")
    for method in ("mf-ips", "cause", "damf"):
        assert p.train_settings(method) == TrainSettings()
    assert p.at_settings() == ATSettings()
    assert TrainSettings().as_dict() == {"steps": 500, "batch_size": 1024, "learning_rate": 0.01,
                                         "loss": "snips", "batch_seed": 12345}


def test_ijcai2022_schedule_per_method():
    p = get_protocol("ijcai2022")
    s = p.train_settings("mf-ips")
    assert (s.steps, s.batch_size, s.learning_rate, s.bias_init) == (2500, 2048, 0.01, "zero")
    assert s.as_dict()["bias_init"] == "zero"
    # DAMF: 125 cycles of 20 predictor + 20 adversary steps, 1,024 observed + 1,024 cells each
    d = p.train_settings("damf")
    assert (d.steps, d.batch_size) == (5000, 1024)
    assert p.train_settings("ijcai-dr").steps == 5000
    assert p.metrics == ("mae", "mse", "ndcg5_ijcai", "recall5_ijcai")


def test_ijcai2022_split_is_the_fixed_permutation_and_binomial_slice(tiny_data):
    data = tiny_data   # 400 training ratings, 240 MCAR ones
    # train_test_split(test_size=0.1, random_state=0): the head of RandomState(0)'s permutation
    perm = np.random.RandomState(0).permutation(400)
    in_slice = np.random.RandomState(12345).binomial(1, 0.05, 240).astype(bool)
    for seed in (0, 7):   # every seed sees the same split
        sp = get_protocol("ijcai2022").split(data, seed)
        assert np.array_equal(sp.val.rating, data.train.rating[perm[:40]])
        assert np.array_equal(sp.train.user, data.train.user[perm[40:]])
        assert np.array_equal(sp.test_prior.item, data.test.item[in_slice])
        assert np.array_equal(sp.test.item, data.test.item[~in_slice])
        assert len(sp.test_full) == 240 and sp.seed == seed


def test_ijcai2022_split_sizes_on_coat(coat_data):
    # docs/protocols.md, "ijcai2022": Coat 6,264 / 696, 214 slice rows / 4,426 evaluated
    sp = get_protocol("ijcai2022").split(coat_data, 3)
    assert (len(sp.train), len(sp.val), len(sp.test_prior), len(sp.test)) == (6264, 696, 214,
                                                                               4426)
    assert mcar_slice_mask(len(coat_data.test)).sum() == 214


def test_reference_parameter_set_and_its_limits():
    params, label = get_params("reference", "coat", "item", False, "mf-ips", "ijcai2022")
    assert (params.dim, params.lam, label) == (5, 2.3676e-3, "reference")
    params, _ = get_params("reference", "coat", "none", False, "damf", "ijcai2022")
    assert params.as_dict() == {"dim": 30, "lam": 1.9581e-3, "pen": 5.2915e-2}
    with pytest.raises(AtrecError, match="does not exist under protocol 'ijcai2022'"):
        get_params("published", "coat", "item", False, "mf-ips", "ijcai2022")


class _NoSplit(Protocol):
    name, label, metrics = "bad", "Bad", ("mae", "mse")


class _NoMSE(Protocol):
    name, label, metrics = "bad", "Bad", ("mae",)

    def split(self, data, seed):
        return None


@pytest.mark.parametrize("cls, message", [
    (_NoSplit, "does not implement split"),
    (_NoMSE, "holding mae and mse"),
    (int, "not a subclass"),
])
def test_broken_protocols_are_refused(cls, message):
    with pytest.raises((ValueError, TypeError), match=message):
        validate_protocol_class(cls)


def test_every_protocols_metrics_are_registered():
    from atrec.evaluation.registry import metric_names

    for name in protocol_names():
        assert set(get_protocol(name).metrics) <= set(metric_names()), name


def test_schedule_checks_its_values():
    with pytest.raises(ValueError, match="unknown bias_init 'tiny'"):
        Schedule(bias_init="tiny")
    with pytest.raises(ValueError, match="steps must be >= 1"):
        Schedule(steps=0)
    assert "2500 steps of 2048" in get_protocol("ijcai2022").schedule.describe()


def test_zero_bias_init_keeps_the_tables():
    from atrec.learners import mf

    normal = mf.init_params(5, 4, 3, [1, 2])
    zero = mf.init_params(5, 4, 3, [1, 2], bias_init="zero")
    assert np.array_equal(normal[0], zero[0]) and np.array_equal(normal[1], zero[1])
    assert all(not zero[k].any() for k in (2, 3, 4)) and normal[4].all()


def test_schedule_on_a_tiny_case_selects_the_lowest_criterion(tiny_data, tmp_path):
    """A short ijcai2022 run: records under the protocol's folder, the protocol's metrics, the
    reported step the first lowest of the validation trace, the ranking on the evaluated part."""
    from dataclasses import replace

    from atrec.experiments.driver import run_config
    from atrec.experiments.spec import RunSpec
    from atrec.params.lookup import HyperParams

    proto = get_protocol("ijcai2022")
    settings = replace(proto.train_settings("mf-ips"), steps=30, batch_size=64)
    spec = RunSpec("tiny", "item", False, HyperParams(4, 1e-3), "reference", (0, 1), settings,
                   protocol="ijcai2022")
    outcome = run_config(tiny_data, spec, root=tmp_path)
    paths = sorted((tmp_path / "protocols" / "ijcai2022" / "runs").rglob("seed-*.json"))
    assert len(paths) == 2 and not (tmp_path / "runs").exists()
    for record in outcome.records:
        trace = record["val_loss_trace"]
        assert len(trace) == 30
        assert record["metrics"]["best_step"] == int(np.argmin(trace))
        assert record["metrics"]["best_val_loss"] == pytest.approx(min(trace))
        assert set(record["metrics"]) == {*proto.metrics, "best_step", "best_val_loss"}
        assert record["protocol"]["name"] == "ijcai2022"
        assert record["protocol"]["ranking_part"] == "test"
    # one split for both seeds: only the model seed differs
    a, b = (json.loads(p.read_text()) for p in paths)
    assert a["protocol"]["n_train"] == b["protocol"]["n_train"]
    assert a["metrics"]["mse"] != b["metrics"]["mse"]


def test_a_complete_cell_has_the_seeds_its_protocols_paper_reports():
    # the IJCAI 2022 code reports mean and SD over 10 runs; saito2020's tables 20 seeds
    assert get_protocol("ijcai2022").seeds == 10
    assert get_protocol("saito2020").seeds == 20


def test_the_hint_for_missing_results_names_a_non_default_protocol():
    assert (train_hint("coat", method="damf", protocol="ijcai2022")
            == "atrec train --protocol ijcai2022 --dataset coat --method damf")
    assert train_hint("coat", method="damf") == "atrec train --dataset coat --method damf"
