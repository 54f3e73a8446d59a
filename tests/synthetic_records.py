"""Synthetic result records with hand-chosen values, for the summary/report/check tests.

Every (dataset, propensity, with/without AT) of Table 1 gets seeds 0..4. A cell's values are
``base + offset[seed]`` where ``base`` is the paper's Table 1 value (so the check passes) and

* without AT: offsets ``WITHOUT = (-0.02, -0.01, 0, 0.01, 0.02)``,
* with AT:    offsets ``WITH = (0.01, -0.02, 0.02, -0.01, 0)`` (a permutation of the above).

Hence every cell's mean is exactly its base, its sd (ddof=1) is sqrt(0.001 / 4), and the paired
differences are ``delta + (WITH - WITHOUT)`` with ``WITH - WITHOUT = (0.03, -0.01, 0.02, -0.02,
-0.02)`` (mean 0), so the mean difference is exactly the paper's with-minus-without gap.

``ndcg3_standard`` uses base 0.6 without AT and 0.61 with AT. AT records carry 100-step traces
falling linearly: pseudo_loss 1.0 -> 0.5, discrepancy 0.2 -> 0.1, test_mse 1.3 -> 1.0 (plus a
per-seed shift of ``offset``), so first-vs-last-10 means are computable by hand.

One extra record (coat/uniform, seed 0) is made with tuned parameters and absurd values: it
must never enter the published cells.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from atrec.evaluation.summary import load_summary
from atrec.results.records import record_path, save_record

SEEDS = (0, 1, 2, 3, 4)
WITHOUT = (-0.02, -0.01, 0.0, 0.01, 0.02)
WITH = (0.01, -0.02, 0.02, -0.01, 0.0)
STEPS = 100
NDCG_STANDARD = {False: 0.6, True: 0.61}


def paper_values() -> dict:
    """The paper's Table 1 read with the csv module (independent of atrec.reporting.table1)."""
    text = (resources.files("atrec") / "resources" / "paper_table1.csv").read_text()
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {(r["dataset"], r["propensity"], r["with_at"] == "true"):
            {"mae": float(r["mae"]), "mse": float(r["mse"]), "ndcg3_paper": float(r["ndcg3_paper"])}
            for r in rows}


def linear_trace(offset: float, steps: int = STEPS, rising_mse: bool = False) -> dict:
    """A falling trace; ``np.linspace`` endpoints are the values at steps 1 and ``steps``.

    ``rising_mse`` makes test_mse rise 1.0 -> 1.3 instead.
    """
    mse = np.linspace(1.0, 1.3, steps) if rising_mse else np.linspace(1.3, 1.0, steps)
    return {
        "pseudo_loss": (np.linspace(1.0, 0.5, steps) + offset).tolist(),
        "discrepancy": (np.linspace(0.2, 0.1, steps) + offset).tolist(),
        "n_pseudo": [1000] * steps,
        "val_loss": np.linspace(1.2, 1.1, steps).tolist(),
        "test_mse": (mse + offset).tolist(),
        "test_mae": np.linspace(0.9, 0.8, steps).tolist(),
    }


def make_record(dataset: str, propensity: str, with_at: bool, seed: int, metrics: dict,
                params_source: str = "published", trace: dict | None = None) -> dict:
    record = {
        "schema": 1, "dataset": dataset, "propensity": propensity, "with_at": with_at,
        "seed": seed, "model_seed": seed, "batch_seed": 12345,
        "params": {"dim": 5, "lam": 1e-3, **({"epsilon": 0.1} if with_at else {})},
        "params_source": params_source, "metrics": metrics, "protocol": {}, "provenance": {},
    }
    if trace is not None:
        record["trace"] = trace
    return record


def write_records(root: Path, datasets=("yahoo", "coat"), override=None, skip=(),
                  seeds=SEEDS, rising_mse=()) -> Path:
    """Write the synthetic records under ``root``; return ``root``.

    ``override`` maps ``(dataset, propensity, with_at, metric)`` to a new base value; ``skip``
    lists ``(dataset, propensity, with_at)`` or ``(dataset, propensity, with_at, seed)`` to leave
    out; ``rising_mse`` lists ``(dataset, propensity)`` whose AT test-MSE trace rises.
    """
    override = override or {}
    for (dataset, propensity, with_at), base in paper_values().items():
        if dataset not in datasets or (dataset, propensity, with_at) in skip:
            continue
        offsets = WITH if with_at else WITHOUT
        for seed in seeds:
            if (dataset, propensity, with_at, seed) in skip:
                continue
            off = offsets[seed]
            metrics = {m: override.get((dataset, propensity, with_at, m), v) + off
                       for m, v in base.items()}
            metrics["ndcg3_standard"] = NDCG_STANDARD[with_at] + off
            metrics.update(best_step=10, best_val_loss=1.0)
            rising = (dataset, propensity) in rising_mse
            trace = linear_trace(off, rising_mse=rising) if with_at else None
            save_record(make_record(dataset, propensity, with_at, seed, metrics, trace=trace),
                        record_path(dataset, propensity + ("-at" if with_at else ""), "published",
                                    seed, root))
    if "coat" in datasets:
        bad = make_record("coat", "uniform", False, 0, {"mae": 9.0, "mse": 9.0, "ndcg3_paper": 0.0},
                          params_source="tuned:/somewhere/tuned_params.yaml")
        save_record(bad, record_path("coat", "uniform", "tuned", 0, root))
    return root


def write_coat_gaps(root: Path) -> Path:
    """Coat only, with gaps: no ``item`` with AT records, and ``user`` with AT MAE at 0.850."""
    return write_records(root, datasets=("coat",), skip=[("coat", "item", True)],
                         override={("coat", "user", True, "mae"): 0.850})


# --- fixtures shared by the report tests (tests/reporting/conftest.py) -----------------------

@pytest.fixture(scope="session")
def root(tmp_path_factory):
    """A results folder holding the synthetic Table 1 records (:func:`write_records`)."""
    return write_records(tmp_path_factory.mktemp("records"))


@pytest.fixture(scope="session")
def summary(root):
    """The summary of :func:`root`'s records (5 seeds per cell)."""
    return load_summary(root, expected_seeds=5)


@pytest.fixture(scope="session")
def coat_gaps(tmp_path_factory):
    """A results folder with Coat only and some cells missing (:func:`write_coat_gaps`)."""
    return write_coat_gaps(tmp_path_factory.mktemp("gaps"))
