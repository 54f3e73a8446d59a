"""A hyperparameter read only by the reference stopping rule (Stable-DR's ``stop``) is searched
under ``binary-icde24``, whose rule reads it, and not under ``binary-clean``, which stops on
validation and would tune a value nothing reads; a parameter set without it takes its default."""

from atrec.methods.registry import method_class
from atrec.tuning.space import SearchSpace


def _names(method, protocol):
    return {h.name for h in SearchSpace.for_method(method, protocol).extra}


def test_stable_dr_stop_is_searched_only_where_the_rule_reads_it():
    assert "stop" in _names("stable-dr", "binary-icde24")
    assert "stop" not in _names("stable-dr", "binary-clean")
    assert "eta" in _names("stable-dr", "binary-clean")       # its other keys still are


def test_a_clean_parameter_set_without_stop_takes_the_default():
    cls = method_class("stable-dr", "binary-clean")
    values = {"dim": 8, "lam": 1e-4, "lr": 0.01, "batch_size": 128, "uniform_ratio": 1,
              "eta": 100.0, "mu_lr": 0.01}
    checked = cls.check_params(values, False, "corrected")
    assert checked["stop"] == 5
