"""Raw files -> canonical ratings -> a fast binary store with a manifest.

Parsers (docs/protocol.md, "Data"):

* Coat ``train.ascii`` / ``test.ascii``: 290 x 300 whitespace-separated integer matrices,
  0 = missing (CRLF endings in the official copy; LF is accepted too). Canonical order is the
  row-major order of the non-zero cells; user = row, item = column.
* Yahoo! R3 ``...-train.txt`` / ``...-test.txt``: ``user<TAB>item<TAB>rating``, 1-based ids,
  shifted to 0-based; file order is kept.
* MovieLens 100K ``u.data``: ``user<TAB>item<TAB>rating<TAB>timestamp``, 1-based, file order.
  The whole file is the ``train`` part and ``test`` is empty: the Figure-2 builder
  (:mod:`atrec.data.ml100k`) makes its own test set.

Every parser raises :class:`DataError` with one line (file, line, what to do) for a missing or
empty file, a truncated line or wrong column count, a non-numeric field, a rating outside 1..5,
a duplicate (user, item) pair, or a matrix of the wrong shape.

:func:`preprocess` writes ``data_dir()/NAME/processed/ratings.npz`` (uncompressed, compact dtypes)
and ``manifest.json`` atomically; :func:`load_processed` reads them back and refuses a store that
is missing, corrupt or stale (built from raw files other than the ones installed now).
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from atrec._version import __version__
from atrec.data.catalogue import get_spec, raw_dir, raw_present, resolve_names
from atrec.data.integrity import read_bytes, sha256_hex, verify_file
from atrec.data.ratings import RatingData, Ratings
from atrec.errors import DataError
from atrec.fileio import atomic_write_bytes, atomic_write_text
from atrec.paths import data_dir

COAT_SHAPE = (290, 300)
STORE = "ratings.npz"
MANIFEST = "manifest.json"
MANIFEST_SCHEMA = 1
_PARTS = ("train", "test")
_COLUMNS = ("user", "item", "rating")


def processed_dir(name: str) -> Path:
    """``data_dir()/NAME/processed``: the binary store and its manifest."""
    return data_dir() / name / "processed"


def _read_lines(path: Path) -> list[bytes]:
    """The lines of ``path`` (CRLF or LF), without trailing blank lines; never empty."""
    lines = read_bytes(path).splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise DataError(f"{path} is empty: download the dataset again with --force")
    return lines


def _fields(lines: list[bytes], columns: int, path: Path, what: str) -> list[list[bytes]]:
    """Split every line on whitespace; each must have exactly ``columns`` fields."""
    rows = [line.split() for line in lines]
    for no, row in enumerate(rows, 1):
        if len(row) != columns:
            raise DataError(
                f"{path}, line {no}: {len(row)} fields, expected {columns} ({what}): the file "
                f"is truncated or of another format; download it again with --force"
            )
    return rows


def _to_int(rows: list[list[bytes]], path: Path) -> np.ndarray:
    """``rows`` (n lines x k fields) as an int64 array of shape ``(n, k)``."""
    try:
        return np.array(rows).astype(np.int64)
    except (ValueError, OverflowError):
        pass
    for no, row in enumerate(rows, 1):
        for field in row:
            try:
                int(field)
            except ValueError:
                text = field.decode("utf-8", "replace")
                raise DataError(f"{path}, line {no}: field '{text}' is not an integer: the file "
                                f"is corrupt; download it again with --force") from None
    raise DataError(f"{path}: numbers out of range: the file is corrupt; download it again")


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def parse_coat_matrix(path: Path, shape: tuple[int, int] = COAT_SHAPE) -> Ratings:
    """Ratings of a Coat matrix file (``shape`` = (users, items), values 0..5, 0 = missing).

    Returns the non-zero cells in row-major order: user = row, item = column (0-based).
    """
    n_rows, n_cols = shape
    lines = _read_lines(path)
    rows = _fields(lines, n_cols, path, f"a {n_rows} x {n_cols} matrix")
    if len(rows) != n_rows:
        raise DataError(f"{path} has {len(rows)} rows, expected {n_rows} (a {n_rows} x {n_cols} "
                        f"matrix): the file is truncated or not Coat's; download it again")
    matrix = _to_int(rows, path)
    bad = (matrix < 0) | (matrix > 5)
    if bad.any():
        r, c = np.unravel_index(_first_bad(bad.ravel()), matrix.shape)
        raise DataError(f"{path}, line {r + 1}, column {c + 1}: rating {matrix[r, c]} outside "
                        f"1..5 (0 = missing): the file is corrupt; download it again")
    user, item = np.nonzero(matrix)  # row-major order
    return Ratings.from_arrays(user, item, matrix[user, item])


def parse_triples(path: Path, columns: int = 3) -> Ratings:
    """Ratings of a ``user item rating [timestamp]`` file with 1-based ids, in file order.

    ``columns`` is 3 (Yahoo! R3) or 4 (MovieLens ``u.data``; the timestamp is checked to be an
    integer and dropped). Ids are shifted to 0-based.
    """
    if columns not in (3, 4):
        raise ValueError(f"columns must be 3 or 4, got {columns}")
    what = "user, item, rating" + (", timestamp" if columns == 4 else "")
    lines = _read_lines(path)
    table = _to_int(_fields(lines, columns, path, what), path)
    user, item, rating = table[:, 0], table[:, 1], table[:, 2]
    for col, label in ((user, "user"), (item, "item")):
        if (col < 1).any():
            k = _first_bad(col < 1)
            raise DataError(f"{path}, line {k + 1}: {label} id {col[k]} is below 1 (ids are "
                            f"1-based): the file is corrupt; download it again")
    if ((rating < 1) | (rating > 5)).any():
        k = _first_bad((rating < 1) | (rating > 5))
        raise DataError(f"{path}, line {k + 1}: rating {rating[k]} outside 1..5: the file is "
                        f"corrupt; download it again")
    key = user * (int(item.max()) + 1) + item
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    dup = first[inverse] != np.arange(len(key))
    if dup.any():
        k = _first_bad(dup)
        raise DataError(f"{path}, line {k + 1}: duplicate (user {user[k]}, item {item[k]}) pair, "
                        f"first on line {first[inverse[k]] + 1}: the file is corrupt; download "
                        f"it again")
    return Ratings.from_arrays(user - 1, item - 1, rating)


def _parse_parts(name: str, folder: Path) -> dict[str, Ratings]:
    """The ``train`` and ``test`` Ratings of dataset ``name`` from its raw ``folder``."""
    files = {f.role: folder / f.name for f in get_spec(name).files}
    if name == "coat":
        return {role: parse_coat_matrix(path) for role, path in files.items()}
    if name == "yahoo":
        return {role: parse_triples(path, 3) for role, path in files.items()}
    if name == "ml-100k":
        empty = Ratings.from_arrays([], [], [])
        return {"train": parse_triples(files["train"], 4), "test": empty}
    raise ValueError(f"no parser for dataset {name!r}")


def build_rating_data(name: str, train: Ratings, test: Ratings, checksums: dict) -> RatingData:
    """Bundle the parts; ``num_users`` / ``num_items`` = max id + 1 over ``train``.

    Raises :class:`DataError` when a test id is not below them (a test user or item that the
    training part never mentions cannot be scored).
    """
    if len(train) == 0:
        raise DataError(f"{name}: the training part is empty: download the dataset again")
    num_users, num_items = int(train.user.max()) + 1, int(train.item.max()) + 1
    if len(test) and (int(test.user.max()) >= num_users or int(test.item.max()) >= num_items):
        raise DataError(f"{name}: the test part has user or item ids beyond the training part "
                        f"({num_users} users, {num_items} items): the files do not belong together")
    return RatingData(name, train, test, num_users, num_items, dict(checksums))


def _store_bytes(data: RatingData) -> bytes:
    """``data`` as an uncompressed .npz: ``<part>_<column>`` arrays, user int32, item int16 when
    every id fits (else int32), rating int8."""
    item_dtype = np.int16 if data.num_items <= np.iinfo(np.int16).max else np.int32
    dtypes = {"user": np.int32, "item": item_dtype, "rating": np.int8}
    arrays = {f"{part}_{col}": getattr(getattr(data, part), col).astype(dtypes[col])
              for part in _PARTS for col in _COLUMNS}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def preprocess(name: str, quiet: bool = False) -> RatingData:
    """Parse the verified raw files of ``name`` and write the binary store and its manifest.

    Returns the :class:`RatingData` (``checksums`` = SHA-256 of the raw files). Raises
    :class:`DataError` when the raw copy is missing or fails its checksum, or a file is invalid.
    ``quiet`` is accepted for symmetry with the other long steps; parsing takes well under a
    second, so nothing is drawn.
    """
    spec = get_spec(name)
    folder = raw_dir(name)
    if not raw_present(name):
        raise DataError(f"no raw copy of {name} in {folder}: {_download_hint(name)} first")
    checksums = {f.name: verify_file(folder / f.name, f) for f in spec.files}
    parts = _parse_parts(name, folder)
    data = build_rating_data(name, parts["train"], parts["test"], checksums)
    write_store(data)
    return data


def write_store(data: RatingData) -> None:
    """Write ``data`` as the binary store of dataset ``data.name`` and its manifest, the
    manifest naming ``data.checksums`` as its source files.

    :func:`preprocess` calls it with the parsed raw files; a benchmark can install generated
    data under a catalogue name (Yahoo-size synthetic data as ``yahoo``) the same way, and
    :func:`load_processed` then reads it like any other store.
    """
    name = data.name
    checksums = data.checksums
    store = _store_bytes(data)
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "dataset": name,
        "source_files": checksums,
        "store": {"file": STORE, "sha256": sha256_hex(store)},
        "counts": {part: len(getattr(data, part)) for part in _PARTS},
        "num_users": data.num_users,
        "num_items": data.num_items,
        "atrec_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    out = processed_dir(name)
    atomic_write_bytes(out / STORE, store)
    atomic_write_text(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _download_hint(name: str) -> str:
    return "run 'atrec download yahoo --source PATH'" if get_spec(name).url is None \
        else f"run 'atrec download {name}'"


def load_processed(name: str) -> RatingData:
    """Read the binary store of ``name`` back (ids int32, ratings int8).

    Raises :class:`DataError` saying what to run when the store is missing, corrupt, or stale:
    its manifest names raw files whose SHA-256 differs from the raw files installed now (a raw
    folder that was deleted afterwards does not make the store stale).
    """
    spec = get_spec(name)
    out = processed_dir(name)
    redo = f"run 'atrec preprocess {name}'"
    if not (out / MANIFEST).is_file() or not (out / STORE).is_file():
        if raw_present(name):
            raise DataError(f"{name} is downloaded but not preprocessed: {redo}")
        raise DataError(f"{name} is not downloaded: {_download_hint(name)}, then {redo}")
    try:
        manifest = json.loads((out / MANIFEST).read_text())
        recorded, store_sha = manifest["source_files"], manifest["store"]["sha256"]
        counts = manifest["counts"]
    except (ValueError, KeyError, TypeError):
        raise DataError(f"{out / MANIFEST} is corrupt: {redo}") from None
    if manifest.get("schema") != MANIFEST_SCHEMA:
        raise DataError(f"the processed {name} data was written in another format "
                        f"(schema {manifest.get('schema')!r}): {redo}")
    for f in spec.files:
        path = raw_dir(name) / f.name
        if path.is_file() and sha256_hex(path.read_bytes()) != recorded.get(f.name):
            raise DataError(f"the processed {name} data is stale ({f.name} changed since): {redo}")
    blob = (out / STORE).read_bytes()
    if sha256_hex(blob) != store_sha:
        raise DataError(f"{out / STORE} does not match its manifest (corrupt or stale): {redo}")
    with np.load(io.BytesIO(blob)) as arrays:
        parts = {part: Ratings.from_arrays(*(arrays[f"{part}_{col}"] for col in _COLUMNS))
                 for part in _PARTS}
    if {part: len(parts[part]) for part in _PARTS} != counts:
        raise DataError(f"{out / STORE} does not match its manifest counts: {redo}")
    return RatingData(name, parts["train"], parts["test"], int(manifest["num_users"]),
                      int(manifest["num_items"]), dict(recorded))


def load_data(name: str) -> RatingData:
    """:func:`load_processed`, preprocessing first when the raw files are installed but the
    store is missing or stale. Raises :class:`DataError` (what to run) otherwise."""
    try:
        return load_processed(name)
    except DataError:
        if not raw_present(name):
            raise
    return preprocess(name, quiet=True)


def preprocess_many(name: str, quiet: bool = False) -> list[RatingData]:
    """:func:`preprocess` every dataset a NAME argument names (see
    :func:`atrec.data.catalogue.resolve_names`: one name, a comma-separated list, or ``all``)."""
    return [preprocess(n, quiet=quiet) for n in resolve_names(name)]
