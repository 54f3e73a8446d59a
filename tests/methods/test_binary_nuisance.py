"""The binary methods' nuisance models (issue 60): the corrected propensity is a propensity
(cross-entropy on o, no decay on its bias, the validation pairs left out), the corrected
imputation starts small, and every record of such a method carries their diagnostics and
flags (atrec.methods.binary.nuisance, atrec.methods.binary.propensity)."""

from dataclasses import replace

import numpy as np
import pytest

from atrec.methods.binary import base as binary_base
from atrec.methods.binary import dr, dr_bias, ips, nuisance
from atrec.methods.binary import propensity as prop_mod
from atrec.runtime import tf
from binary_problems import binary_problem

def _problem(protocol: str):
    return binary_problem(protocol)[1:]


def _params(cls, **extra):
    return {**next(iter(cls.reference_params["coat"].values())), "dim": 4, "batch_size": 64,
            "prop_batch": 128, **extra}


def test_auc_by_hand():
    # positives 0.9, 0.4; negatives 0.1, 0.4, 0.8: pairs won 3 + 0.5 + 1 + 0 ... = 4.5 of 6
    assert nuisance.auc([0.9, 0.4, 0.1, 0.4, 0.8], [1, 1, 0, 0, 0]) == pytest.approx(4.5 / 6)
    assert nuisance.auc([1.0, 2.0], [1, 1]) != nuisance.auc([1.0, 2.0], [1, 1])   # NaN


def test_flags_name_each_degenerate_part():
    fine = {"propensity_auc": 0.7, "mean_weight": 1.0, "imputation_auc": 0.7}
    assert nuisance.flags(fine) == []
    assert len(nuisance.flags({**fine, "propensity_auc": 0.6})) == 1
    assert "mean weight" in nuisance.flags({**fine, "mean_weight": 0.4})[0]
    assert "imputation" in nuisance.flags({**fine, "imputation_auc": 0.52})[0]


def test_the_corrected_propensity_loss_ignores_the_held_out_pairs():
    params = {"prop_W": np.zeros((1, 2, 1), np.float32), "prop_H": np.zeros((1, 2, 1), np.float32),
              "prop_a": np.zeros((1, 2), np.float32), "prop_b": np.zeros((1,), np.float32)}
    users, items = tf.constant([[0, 1, 1]]), tf.constant([[0, 0, 1]])
    labels = tf.constant([[1.0, 0.0, 0.0]])
    keep = tf.constant([[1.0, 1.0, 0.0]])
    # p = 1/2 everywhere: ln 2 per kept pair, the third pair not counted
    assert float(prop_mod.propensity_ce_loss(params, users, items, labels, keep)[0]) == \
        pytest.approx(np.log(2.0), rel=1e-6)
    labels2 = tf.constant([[1.0, 0.0, 1.0]])
    assert float(prop_mod.propensity_ce_loss(params, users, items, labels2, keep)[0]) == \
        pytest.approx(np.log(2.0), rel=1e-6)


def test_held_out_mask_zeroes_exactly_the_validation_pairs():
    problem, settings = _problem("binary-clean")
    run = binary_base.BinaryRun(problem, _params(ips.BinaryIPS), settings, False)
    keep = nuisance.held_out_mask(run)
    for k in range(run.replicas):
        cells = problem.val["user"][k].astype(int) * run.num_items + problem.val["item"][k]
        assert (keep[k, cells] == 0).all()
        assert keep[k].sum() == keep.shape[1] - len(set(cells.tolist()))


def test_the_corrected_propensity_trains_its_bias_without_decay_and_starts_at_the_rate(
        monkeypatch):
    problem, settings = _problem("binary-clean")
    seen = {}
    real = binary_base.BinaryRun.pretrain

    def pretrain(self, stage, params, hp, consts=None, source_size=None, rule=None):
        seen.update(stage=stage, params=params, hp=hp, consts=consts)
        return real(self, stage, params, hp, consts, source_size, rule)

    monkeypatch.setattr(binary_base.BinaryRun, "pretrain", pretrain)
    run = ips.BinaryIPS().start(problem, _params(ips.BinaryIPS), settings)
    prop_mod.fit_propensity(run)
    groups = seen["stage"].groups
    assert groups["prop_bias"].names == ("prop_b",) and seen["hp"][groups["prop_bias"].wd] == 0
    assert seen["hp"][groups["prop"].lr] == prop_mod.CE_LR
    rate = run.observed().sum(1) / nuisance.held_out_mask(run).sum(1)
    np.testing.assert_allclose(1 / (1 + np.exp(-seen["params"]["prop_b"])), rate, rtol=1e-5)
    coded = replace(settings, forms=binary_base.CODED)
    run = binary_base.BinaryRun(problem, _params(ips.BinaryIPS), coded, False)
    prop_mod.fit_propensity(run)
    assert set(seen["stage"].groups) == {"prop"} and "prop_keep" not in seen["consts"]


def test_the_corrected_imputation_starts_small_the_coded_as_drawn():
    problem, settings = _problem("binary-clean")
    run = binary_base.BinaryRun(problem, _params(dr.BinaryDRJL), settings, False)
    small = run.imputation_tables()
    coded = binary_base.BinaryRun(problem, _params(dr.BinaryDRJL),
                                  replace(settings, forms=binary_base.CODED), False)
    drawn = coded.imputation_tables()
    for name in ("imp_W", "imp_H"):
        np.testing.assert_array_equal(drawn[name], run.tables("imp")[name])
        np.testing.assert_allclose(small[name], drawn[name] * binary_base.IMPUTATION_INIT_SCALE)


@pytest.mark.parametrize("cls, keys", [
    (ips.BinaryIPS, {"propensity_mean", "propensity_sd", "propensity_auc", "mean_weight"}),
    (dr.BinaryDRJL, {"propensity_auc", "mean_weight", "imputation_auc"}),
    (dr_bias.DRBias, {"imputation_auc"})])
def test_a_fit_carries_each_replicas_diagnostics_and_flags(cls, keys):
    problem, settings = _problem("binary-clean")
    res = cls().fit(problem, _params(cls), settings)
    assert len(res.nuisance) == 2
    for diag in res.nuisance:
        assert keys <= set(diag) and isinstance(diag["flags"], list)
        assert diag["flags"] == nuisance.flags(diag)
    assert res.select([1]).nuisance == [res.nuisance[1]]


def test_the_joint_methods_observation_losses_leave_the_validation_pairs_out():
    from types import SimpleNamespace

    from atrec.methods.binary import joint
    values = tf.constant([[1.0, 2.0, 4.0]])
    users, items = tf.constant([[0, 1, 1]]), tf.constant([[1, 0, 1]])
    keep = tf.constant(np.array([[[1, 1], [0, 1]]], np.uint8))   # (1, 0) a validation pair
    state = SimpleNamespace(consts={"obs_keep": keep})
    assert float(joint.observed_mean(values, state, users, items)[0]) == pytest.approx(2.5)
    coded = SimpleNamespace(consts={})
    assert float(joint.observed_mean(values, coded, users, items)[0]) == pytest.approx(7 / 3)


@pytest.mark.parametrize("name", ["escm2-dr", "multi-dr", "dt-dr", "esmm"])
def test_a_jointly_trained_propensity_is_diagnosed_over_every_pair(name):
    from atrec.methods.binary.registry import BINARY_METHODS
    cls = BINARY_METHODS.get(name)
    problem, settings = _problem("binary-clean")
    values = {**_params(cls), "dim1": 4, "uniform_ratio": 1}
    values = {k: v for k, v in values.items() if k in {h.name for h in cls.hyperparameters}}
    res = cls().fit(problem, values, settings)
    for diag in res.nuisance:
        assert 0 < diag["propensity_mean"] < 1 and 0 <= diag["propensity_auc"] <= 1
        assert ("imputation_auc" in diag) == (name != "esmm")
