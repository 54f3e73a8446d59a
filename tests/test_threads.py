"""A binary run asks TensorFlow for one thread per op, never over a user's choice or after
TensorFlow has started, and the number of threads changes no number (atrec.runtime.threads).
Each case runs in a fresh process: TensorFlow fixes its pool once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ASK = ("from atrec.runtime.threads import one_thread_per_op; from atrec.runtime import tf; "
       "{before}print(one_thread_per_op(), tf.config.threading.get_intra_op_parallelism_threads())")


def _python(code: str, **env) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TF_NUM_INTRAOP_THREADS"} | env
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env=env, check=True).stdout.strip()


@pytest.mark.parametrize("before, env, expected", [
    ("", {}, "True 1"),                                           # set before the first op
    ("tf.constant(1.0).numpy(); ", {}, "False 0"),                # too late: the pool stays
    ("", {"TF_NUM_INTRAOP_THREADS": "2"}, "False 0"),             # the user's value wins
])
def test_one_thread_per_op_only_where_it_may(before, env, expected):
    assert _python(ASK.format(before=before), **env) == expected


def _records(folder: Path) -> dict:
    out = {}
    for f in sorted(folder.rglob("seed-*.json")):
        record = json.loads(f.read_text())
        out[str(f.relative_to(folder))] = (record["metrics"], record["trace"])
    return out


def test_the_threads_per_op_change_no_number(coat_dir, tmp_path):
    """IPS (its NCF propensity's products and MF) trained twice, once with atrec's one thread
    per op and once with two (the user's setting): the records' metrics and traces are equal
    bit for bit."""
    argv = [sys.executable, "-m", "atrec", "train", "--protocol", "binary-icde24", "--params",
            "reference", "--method", "mf-ips", "--dataset", "coat", "--seeds", "2", "--quiet",
            "--without-at"]
    runs = {}
    for threads in ("", "2"):
        results = tmp_path / f"results{threads or 1}"
        env = {k: v for k, v in os.environ.items() if k != "TF_NUM_INTRAOP_THREADS"}
        env.update(ATREC_DATA_DIR=str(coat_dir), ATREC_RESULTS_DIR=str(results))
        if threads:
            env["TF_NUM_INTRAOP_THREADS"] = threads
        subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True)
        runs[threads] = _records(results)
    assert len(runs[""]) == 2
    assert runs[""] == runs["2"]
