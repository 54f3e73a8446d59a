"""``atrec export`` and ``atrec.load_runs``: one row per record, one column per hyperparameter,
old records as MF-IPS, and CSV / Parquet files that read back equal to the frame."""

import subprocess
import sys

import pandas as pd
import pytest
from click.testing import CliRunner

import atrec
from atrec.cli import main
from atrec.names import METRICS, config_key
from atrec.results.records import SCHEMA, record_path, save_record


def _record(seed: int, with_at: bool, method=None, propensity="item", params_source="published",
            params=None, variant="") -> dict:
    """A record as the runner writes it; ``method=None`` as before methods were named."""
    record = {
        "schema": SCHEMA, "dataset": "coat", "propensity": propensity, "with_at": with_at,
        "seed": seed, "model_seed": seed, "batch_seed": 12345,
        "params": params or {"dim": 15, "lam": 0.002, **({"epsilon": 0.16} if with_at else {})},
        "params_source": params_source, "variant": variant,
        "metrics": {"mae": 0.9 + seed / 100, "mse": 1.2 + seed / 100, "ndcg3_paper": 0.2,
                    "ndcg3_standard": 0.5, "best_step": 40 + seed, "best_val_loss": 1.1},
        "protocol": {}, "provenance": {
            "command": "atrec train --dataset coat", "atrec_version": "0.1.0",
            "packages": {"numpy": "2.4.6"}, "data_checksums": {"train.ascii": "ab" * 32},
            "created": "2025-01-01T00:00:00+00:00", "elapsed_s": 0.1, "platform": "Linux"},
    }
    if method is not None:
        record["method"] = method
    return record


@pytest.fixture()
def root(tmp_path, monkeypatch):
    """12 records: 2 old MF-IPS (no method field) and 2 named, w/o and w/ AT; 2 of a plug-in
    with its own hyperparameter; 2 tuned; 2 of the +ips variant; 2 on Yahoo."""
    def put(record, key, label):
        save_record(record, record_path(record["dataset"], key, label, record["seed"], tmp_path))

    for seed in (0, 1):
        put(_record(seed, False), config_key("item", False), "published")
        put(_record(seed, True), config_key("item", True), "published")
        put(_record(seed, False, "mf-ips", "user"), config_key("user", False), "published")
        put(_record(seed, True, "mf-ips+at", "user"), config_key("user", True), "published")
        put(_record(seed, False, "fake-dr", "none", params={"dim": 8, "gamma": 0.5}),
            config_key("none", False, "fake-dr"), "published")
        put(_record(seed, False, params_source="tuned:/x/tuned_params.yaml"),
            config_key("item", False), "tuned")
        put(_record(seed, False, variant="+ips"), config_key("item", False), "published+ips")
        yahoo = dict(_record(seed, False), dataset="yahoo")
        put(yahoo, config_key("item", False), "published")
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    return tmp_path


def test_one_row_per_record_and_one_column_per_hyperparameter(root):
    frame = atrec.load_runs(root)
    assert len(frame) == len(list((root / "runs").rglob("seed-*.json"))) == 16
    assert list(frame.columns[:11]) == ["protocol", "dataset", "method", "propensity",
                                        "with_at", "params", "params_source", "variant", "seed",
                                        "model_seed", "batch_seed"]
    assert set(frame.protocol) == {"saito2020"}
    for column in (*METRICS, "best_step", "best_val_loss", "dim", "lam", "epsilon", "gamma",
                   "atrec_version", "created", "command", "data_checksums", "packages"):
        assert column in frame.columns
    plug = frame[frame.method == "fake-dr"]
    assert set(plug.gamma) == {0.5} and plug.lam.isna().all() and set(plug.dim) == {8}
    assert frame.epsilon.notna().sum() == 4 and set(frame[frame.with_at].epsilon) == {0.16}
    assert frame.data_checksums[0] == '{"train.ascii": "' + "ab" * 32 + '"}'


def test_old_records_without_a_method_are_mf_ips(root):
    frame = atrec.load_runs(root, datasets=["coat"], params=["published"])
    assert set(frame.method) == {"mf-ips", "fake-dr"}
    old = frame[(frame.propensity == "item") & (frame.variant == "default")]
    assert len(old) == 4 and set(old.method) == {"mf-ips"}


def test_selection(root):
    assert len(atrec.load_runs(root, methods=["fake-dr"])) == 2
    assert len(atrec.load_runs(root, datasets="yahoo")) == 2
    assert set(atrec.load_runs(root, params=["tuned"]).params) == {"tuned"}
    published = atrec.load_runs(root, params=["published"])  # every variant of the set
    assert set(published.variant) == {"default", "ips"} and len(published) == 14
    assert set(atrec.load_runs(root, params=["published+ips"]).variant) == {"ips"}
    assert atrec.load_runs(root, methods=["nothing"]).empty


@pytest.mark.parametrize("selection", [[], ["--dataset", "coat", "--method", "mf-ips",
                                            "--params", "published"]])
def test_csv_round_trips_with_load_runs(root, tmp_path, selection):
    result = CliRunner().invoke(main, ["export", *selection])
    assert result.exit_code == 0, result.output
    out = tmp_path / "runs.csv"
    out.write_text(result.stdout)
    read = pd.read_csv(out)
    kwargs = ({"datasets": ["coat"], "methods": ["mf-ips"], "params": ["published"]}
              if selection else {})
    frame = atrec.load_runs(root, **kwargs)
    assert len(read) == len(frame) == (10 if selection else 16)
    pd.testing.assert_frame_equal(read, frame)
    written = tmp_path / "file.csv"
    assert CliRunner().invoke(main, ["export", *selection, "-o", str(written)]).exit_code == 0
    pd.testing.assert_frame_equal(pd.read_csv(written), frame)


def test_parquet_round_trips_with_load_runs(root, tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "runs.parquet"
    result = CliRunner().invoke(main, ["export", "--format", "parquet", "--output", str(out),
                                       "--method", "fake-dr,mf-ips"])
    assert result.exit_code == 0 and "wrote" in result.stderr
    pd.testing.assert_frame_equal(pd.read_parquet(out), atrec.load_runs(root, methods=[
        "fake-dr", "mf-ips"]))


@pytest.mark.parametrize("args, code, message", [
    (["--format", "parquet"], 2, "--format parquet writes a binary file: give --output PATH"),
    (["--method", "nothing"], 3, "no result records with method nothing under"),
    (["--format", "xls"], 2, "'xls' is not one of 'csv', 'parquet'"),
])
def test_bad_input_is_one_line(root, args, code, message):
    result = CliRunner().invoke(main, ["export", *args])
    assert result.exit_code == code and message in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_parquet_without_pyarrow_names_the_extra(root, tmp_path, monkeypatch):
    from atrec.reporting import export

    monkeypatch.setattr(export.importlib.util, "find_spec", lambda name: None)
    result = CliRunner().invoke(main, ["export", "--format", "parquet", "-o",
                                       str(tmp_path / "x.parquet")])
    assert result.exit_code == 2 and "pip install -e '.[export]'" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_import_atrec_and_its_cli_do_not_import_pandas():
    code = ("import sys, atrec, atrec.cli; assert 'pandas' not in sys.modules; "
            "atrec.load_runs; assert 'pandas' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_another_protocols_runs_load_by_its_name(tmp_path):
    """load_runs(protocol=...) reads <results>/protocols/<name>, and the protocol column says
    whose runs a row is, as ``atrec export --protocol`` does."""
    from atrec.errors import AtrecError
    from atrec.names import NO_PROPENSITY
    from atrec.protocols import get_protocol
    from atrec.protocols.binary import BINARY_CLEAN_METRICS
    from atrec.results.records import record_path, save_record

    root = get_protocol("binary-clean").results_root(tmp_path)
    for seed in (0, 1):
        record = {"schema": 1, "dataset": "coat", "propensity": NO_PROPENSITY,
                  "with_at": False, "method": "mf", "seed": seed, "params": {"dim": 4},
                  "params_source": "reference",
                  "metrics": dict.fromkeys(BINARY_CLEAN_METRICS, 0.5),
                  "protocol": {"name": "binary-clean"}, "provenance": {}}
        save_record(record, record_path("coat", config_key(NO_PROPENSITY, False, "mf"),
                                        "reference", seed, root))
    frame = atrec.load_runs(tmp_path, protocol="binary-clean")
    assert len(frame) == 2 and set(frame.protocol) == {"binary-clean"} and "auc" in frame
    assert atrec.load_runs(tmp_path).empty          # saito2020's folder holds none
    assert len(atrec.load_runs(root)) == 2          # the folder itself, as before
    with pytest.raises(AtrecError, match="unknown protocol 'nope'"):
        atrec.load_runs(tmp_path, protocol="nope")
    result = CliRunner().invoke(main, ["export", "--protocol", "binary-clean"],
                                env={"ATREC_RESULTS_DIR": str(tmp_path)})
    assert result.exit_code == 0 and result.output.splitlines()[1].startswith("binary-clean,coat")
