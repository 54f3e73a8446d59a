"""TensorFlow's Python-side retracing warning is dropped unless the user asks for every message
(atrec.runtime.tfquiet); other warnings pass."""

import os
import subprocess
import sys

CODE = """
import logging
from atrec.runtime.tfquiet import import_tensorflow
tf = import_tensorflow()
for n in range(1, 9):            # a new function per shape, as a tuning run compiles per dim
    tf.function(lambda x: x + 1)(tf.zeros([n]))
logging.getLogger("tensorflow").warning("another warning")
"""


def run(level):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    if level is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = level
    return subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          env=env, check=True).stderr


def test_retracing_warning_dropped_by_default_other_warnings_kept():
    err = run(None)
    assert "retracing" not in err
    assert "another warning" in err


def test_every_message_when_the_user_asks_for_them():
    assert "triggered tf.function retracing" in run("0")
