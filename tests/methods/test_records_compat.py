"""Records written before methods were named stay MF-IPS's: without a ``method`` field, or with
``mf-ips`` / ``mf-ips+at``, they are read back, summarised as MF-IPS and no other method."""

import pytest

from atrec.evaluation.summary import load_summary
from atrec.methods.registry import base_method
from atrec.names import config_key
from atrec.results.records import SCHEMA, record_path, save_record


def _record(seed: int, with_at: bool, method) -> dict:
    """A record laid out as ``atrec.experiments.fitting._records`` writes it."""
    settings = ({"pre_steps": 150, "iterations": 10, "steps_per_iteration": 10,
                 "batch_size": 1024, "learning_rate": 0.01, "candidate_factor": 5,
                 "loss": "snips", "resample": "step", "sampler": "survivor-mask",
                 "batch_seed": 12345} if with_at else
                {"steps": 500, "batch_size": 1024, "learning_rate": 0.01, "loss": "snips",
                 "batch_seed": 12345})
    record = {
        "schema": SCHEMA, "dataset": "coat", "propensity": "item", "with_at": with_at,
        "seed": seed, "model_seed": seed, "batch_seed": 12345,
        "params": {"dim": 15, "lam": 0.002, **({"epsilon": 0.16} if with_at else {})},
        "params_source": "published", "variant": "",
        "metrics": {"mae": 0.9 + seed / 100, "mse": 1.2 + seed / 100, "ndcg3_paper": 0.2,
                    "ndcg3_standard": 0.5, "best_step": 40 + seed, "best_val_loss": 1.1},
        "protocol": {"settings": settings, "validation_fraction": 0.1,
                     "mcar_split": {"eval_fraction": 0.95, "seed": 12345},
                     "num_users": 290, "num_items": 300, "n_train": 6264, "n_val": 696,
                     "n_test": 4408, "n_test_full": 4640},
        "provenance": {"command": "atrec train", "atrec_version": "0.1.0", "packages": {},
                       "data_checksums": {}, "created": "2025-01-01T00:00:00+00:00",
                       "elapsed_s": 0.1, "platform": "Linux"},
    }
    if with_at:
        record["trace"] = {k: [1.0, 0.9] for k in ("pseudo_loss", "discrepancy", "n_pseudo",
                                                    "val_loss", "test_mse", "test_mae")}
    else:
        record["val_loss_trace"] = [1.3, 1.2, 1.1]
    if method is not None:
        record["method"] = method
    return record


@pytest.mark.parametrize("without_at, with_at", [(None, None), ("mf-ips", "mf-ips+at")],
                         ids=["no-method-field", "named"])
def test_old_records_are_mf_ips(without_at, with_at, tmp_path):
    for seed in (0, 1):
        for at, method in ((False, without_at), (True, with_at)):
            record = _record(seed, at, method)
            assert base_method(record) == "mf-ips"
            save_record(record, record_path("coat", config_key("item", at), "published", seed,
                                            tmp_path))
    summary = load_summary(tmp_path, ["coat"], expected_seeds=2, method="mf-ips")
    for at in (False, True):
        cell = summary.cell("coat", "item", at, "mae")
        assert cell is not None and cell.seeds == (0, 1) and cell.values == (0.9, 0.91)
        assert summary.cell("coat", "item", at, "mse").values == (1.2, 1.21)
    assert summary.traces[("coat", "item")].n_steps == 2
    assert summary.warnings == ()
    other = load_summary(tmp_path, ["coat"], expected_seeds=2, method="other-method")
    assert other.cells == {} and not other.has_results()


def test_mixed_old_and_named_records_fill_one_cell(tmp_path):
    for seed, method in ((0, None), (1, "mf-ips")):
        save_record(_record(seed, False, method),
                    record_path("coat", "item", "published", seed, tmp_path))
    cell = load_summary(tmp_path, ["coat"], expected_seeds=2).cell("coat", "item", False, "mse")
    assert cell.seeds == (0, 1)


@pytest.mark.parametrize("value, expected", [(None, "mf-ips"), ("", "mf-ips"),
                                             ("mf-ips", "mf-ips"), ("mf-ips+at", "mf-ips"),
                                             ("dr-jl+at", "dr-jl"), ("dr-jl", "dr-jl")])
def test_base_method(value, expected):
    record = {} if value is None else {"method": value}
    assert base_method(record) == expected
