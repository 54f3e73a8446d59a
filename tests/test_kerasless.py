"""atrec imports TensorFlow without its eager Keras load, and tf.keras still works
(atrec.runtime.kerasless)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from atrec.runtime import kerasless

ROOT = Path(__file__).resolve().parent.parent


def test_keras_is_refused_inside_the_guard_and_importable_after(monkeypatch):
    monkeypatch.delitem(sys.modules, "keras", raising=False)
    with kerasless.no_eager_keras():
        spec = importlib.util.find_spec("keras")      # found, with its real origin
        assert spec is not None and spec.origin.endswith("__init__.py")
        with pytest.raises(ImportError, match="does not load keras"):
            import keras  # noqa: F401
    assert "keras" not in sys.modules
    assert not any(isinstance(f, kerasless._Finder) for f in sys.meta_path)


def test_atrecs_tensorflow_leaves_keras_unloaded_until_tf_keras_is_used():
    code = ("import sys; from atrec.runtime import tf; tf.constant(1.0).numpy(); "
            "print('keras' in sys.modules); "
            "print(tf.keras.layers.Dense(2)(tf.ones([1, 3])).shape); "
            "print('keras' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "(1,", "2)", "True"], out
