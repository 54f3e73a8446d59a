"""Bad input and faults, end to end through the real command line: one table, one row per kind.

Each row runs ``atrec`` (click's CliRunner, with ``ATREC_DATA_DIR`` / ``ATREC_RESULTS_DIR`` set)
and checks the exit code, a fragment of the one-line message, that no traceback was shown, and
that nothing changed on disk: the data folder (Coat, installed once per session) and the results
folder are snapshotted (names, sizes, mtimes) before and after. The one row that may change the
disk (a corrupt record that ``train`` recomputes) says so and checks what changed instead.

Folders that "cannot be written" are paths at or below a regular file: permission bits do not
stop root, a file does.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED
from synthetic_records import make_record

from atrec.cli import main
from atrec.results.records import record_path

GOOD_METRICS = {"mae": 0.8, "mse": 1.1, "ndcg3_paper": 0.3, "ndcg3_standard": 0.6,
                "best_step": 3, "best_val_loss": 1.0}


@dataclass
class Case:
    """One row: the command line, the environment, files to create first, what must come out.

    In ``args`` and ``env`` values, ``{tmp}`` is a scratch folder, ``{data}`` the data folder
    (Coat installed) and ``{results}`` the results folder. ``setup(tmp, results)`` writes what the
    row needs (a parameter file, a record) before the snapshot is taken.
    """

    id: str
    args: list[str]
    code: int
    fragment: str
    env: dict = field(default_factory=dict)
    setup: object = None
    changes: bool = False
    absent: str = ""   # a path (with {tmp}) that must not exist afterwards: nothing created there


def _file(rel: str, content: bytes | str):
    def setup(tmp: Path, results: Path) -> None:
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return setup


def _params(text: str | bytes):
    return _file("params.yaml", text)


def _record(content):
    """A record file at coat/item/published/seed-00 (``content``: bytes, or a dict as JSON)."""
    def setup(tmp: Path, results: Path) -> None:
        path = record_path("coat", "item", "published", 0, results)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(json.dumps(content))
    return setup


def _nested(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


def _misfiled() -> dict:
    """A valid record of coat/user, as if copied into coat/item's folder."""
    return make_record("coat", "user", False, 0, dict(GOOD_METRICS))


def _good_record(**changes) -> dict:
    record = make_record("coat", "item", False, 0, dict(GOOD_METRICS))
    for key, value in changes.items():
        if value is _DELETE:
            del record[key]
        else:
            record[key] = value
    return record


_DELETE = object()
TRAIN = ["train", "--dataset", "coat", "--propensity", "item", "--seeds", "1", "-q"]
PFILE = ["--params", "{tmp}/params.yaml"]
WITHOUT, WITH = ["--without-at"], ["--with-at"]

CASES = [
    # --- 1. folders that cannot be used ---------------------------------------------------
    Case("results-is-a-file", TRAIN, 2, "set ATREC_RESULTS_DIR",
         env={"ATREC_RESULTS_DIR": "{tmp}/afile"}, setup=_file("afile", "x")),
    Case("results-under-a-file", TRAIN, 2, "{tmp}/afile is not a folder",
         env={"ATREC_RESULTS_DIR": "{tmp}/afile/results"}, setup=_file("afile", "x")),
    Case("report-results-is-a-file", ["report", "--dataset", "coat"], 2, "ATREC_RESULTS_DIR",
         env={"ATREC_RESULTS_DIR": "{tmp}/afile"}, setup=_file("afile", "x")),
    Case("tune-results-is-a-file", ["tune", "--propensity", "item", "--trials", "1"], 2,
         "ATREC_RESULTS_DIR", env={"ATREC_RESULTS_DIR": "{tmp}/afile"},
         setup=_file("afile", "x")),
    Case("train-data-is-a-file", TRAIN, 2, "set ATREC_DATA_DIR",
         env={"ATREC_DATA_DIR": "{tmp}/afile"}, setup=_file("afile", "x")),
    Case("download-data-under-a-file", ["download", "coat", "--source", str(SHARED / "coat")],
         2, "ATREC_DATA_DIR", env={"ATREC_DATA_DIR": "{tmp}/afile/data"},
         setup=_file("afile", "x")),
    Case("preprocess-data-is-a-file", ["preprocess", "coat"], 2, "ATREC_DATA_DIR",
         env={"ATREC_DATA_DIR": "{tmp}/afile"}, setup=_file("afile", "x")),
    # --- 2. corrupt records ---------------------------------------------------------------
    Case("record-not-utf8", ["report", "--dataset", "coat"], 3, "(not UTF-8 text): delete it",
         setup=_record(b"\xff\xfe\x00garbage")),
    Case("record-truncated-json", ["report", "--dataset", "coat"], 3, "not valid JSON",
         setup=_record(b'{"schema": 1, "data')),
    Case("record-not-an-object", ["report", "--dataset", "coat"], 3, "not an object",
         setup=_record([1, 2, 3])),
    Case("record-lacks-metrics", ["check", "--dataset", "coat"], 3, "lacks 'metrics'",
         setup=_record(_good_record(metrics=_DELETE))),
    Case("record-metric-not-a-number", ["report", "--dataset", "coat"], 3,
         "metric 'mae' is 'high'", setup=_record(_good_record(
             metrics={**GOOD_METRICS, "mae": "high"}))),
    Case("record-params-not-a-dict", ["report", "--dataset", "coat"], 3, "'params' is",
         setup=_record(_good_record(params=[5, 0.1]))),
    Case("train-recomputes-corrupt-record", TRAIN + WITHOUT, 0,
         "seed-00.json is corrupt (not UTF-8 text); recomputing it",
         setup=_record(b"\xff\xfe"), changes=True),
    Case("record-nested-too-deep", ["report", "--dataset", "coat"], 3,
         "(JSON nested 5000 levels deep, more than a record's 16): delete it",
         setup=_record(_nested(5000))),
    Case("export-record-nested-too-deep", ["export"], 3, "JSON nested 5000 levels deep",
         setup=_record(_nested(5000))),
    Case("check-record-nested-too-deep", ["check", "--dataset", "coat"], 3,
         "JSON nested 5000 levels deep", setup=_record(_nested(5000))),
    Case("train-recomputes-nested-record", TRAIN + WITHOUT, 0,
         "seed-00.json is corrupt (JSON nested 5000 levels deep, more than a record's 16); "
         "recomputing it", setup=_record(_nested(5000)), changes=True),
    Case("record-metric-nan", ["report", "--dataset", "coat"], 3,
         "(metric 'mae' is nan, not a finite number)",
         setup=_record(_good_record(metrics={**GOOD_METRICS, "mae": float("nan")}))),
    Case("export-record-param-infinite", ["export"], 3,
         "(parameter 'lam' is inf, not a finite number)",
         setup=_record(_good_record(params={"dim": 5, "lam": float("inf")}))),
    Case("train-recomputes-nan-record", TRAIN + WITHOUT, 0,
         "seed-00.json is corrupt (metric 'mae' is nan, not a finite number); recomputing it",
         setup=_record(_good_record(metrics={**GOOD_METRICS, "mae": float("nan")})),
         changes=True),
    Case("record-trace-of-text", ["report", "--dataset", "coat"], 3,
         "(a value of trace 'val_loss' is 'x', not a number or null)",
         setup=_record(_good_record(trace={"val_loss": [1.0, "x"]}))),
    Case("record-filed-under-another-configuration", ["report", "--dataset", "coat"], 3,
         "(it is the record of runs/coat/user/published/seed-00.json, not of this folder)",
         setup=_record(_misfiled())),
    Case("train-recomputes-misfiled-record", TRAIN + WITHOUT, 0,
         "seed-00.json is corrupt (it is the record of runs/coat/user/published/seed-00.json, "
         "not of this folder); recomputing it", setup=_record(_misfiled()), changes=True),
    # --- 3. parameter files ---------------------------------------------------------------
    # a misspelt key anywhere in the file: one line naming it and the keys allowed there
    *[Case(f"params-unknown-{what}", TRAIN + (WITH if "-at:" in text else WITHOUT) + PFILE, 2,
           fragment, setup=_params("coat:\n  item: {dim: 5, lam: 0.1}\n" + text))
      for what, text, fragment in [
          ("configuration", "  itme: {dim: 5, lam: 0.1}\n",
           ("unknown configuration 'itme' under 'coat' in parameter file {tmp}/params.yaml: give "
            "[<method>[+option=value]/]<propensity>[-at], methods mf-ips,")),
          ("method-in-key", "  caus/none: {dim: 5, lam: 1}\n", "unknown configuration 'caus/none'"),
          ("dataset", "coatt:\n  item: {dim: 5, lam: 1}\n",
           "unknown dataset 'coatt' in parameter file {tmp}/params.yaml: give coat, yahoo"),
          ("hyperparameter", "  user: {dimm: 5, dim: 5, lam: 0.1}\n",
           ("bad parameters for coat/user in {tmp}/params.yaml: unknown hyperparameter 'dimm': "
            "mf-ips takes dim, lam")),
          ("hyperparameter-at", "  item-at: {dim: 5, lam: 0.1, epsilon: 0.1, epsilonn: 0.2}\n",
           "unknown hyperparameter 'epsilonn': mf-ips with AT takes dim, lam, epsilon"),
          ("epsilon-without-at", "  user: {dim: 5, lam: 0.1, epsilon: 0.1}\n",
           "unknown hyperparameter 'epsilon' (AT's threshold: give it only with AT")]],
    # --- 3b. addresses, paths and names ----------------------------------------------------
    Case("scheduler-not-a-url", TRAIN + ["--scheduler", "not a url"], 2,
         "--scheduler 'not a url' is not a Dask scheduler address (missing port number"),
    Case("scheduler-http", TRAIN + ["--scheduler", "http://127.0.0.1:1"], 2,
         "unknown address scheme 'http'"),
    Case("scheduler-empty", TRAIN + ["--scheduler", ""], 2,
         "--scheduler '' is not a Dask scheduler address (empty)"),
    Case("scheduler-local-too-many", TRAIN + ["--scheduler", "local:100000"], 2,
         "--scheduler local:100000: give local:N with 1 <= N <= "),
    Case("scheduler-nothing-listens", TRAIN + ["--scheduler", "tcp://127.0.0.1:1"], 2,
         "cannot reach a Dask scheduler at tcp://127.0.0.1:1 (Connection refused)"),
    Case("export-output-in-missing-folder", ["export", "--output", "{tmp}/nope/dir/x.csv"], 2,
         "--output {tmp}/nope/dir/x.csv: the folder {tmp}/nope/dir does not exist",
         setup=_record(_good_record()), absent="{tmp}/nope"),
    Case("export-output-under-a-file", ["export", "--output", "{tmp}/afile/x.csv"], 2,
         "the folder {tmp}/afile is not a folder", setup=_file("afile", "x")),
    Case("tune-storage-in-missing-folder", ["tune", "--propensity", "item", "--without-at",
                                            "--trials", "1", "--storage",
                                            "sqlite:///{tmp}/nope/dir/x.db"], 2,
         "--storage {tmp}/nope/dir/x.db: the folder {tmp}/nope/dir does not exist",
         absent="{tmp}/nope"),
    Case("report-params-typo", ["report", "--params", "publishd"], 2,
         "unknown parameter set 'publishd': give one of published, tuned, tuned-atrec, "
         "reference, a parameter file that exists"),
    Case("export-params-typo", ["export", "--params", "publishd"], 2,
         "unknown parameter set 'publishd'"),
    Case("params-top-level-list", TRAIN + WITHOUT + PFILE, 2, "holds a list",
         setup=_params("- 1\n- 2\n")),
    Case("params-dataset-not-mapping", TRAIN + WITHOUT + PFILE, 2,
         "must map configuration -> parameters, got [1, 2]", setup=_params("coat: [1, 2]\n")),
    Case("params-config-not-mapping", TRAIN + WITHOUT + PFILE, 2,
         "must map names to numbers (dim, lam, ...), got 5", setup=_params("coat:\n  item: 5\n")),
    Case("params-dim-1e9", TRAIN + WITHOUT + PFILE, 2,
         "dim must be an integer in 1..1024, got 1000000000",
         setup=_params("coat:\n  item: {dim: 1000000000, lam: 0.1}\n")),
    Case("params-dim-0", TRAIN + WITHOUT + PFILE, 2, "dim must be an integer in 1..1024, got 0",
         setup=_params("coat:\n  item: {dim: 0, lam: 0.1}\n")),
    Case("params-dim-2.5", TRAIN + WITHOUT + PFILE, 2, "in 1..1024, got 2.5",
         setup=_params("coat:\n  item: {dim: 2.5, lam: 0.1}\n")),
    Case("params-lam-inf", TRAIN + WITHOUT + PFILE, 2,
         "lam must be a number in [0, 1e+06] (finite), got inf",
         setup=_params("coat:\n  item: {dim: 5, lam: .inf}\n")),
    Case("params-lam-nan", TRAIN + WITHOUT + PFILE, 2, "(finite), got nan",
         setup=_params("coat:\n  item: {dim: 5, lam: .nan}\n")),
    Case("params-lam-negative", TRAIN + WITHOUT + PFILE, 2,
         "lam must be a number in [0, 1e+06], got -1",
         setup=_params("coat:\n  item: {dim: 5, lam: -1}\n")),
    Case("params-lam-text", TRAIN + WITHOUT + PFILE, 2, "got 'abc'",
         setup=_params("coat:\n  item: {dim: 5, lam: abc}\n")),
    Case("params-epsilon-missing", TRAIN + WITH + PFILE, 2,
         "lacks 'epsilon' (AT needs it): give a number in (0, 5]",
         setup=_params("coat:\n  item-at: {dim: 5, lam: 0.1}\n")),
    Case("params-epsilon-0", TRAIN + WITH + PFILE, 2, "epsilon must be a number in (0, 5], got 0",
         setup=_params("coat:\n  item-at: {dim: 5, lam: 0.1, epsilon: 0}\n")),
    Case("params-yaml-syntax", TRAIN + WITHOUT + PFILE, 2, "is not valid YAML",
         setup=_params("coat:\n  item: {dim: 5\n")),
    Case("params-empty-file", TRAIN + WITHOUT + PFILE, 2, "is empty",
         setup=_params("")),
    Case("params-binary-garbage", TRAIN + WITHOUT + PFILE, 2, "is not UTF-8 text",
         setup=_params(bytes(range(128, 256)) * 3)),
    Case("params-missing-file", TRAIN + WITHOUT + ["--params", "{tmp}/nope.yaml"], 2,
         "does not exist"),
    # --- 4. counts ------------------------------------------------------------------------
    Case("seeds-huge-count", ["train", "--seeds", "100000000000"], 2, "give 1..1000 seeds"),
    Case("seeds-huge-range", ["train", "--seeds", "0-99999999999"], 2, "give 1..1000 seeds"),
    Case("seeds-value-too-big", ["train", "--seeds", "2147483648"], 2,
         "seed values 0..2147483647"),
    Case("seeds-not-a-number", ["train", "--seeds", "abc"], 2, "--seeds abc"),
    Case("trials-too-many", ["tune", "--trials", "100000"], 2, "1<=x<=10000"),
    Case("expected-seeds-too-many", ["report", "--expected-seeds", "5000"], 2, "1<=x<=1000"),
    Case("steps-too-many", ["variance", "--steps", "1000000000"], 2, "1<=x<=100000"),
    Case("pre-steps-zero", ["variance", "--pre-steps", "0"], 2, "1<=x<=100000"),
    Case("min-items-too-big", ["variance", "--min-items", "5000"], 2, "integers in 1..1000"),
    Case("reproduce-seeds-too-many", ["reproduce", "--seeds", "5000"], 2, "1<=x<=1000"),
    # --- 13. small cases ------------------------------------------------------------------
    Case("source-missing-but-installed", ["download", "coat", "--source", "{tmp}/nope"], 3,
         "does not exist"),
    Case("source-invalid-but-installed", ["download", "coat", "--source", "{tmp}/afile"], 3,
         "is a single file", setup=_file("afile", "x")),
    Case("propensity-only-comma", TRAIN[:3] + ["--propensity", ","], 2, "no propensity given"),
    Case("dataset-only-comma", ["train", "--dataset", ","], 2, "no dataset given"),
    Case("method-only-comma", ["train", "--method", ","], 2, "no method given"),
    Case("source-env-names-variable", ["run", "--propensity", "item", "--seeds", "1"], 3,
         "ATREC_COAT_SOURCE={tmp}/nope (the local copy of coat)",
         env={"ATREC_DATA_DIR": "{tmp}/data", "ATREC_COAT_SOURCE": "{tmp}/nope"}),
    Case("unknown-propensity", ["train", "--propensity", "itme"], 2, "unknown propensity 'itme'"),
    Case("unknown-option", ["train", "--bogus"], 2, "No such option"),
]


def _snapshot(folder: Path) -> dict:
    """Names, sizes and mtimes of everything under ``folder`` (empty when it does not exist)."""
    if not folder.is_dir():
        return {"<exists>": folder.exists()}
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.stat()
            out[str(path.relative_to(folder))] = (st.st_size if path.is_file() else None,
                                                  st.st_mtime_ns)
    out["."] = folder.stat().st_mtime_ns
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, coat_dir, tmp_path, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    if case.setup:
        case.setup(scratch, results)

    def fill(text: str) -> str:
        return text.format(tmp=scratch, data=coat_dir, results=results)

    env = {"ATREC_DATA_DIR": str(coat_dir), "ATREC_RESULTS_DIR": str(results),
           "ATREC_COAT_SOURCE": None}
    env.update({k: fill(v) for k, v in case.env.items()})
    folders = [Path(env["ATREC_DATA_DIR"]), Path(env["ATREC_RESULTS_DIR"]), coat_dir, results]
    before = [_snapshot(f) for f in folders]

    result = CliRunner().invoke(main, [fill(a) for a in case.args], env=env)

    output = result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), output
    assert "Traceback" not in output
    assert result.exit_code == case.code, output
    assert fill(case.fragment) in output, output
    if case.code:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and errors[0] == result.stderr.strip(), result.stderr
    after = [_snapshot(f) for f in folders]
    if case.absent:
        assert not Path(fill(case.absent)).exists()
    if not case.changes:
        assert after == before
    else:  # the corrupt record was recomputed: valid now, and the data folder untouched
        from atrec.results.records import load_record

        assert after[0] == before[0] and after[2] == before[2]
        load_record(record_path("coat", "item", "published", 0, results))


def test_more_uniform_pairs_than_the_data_have_is_one_line_and_writes_no_file(coat_dir,
                                                                               tmp_path):
    """A binary method's epoch takes distinct pairs of all users x items: a uniform_ratio that
    asks for more than Coat's 87,000 is refused in one line when training starts (the run's
    folder, empty, is all it leaves)."""
    results = tmp_path / "results"
    params = tmp_path / "params.yaml"
    params.write_text("coat:\n  dr-bias/none: {dim: 4, lam: 0.001, lr: 0.05, batch_size: 128, "
                      "uniform_ratio: 20}\n")
    env = {"ATREC_DATA_DIR": str(coat_dir), "ATREC_RESULTS_DIR": str(results),
           "ATREC_COAT_SOURCE": None}
    result = CliRunner().invoke(main, ["train", "--protocol", "binary-icde24", "--method",
                                       "dr-bias", "--dataset", "coat", "--seeds", "1", "-q",
                                       "--without-at", "--params", str(params)], env=env)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.stderr.strip() == (
        "error: dr-bias: an epoch takes 138,240 distinct pairs of all users x items (20 per "
        "observed pair, batches of 128) and the data have 87,000; lower uniform_ratio in the "
        "parameters")
    assert not [f for f in results.rglob("*") if f.is_file()]


def test_load_runs_names_a_record_nested_too_deep(tmp_path):
    """The Python API reads records through the same validation: no RecursionError."""
    import atrec
    from atrec.results.records import RecordError

    _record(_nested(5000))(tmp_path, tmp_path)
    with pytest.raises(RecordError, match="JSON nested 5000 levels deep") as info:
        atrec.load_runs(tmp_path)
    assert info.value.path == record_path("coat", "item", "published", 0, tmp_path)


@pytest.mark.parametrize("method, given, notice", [
    ("cause", ["--propensity", "item"], ("note: cause uses no propensity: --propensity item "
                                         "does not apply to it (trained once, unweighted)")),
    ("cause,damf", ["--propensity", "user,item"], ("note: cause, damf use no propensity: "
                                                   "--propensity user,item does not apply to "
                                                   "them (trained once, unweighted)")),
    ("cause", [], None),                        # the default (all) is no request
    ("mf-ips", ["--propensity", "item"], None),
])
@pytest.mark.parametrize("command", ["train", "tune"])
def test_propensity_given_to_a_method_that_uses_none_is_a_notice(method, given, notice, command,
                                                                 coat_dir, tmp_path,
                                                                 monkeypatch):
    """A notice, not an error: '--method mf-ips,cause --propensity item' is a valid selection
    in which the option applies to one method. The work itself is stubbed out: only the line
    before it is tested here."""
    from atrec.cli import training

    monkeypatch.setattr(training, "train", lambda *a, **k: [])
    monkeypatch.setattr(training, "tune", lambda *a, **k: [])
    env = {"ATREC_DATA_DIR": str(coat_dir), "ATREC_RESULTS_DIR": str(tmp_path)}
    result = CliRunner().invoke(main, [command, "--method", method, *given, "-q"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == (notice or ""), result.stderr
