"""Parsers, the binary store and its manifest, staleness, and ``atrec preprocess``."""

import dataclasses
import hashlib
import json
import re
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import SHARED  # noqa: E402  (tests/ is on sys.path)

from atrec.cli import main
from atrec.data import catalogue
from atrec.data.catalogue import YAHOO_TEST, YAHOO_TRAIN
from atrec.data.download import download
from atrec.data.preprocess import (
    load_data,
    load_processed,
    parse_coat_matrix,
    parse_triples,
    preprocess,
    processed_dir,
)
from atrec.errors import DataError


@pytest.fixture(scope="session")
def coat_matrices():
    """The Coat matrices read independently of atrec (numpy's own text reader)."""
    return {part: np.loadtxt(SHARED / "coat" / f"{part}.ascii", dtype=np.int64)
            for part in ("train", "test")}


def test_coat_end_to_end(data_dir, coat_matrices):
    download("coat", source=SHARED / "coat", quiet=True)
    data = preprocess("coat", quiet=True)
    sizes = (data.num_users, data.num_items, len(data.train), len(data.test))
    assert sizes == (290, 300, 6960, 4640)
    # docs/data.md: histograms
    assert data.train.histogram().tolist() == [1901, 1437, 1717, 1275, 630]
    assert data.test.histogram().tolist() == [1879, 899, 1002, 641, 219]
    for part in ("train", "test"):
        ratings, matrix = getattr(data, part), coat_matrices[part]
        rows, cols = np.nonzero(matrix)  # row-major order of the non-zero cells
        assert np.array_equal(ratings.user, rows) and np.array_equal(ratings.item, cols)
        assert np.array_equal(ratings.rating, matrix[rows, cols])
    sums = dict(line.split()[::-1] for line in (SHARED / "SHA256SUMS").read_text().splitlines())
    assert data.checksums == {"train.ascii": sums["coat/train.ascii"],
                              "test.ascii": sums["coat/test.ascii"]}


def test_store_dtypes_manifest_and_round_trip(data_dir):
    download("coat", source=SHARED / "coat", quiet=True)
    data = preprocess("coat", quiet=True)
    out = processed_dir("coat")
    with zipfile.ZipFile(out / "ratings.npz") as zf:  # uncompressed for speed
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}
    with np.load(out / "ratings.npz") as arrays:
        assert (arrays["train_user"].dtype, arrays["train_item"].dtype,
                arrays["train_rating"].dtype) == (np.int32, np.int16, np.int8)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"] == {"train": 6960, "test": 4640}
    assert (manifest["num_users"], manifest["num_items"]) == (290, 300)
    assert manifest["source_files"] == data.checksums
    store_sha = hashlib.sha256((out / "ratings.npz").read_bytes()).hexdigest()
    assert manifest["store"]["sha256"] == store_sha
    again = load_processed("coat")
    for part in ("train", "test"):
        for col in ("user", "item", "rating"):
            column = getattr(getattr(data, part), col)
            assert np.array_equal(getattr(getattr(again, part), col), column)
    assert again.train.item.dtype == np.int32 and again.checksums == data.checksums
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "ratings.npz"]


def test_lf_copy_gives_the_same_ratings(data_dir, tmp_path):
    download("coat", source=SHARED / "coat", quiet=True)
    crlf = preprocess("coat", quiet=True)
    folder = tmp_path / "lf"
    folder.mkdir()
    for name in ("train.ascii", "test.ascii"):
        (folder / name).write_bytes((SHARED / "coat" / name).read_bytes().replace(b"\r\n", b"\n"))
    download("coat", source=folder, quiet=True, force=True)
    with pytest.raises(DataError, match="stale .*atrec preprocess coat"):
        load_processed("coat")
    lf = load_data("coat")  # re-preprocesses the stale store
    assert np.array_equal(lf.train.rating, crlf.train.rating) and lf.checksums != crlf.checksums
    assert load_processed("coat").checksums == lf.checksums


def test_ml100k(data_dir):
    download("ml-100k", source=SHARED / "ml-100k", quiet=True)
    data = load_data("ml-100k")  # raw present, not processed: preprocesses first
    sizes = (data.num_users, data.num_items, len(data.train), len(data.test))
    assert sizes == (943, 1682, 100_000, 0)
    assert data.train.histogram().tolist() == [6110, 11370, 27145, 34174, 21201]
    # first line of u.data: "196\t242\t3\t881250949", 1-based
    assert (data.train.user[0], data.train.item[0], data.train.rating[0]) == (195, 241, 3)
    assert (processed_dir("ml-100k") / "manifest.json").exists()


def test_missing_and_corrupt_stores(data_dir):
    with pytest.raises(DataError, match="coat is not downloaded: run 'atrec download coat'"):
        load_processed("coat")
    with pytest.raises(DataError, match="not downloaded"):
        load_data("coat")
    with pytest.raises(DataError, match="no raw copy of yahoo .*--source PATH"):
        preprocess("yahoo")
    download("coat", source=SHARED / "coat", quiet=True)
    with pytest.raises(DataError, match="not preprocessed: run 'atrec preprocess coat'"):
        load_processed("coat")
    preprocess("coat")
    manifest = processed_dir("coat") / "manifest.json"
    manifest.write_text("{ not json")
    with pytest.raises(DataError, match="manifest.json is corrupt"):
        load_processed("coat")
    preprocess("coat")
    manifest.write_text(manifest.read_text().replace('"schema": 1', '"schema": 99'))
    with pytest.raises(DataError, match="another format .*run 'atrec preprocess coat'"):
        load_processed("coat")
    preprocess("coat")
    store = processed_dir("coat") / "ratings.npz"
    store.write_bytes(store.read_bytes()[:-100])
    with pytest.raises(DataError, match="does not match its manifest"):
        load_processed("coat")


def test_a_raw_file_failing_its_checksum_is_refused(data_dir):
    download("coat", source=SHARED / "coat", quiet=True)
    raw = data_dir / "coat" / "raw" / "train.ascii"
    raw.write_bytes(raw.read_bytes().replace(b"1", b"2", 1))
    with pytest.raises(DataError, match="fails its checksum"):
        preprocess("coat")
    assert not processed_dir("coat").exists()


# --- parser errors: (case, file content or None for no file, parser, exception, fragment) -----

def _matrix(rows: int, cols: int, value: str = "0") -> str:
    return "".join(" ".join([value] * cols) + "\r\n" for _ in range(rows))


def _coat(path):
    return parse_coat_matrix(path, shape=(3, 4))


def _yahoo(path):
    return parse_triples(path, 3)


def _ml(path):
    return parse_triples(path, 4)


BAD_FILES = [
    ("missing", None, _coat, DataError, "is missing"),
    ("empty", "", _yahoo, DataError, "is empty"),
    ("blank-only", "\n\n", _coat, DataError, "is empty"),
    ("truncated-row", _matrix(2, 4) + "0 0", _coat, DataError, "line 3: 2 fields, expected 4"),
    ("wrong-shape-rows", _matrix(2, 4), _coat, DataError, "has 2 rows, expected 3"),
    ("wrong-shape-cols", _matrix(3, 5), _coat, DataError, "line 1: 5 fields, expected 4"),
    ("non-numeric-matrix", _matrix(2, 4) + "0 x 0 0\r\n", _coat, DataError,
     "line 3: field 'x' is not an integer"),
    ("rating-6-matrix", _matrix(1, 4) + "0 0 6 0\n" + _matrix(1, 4), _coat, DataError,
     "line 2, column 3: rating 6 outside 1..5"),
    ("negative-matrix", _matrix(1, 4) + "0 0 -1 0\n" + _matrix(1, 4), _coat, DataError,
     "rating -1 outside"),
    ("truncated-triple", "1\t1\t5\n2\t2\n", _yahoo, DataError, "line 2: 2 fields, expected 3"),
    ("wrong-column-count", "1\t1\t5\n", _ml, DataError, "line 1: 3 fields, expected 4"),
    ("non-numeric-triple", "1\t1\t5\n1\tabc\t3\n", _yahoo, DataError,
     "line 2: field 'abc' is not an integer"),
    ("float-rating", "1\t1\t4.5\n", _yahoo, DataError, "field '4.5' is not an integer"),
    ("rating-0", "1\t1\t5\n2\t1\t0\n", _yahoo, DataError, "line 2: rating 0 outside 1..5"),
    ("rating-7", "1\t1\t7\t881250949\n", _ml, DataError, "line 1: rating 7 outside 1..5"),
    ("user-id-0", "0\t1\t5\n", _yahoo, DataError, "line 1: user id 0 is below 1"),
    ("duplicate", "1\t1\t5\n2\t3\t1\n1\t1\t4\n", _yahoo, DataError,
     "line 3: duplicate (user 1, item 1) pair, first on line 1"),
    ("huge-number", "1\t99999999999999999999999\t5\n", _yahoo, DataError, "out of range"),
]


@pytest.mark.parametrize("content, parser, exc, fragment",
                         [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES])
def test_bad_files_raise_one_line_data_errors(tmp_path, content, parser, exc, fragment):
    path = tmp_path / "file.txt"
    if content is not None:
        path.write_text(content)
    with pytest.raises(exc, match=re.escape(fragment)) as info:
        parser(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_parsers_accept_both_line_endings_and_trailing_blank_lines(tmp_path):
    path = tmp_path / "m.ascii"
    path.write_bytes(b"0 3 0 0\r\n5 0 0 1\r\n0 0 0 0\r\n\r\n")
    ratings = _coat(path)
    assert ratings.user.tolist() == [0, 1, 1] and ratings.item.tolist() == [1, 0, 3]
    assert ratings.rating.tolist() == [3, 5, 1]
    path.write_bytes(b"3 1 5\n1 2 4\n")
    ratings = _yahoo(path)
    assert (ratings.user.tolist(), ratings.item.tolist(), ratings.rating.tolist()) == \
        ([2, 0], [0, 1], [5, 4])


# --- Yahoo! R3 format, with tiny synthetic files -----------------------------------------------

def _install_tiny_yahoo(monkeypatch, data_dir, train: bytes, test: bytes) -> None:
    """Register checksums of the tiny files in place of the real ones, and install them raw."""
    real = catalogue.REGISTRY["yahoo"]
    files = tuple(dataclasses.replace(f, sha256=hashlib.sha256(b).hexdigest(),
                                      canonical_sha256=hashlib.sha256(b).hexdigest(),
                                      rows=len(b.splitlines()))
                  for f, b in zip(real.files, (train, test)))
    monkeypatch.setitem(catalogue.REGISTRY, "yahoo", dataclasses.replace(real, files=files))
    raw = data_dir / "yahoo" / "raw"
    raw.mkdir(parents=True)
    (raw / YAHOO_TRAIN).write_bytes(train)
    (raw / YAHOO_TEST).write_bytes(test)


def test_yahoo_format(data_dir, monkeypatch):
    train, test = b"1\t1\t5\n3\t2\t1\n2\t4\t3\n", b"1\t2\t2\n2\t1\t1\n"
    _install_tiny_yahoo(monkeypatch, data_dir, train, test)
    data = preprocess("yahoo", quiet=True)
    assert (data.num_users, data.num_items) == (3, 4)
    assert data.train.user.tolist() == [0, 2, 1] and data.train.item.tolist() == [0, 1, 3]
    assert data.test.rating.tolist() == [2, 1]


def test_yahoo_test_ids_beyond_train_are_refused_and_nothing_is_written(data_dir, monkeypatch):
    _install_tiny_yahoo(monkeypatch, data_dir, b"1\t1\t5\n2\t2\t1\n", b"9\t1\t2\n")
    with pytest.raises(DataError, match="beyond the training part"):
        preprocess("yahoo")
    assert not processed_dir("yahoo").exists()


# --- command line --------------------------------------------------------------------------

def test_cli_preprocess_coat_prints_the_statistics(tmp_path):
    env = {"ATREC_DATA_DIR": str(tmp_path)}
    runner = CliRunner()
    assert runner.invoke(main, ["download", "coat", "--source", str(SHARED / "coat"), "-q"],
                         env=env).exit_code == 0
    result = runner.invoke(main, ["preprocess", "coat"], env=env)
    assert result.exit_code == 0, result.stderr
    row = next(line.split() for line in result.stdout.splitlines() if line.startswith("coat"))
    assert row[:5] == ["coat", "290", "300", "6960", "4640"] and row[-1] == "0.049"
    as_json = json.loads(runner.invoke(main, ["preprocess", "coat", "--format", "json"],
                                       env=env).stdout)
    assert round(as_json[0]["KL(train||test)"], 4) == 0.0490


@pytest.mark.parametrize("args, code, fragment", [
    (["preprocess", "coat"], 3, "no raw copy of coat"),
    (["preprocess", "imdb"], 2, "unknown dataset 'imdb'"),
])
def test_cli_preprocess_errors(tmp_path, args, code, fragment):
    result = CliRunner().invoke(main, args, env={"ATREC_DATA_DIR": str(tmp_path)})
    assert result.exit_code == code
    assert result.stderr.count("\n") == 1 and fragment in result.stderr
    assert "Traceback" not in result.output + result.stderr
