"""A tiny synthetic fit problem under a binary protocol, for the binary methods' tests."""

from dataclasses import replace

from atrec.data.synthetic import make_synthetic
from atrec.experiments.inputs import stack_inputs
from atrec.methods.base import FitProblem
from atrec.names import NO_PROPENSITY
from atrec.protocols import get_protocol

TINY = {"num_users": 40, "num_items": 30, "n_train": 300, "n_test_users": 40,
        "test_per_user": 6, "dim": 3}
SHORT = 3   # epochs


def binary_problem(protocol: str, seeds=(0, 1), epochs: int = SHORT):
    """``(data, problem, settings)``: :data:`TINY` synthetic data split by ``protocol`` for
    ``seeds``, its settings capped at ``epochs``."""
    data = make_synthetic(**TINY, seed=0).data
    proto = get_protocol(protocol)
    inp = stack_inputs(data, NO_PROPENSITY, list(seeds), split=proto.split)
    full = inp.splits[0].test_full
    problem = FitProblem(data.num_users, data.num_items, tuple(seeds), inp.train, inp.val,
                         inp.test, {"user": full.user, "item": full.item,
                                    "rating": full.rating}, inp.splits)
    return data, problem, replace(proto.epochs, max_epochs=epochs)
