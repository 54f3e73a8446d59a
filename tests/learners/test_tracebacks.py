"""atrec's loops trace without Python stack traces (:mod:`atrec.runtime.tracebacks`): their
operations carry none, other code's keep theirs, the user can keep them, and the numbers are
the same either way."""

import math
from pathlib import Path

import pytest

from atrec.experiments.fitting import validation_loss
from atrec.run_settings import ATSettings, TrainSettings
from atrec.params.lookup import HyperParams
from atrec.runtime import compiled, tracebacks
from atrec.runtime.tfquiet import import_tensorflow

tf = import_tensorflow()

SHORT = TrainSettings(steps=20, batch_size=64)
SHORT_AT = ATSettings(pre_steps=10, iterations=2, steps_per_iteration=2, batch_size=64)


@compiled.loop_cache
def _scaled_sum(scale: float):
    @tf.function(jit_compile=True, autograph=False)
    def loop(x):
        return tf.reduce_sum(x * scale)
    return loop


def _operations(loop):
    (concrete,) = loop._list_all_concrete_functions()
    return concrete.graph.get_operations()


def _own_function():
    @tf.function(autograph=False)
    def own(x):
        return x * 3.0
    return own.get_concrete_function(tf.TensorSpec([3], tf.float32)).graph.get_operations()


def test_a_loops_operations_carry_no_stack_trace_and_other_code_keeps_its(monkeypatch):
    monkeypatch.delenv(tracebacks.TRACEBACKS_ENV, raising=False)
    loop = _scaled_sum(2.0)
    assert float(loop(tf.ones([3]))) == 6.0
    ops = _operations(loop)
    assert ops and all(op.traceback is None for op in ops)
    # traced after the loop, outside it: the stack still passes through this file
    for op in _own_function():
        assert any(Path(frame.filename).name == Path(__file__).name for frame in op.traceback)


def test_the_user_can_keep_the_traces(monkeypatch):
    monkeypatch.setenv(tracebacks.TRACEBACKS_ENV, "1")
    loop = _scaled_sum(3.0)
    assert float(loop(tf.ones([3]))) == 9.0
    assert all(op.traceback is not None and len(op.traceback) > 0 for op in _operations(loop))


@pytest.mark.parametrize("value", ["", "0", "no", "false", "off", " OFF "])
def test_values_that_do_not_keep_the_traces(monkeypatch, value):
    monkeypatch.setenv(tracebacks.TRACEBACKS_ENV, value)
    assert not tracebacks.keep_requested()


def test_an_at_fit_gives_the_same_bits_with_and_without_traces(tiny_data, monkeypatch):
    params = HyperParams.from_values({"dim": 5, "lam": 1e-3, "epsilon": 0.1})

    def value():
        compiled.release()              # traced and compiled again in a fresh context
        return validation_loss(tiny_data, "item", True, params, settings=SHORT,
                               at_settings=SHORT_AT)

    monkeypatch.setenv(tracebacks.TRACEBACKS_ENV, "1")
    kept = value()
    monkeypatch.delenv(tracebacks.TRACEBACKS_ENV)
    dropped = value()
    assert dropped == kept and math.isfinite(kept)
