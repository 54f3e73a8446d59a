"""Side data of a dataset: user / item features and Coat's shipped propensities.

The feature-based propensity estimators (:mod:`atrec.propensity.features`) receive only a
:class:`~atrec.data.splits.Split`. They find its side data **by dataset name**
(``split.dataset``): :func:`load_features` and :func:`load_shipped_propensities` read the side
files of ``data_dir()/NAME/raw/`` (installed by ``atrec download NAME``, see
:mod:`atrec.data.catalogue`), check each against its SHA-256 and parse it. Nothing is cached and
the rating store is not involved. Datasets whose rows are re-indexed (Figure 2's
``ml-100k-minN``) have other names, so they never pick up the features of the original ids.

Features (one-hot or multi-hot 0/1 columns, float64):

* ``coat``: ``user_features.ascii`` (290 x 14: gender, age, location, fashion interest) and
  ``item_features.ascii`` (300 x 33: gender, jacket type, colour, on the front page), exactly as
  shipped; column names from the ``*_map.txt`` files.
* ``ml-100k``: from ``u.user`` (``id|age|gender|occupation|zip``): gender (2 columns), age in the
  seven groups of MovieLens 1M (under 18, 18-24, 25-34, 35-44, 45-49, 50-55, 56+) and occupation
  (21 columns, sorted by name); the zip code is left out. From ``u.item``: the 19 genre flags
  and the release decade (unknown, before 1950, the 1950s ... the 1990s: 7 columns). Row ``k``
  is the id ``k + 1`` of the file, which is atrec's 0-based id (docs/protocol.md, "Data").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from atrec.data.catalogue import raw_dir, side_spec
from atrec.data.integrity import verify_file
from atrec.errors import AtrecError, DataError

FEATURE_DATASETS = ("coat", "ml-100k")
SHIPPED_PROPENSITY_DATASETS = ("coat",)
COAT_SHAPE = (290, 300)
ML100K_GENRES = ("unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
                 "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery",
                 "Romance", "Sci-Fi", "Thriller", "War", "Western")
ML100K_AGE_EDGES = (18, 25, 35, 45, 50, 56)  # MovieLens 1M's age groups
ML100K_DECADES = ("unknown", "<1950", "1950s", "1960s", "1970s", "1980s", "1990s")


@dataclass(frozen=True)
class Features:
    """0/1 design columns: ``user`` ``(num_users, d_u)`` and ``item`` ``(num_items, d_i)``
    float64, with one name per column."""

    user: np.ndarray
    item: np.ndarray
    user_names: tuple[str, ...]
    item_names: tuple[str, ...]


def _side_bytes(name: str, file: str) -> bytes:
    """The verified bytes of side file ``file`` of ``name``; one-line DataError when absent."""
    path = raw_dir(name) / file
    if not path.is_file():
        raise DataError(f"{name}'s side file {file} is not installed in {raw_dir(name)}: run "
                        f"'atrec download {name} --force' (the official archive holds it)")
    verify_file(path, side_spec(name, file))
    return path.read_bytes()


def _matrix(data: bytes, shape: tuple[int, int], path: str) -> np.ndarray:
    values = np.array(data.split(), dtype=np.float64)
    if values.size != shape[0] * shape[1]:
        raise DataError(f"{path}: {values.size} numbers, expected {shape[0]} x {shape[1]}")
    return values.reshape(shape)


def load_shipped_propensities(name: str) -> np.ndarray:
    """Coat's ``propensities.ascii`` as a ``(290, 300)`` float64 matrix (user = row)."""
    if name not in SHIPPED_PROPENSITY_DATASETS:
        raise AtrecError(f"dataset '{name}' ships no propensities: only "
                         f"{', '.join(SHIPPED_PROPENSITY_DATASETS)} does")
    return _matrix(_side_bytes(name, "propensities.ascii"), COAT_SHAPE, "propensities.ascii")


def load_features(name: str) -> Features:
    """The user and item features of ``name`` (see the module docstring)."""
    if name == "coat":
        return _coat_features()
    if name == "ml-100k":
        return _ml100k_features()
    raise AtrecError(f"dataset '{name}' has no user / item features: only "
                     f"{', '.join(FEATURE_DATASETS)} have them")


def _coat_features() -> Features:
    def part(kind: str, rows: int) -> tuple[np.ndarray, tuple[str, ...]]:
        text = _side_bytes("coat", f"{kind}_features_map.txt").decode()
        names = tuple(line.strip() for line in text.splitlines() if line.strip())
        x = _matrix(_side_bytes("coat", f"{kind}_features.ascii"), (rows, len(names)),
                    f"{kind}_features.ascii")
        return x, names

    user, user_names = part("user", COAT_SHAPE[0])
    item, item_names = part("item", COAT_SHAPE[1])
    return Features(user, item, user_names, item_names)


def _records(name: str, file: str, columns: int) -> list[list[str]]:
    """``|``-separated records of ``file`` in id order (ids 1..n checked)."""
    lines = _side_bytes(name, file).decode("latin-1").splitlines()
    rows = [line.split("|") for line in lines if line.strip()]
    for no, row in enumerate(rows, 1):
        if len(row) != columns or row[0] != str(no):
            raise DataError(f"{raw_dir(name) / file}, line {no}: expected id {no} and {columns} "
                            f"'|'-separated fields; download it again with --force")
    return rows


def _one_hot(codes: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros((len(codes), width))
    out[np.arange(len(codes)), codes] = 1.0
    return out


def _decade(date: str) -> int:
    """Index into :data:`ML100K_DECADES` of a ``dd-Mon-yyyy`` release date ('' is unknown)."""
    if not date.strip():
        return 0
    year = int(date.strip()[-4:])
    return 1 if year < 1950 else min(2 + (year - 1950) // 10, len(ML100K_DECADES) - 1)


def _ml100k_features() -> Features:
    users = _records("ml-100k", "u.user", 5)
    age = np.searchsorted(ML100K_AGE_EDGES, [int(r[1]) for r in users], side="right")
    gender = np.array([("M", "F").index(r[2]) for r in users])
    jobs = sorted({r[3] for r in users})
    job = np.array([jobs.index(r[3]) for r in users])
    user = np.hstack([_one_hot(gender, 2), _one_hot(age, len(ML100K_AGE_EDGES) + 1),
                      _one_hot(job, len(jobs))])
    ages = ["age:<18"] + [f"age:{a}-{b - 1}" for a, b in zip(ML100K_AGE_EDGES, ML100K_AGE_EDGES[1:])]
    user_names = ("gender:M", "gender:F", *ages, f"age:{ML100K_AGE_EDGES[-1]}+",
                  *(f"occupation:{j}" for j in jobs))
    items = _records("ml-100k", "u.item", 5 + len(ML100K_GENRES))
    genres = np.array([[float(v) for v in r[5:]] for r in items])
    decade = np.array([_decade(r[2]) for r in items])
    item = np.hstack([genres, _one_hot(decade, len(ML100K_DECADES))])
    item_names = (*(f"genre:{g}" for g in ML100K_GENRES), *(f"decade:{d}" for d in ML100K_DECADES))
    return Features(user, item, user_names, item_names)
