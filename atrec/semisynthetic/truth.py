"""The benchmark's true matrix: MovieLens 100K completed once, cached like preprocessed data.

:func:`load_completion` returns the completed rating matrix of a
:class:`~atrec.semisynthetic.completion.CompletionRecipe` from
``data_dir()/ml-100k/semisynthetic/completion-<key>.npz`` and its manifest
(``completion-<key>.json``: recipe, seed, the SHA-256 of ``u.data`` it was trained on and of the
stored matrix, epochs, validation MSE per epoch, time, atrec's version). ``<key>`` is a hash of
the recipe, so another seed or setting is another file; a store whose manifest names another
``u.data`` (stale), or whose matrix does not match its checksum (corrupt), is rebuilt. The
conversion to rates (:mod:`atrec.semisynthetic.conversion`) is a sort and is not cached;
:class:`Truth` carries its checksum for the records.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from atrec._version import __version__
from atrec.data.integrity import sha256_hex
from atrec.data.preprocess import load_data
from atrec.fileio import atomic_write_bytes, atomic_write_text
from atrec.paths import data_dir
from atrec.semisynthetic.completion import CompletionRecipe, complete
from atrec.semisynthetic.conversion import to_rates

DATASET = "ml-100k"
SOURCE_FILE = "u.data"
STORE_SCHEMA = 1


def recipe_key(recipe: CompletionRecipe) -> str:
    """A short hash of the recipe (and the store's schema): the cache file's name."""
    text = json.dumps({"schema": STORE_SCHEMA, **recipe.as_dict()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def cache_dir() -> Path:
    """``data_dir()/ml-100k/semisynthetic``: the cached completions."""
    return data_dir() / DATASET / "semisynthetic"


@dataclass(frozen=True)
class StoredCompletion:
    """A completed matrix (float32 ``(943, 1682)`` on ML-100K) and its manifest (module doc);
    ``built``: whether this call trained it (False: read from the cache)."""

    matrix: np.ndarray
    manifest: dict
    built: bool


def _paths(recipe: CompletionRecipe) -> tuple[Path, Path]:
    stem = cache_dir() / f"completion-{recipe_key(recipe)}"
    return stem.with_suffix(".npz"), stem.with_suffix(".json")


def _read(recipe: CompletionRecipe, source_sha: str) -> StoredCompletion | None:
    """The cached completion of ``recipe`` when it is there, whole, and of this ``u.data``."""
    store, manifest_path = _paths(recipe)
    try:
        manifest = json.loads(manifest_path.read_text())
        blob = store.read_bytes()
    except (OSError, ValueError):
        return None
    if (not isinstance(manifest, dict) or manifest.get("schema") != STORE_SCHEMA
            or manifest.get("recipe") != recipe.as_dict()
            or manifest.get("source_sha256") != source_sha
            or manifest.get("store_sha256") != sha256_hex(blob)):
        return None
    with np.load(io.BytesIO(blob)) as arrays:
        return StoredCompletion(arrays["matrix"], manifest, built=False)


def load_completion(recipe: CompletionRecipe = CompletionRecipe(), rebuild: bool = False,
                    echo=None) -> StoredCompletion:
    """The completion of ``recipe`` on ML-100K: from the cache, or trained and cached (about
    20 s on one core). ``rebuild`` trains it again. ``echo`` (a callable) gets one line
    before a training starts. ML-100K must be downloaded (``atrec download ml-100k``); it is
    preprocessed here if needed (:func:`atrec.data.preprocess.load_data`)."""
    data = load_data(DATASET)
    source_sha = data.checksums[SOURCE_FILE]
    if not rebuild:
        cached = _read(recipe, source_sha)
        if cached is not None:
            return cached
    if echo is not None:
        echo(f"completing {DATASET} (MF, seed {recipe.seed}; cached for later runs)")
    done = complete(data.train, data.num_users, data.num_items, recipe)
    buf = io.BytesIO()
    np.savez(buf, matrix=done.matrix)
    blob = buf.getvalue()
    manifest = {
        "schema": STORE_SCHEMA, "recipe": recipe.as_dict(), "source_sha256": source_sha,
        "store_sha256": sha256_hex(blob), "shape": list(done.matrix.shape),
        "epochs": done.epochs, "best_epoch": done.best_epoch,
        "val_mse": [round(v, 6) for v in done.val_mse],
        "range": [float(done.matrix.min()), float(done.matrix.max())],
        "seconds": round(done.seconds, 2), "atrec_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    store, manifest_path = _paths(recipe)
    atomic_write_bytes(store, blob)
    atomic_write_text(manifest_path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return StoredCompletion(done.matrix, manifest, built=True)


@dataclass(frozen=True)
class Truth:
    """The true conversion rates ``rates`` (float64 ``(N,)``, row-major users x items) of one
    completion and one set of rank ``cuts``, with ``sha256`` of ``rates`` and the completion's
    manifest for the records."""

    rates: np.ndarray
    cuts: tuple[float, ...]
    sha256: str
    completion: dict


def truth_of(stored: StoredCompletion, cuts) -> Truth:
    """The conversion rates of a stored completion at rank ``cuts``."""
    rates = to_rates(stored.matrix, cuts)
    return Truth(rates, tuple(cuts), sha256_hex(rates.tobytes()), stored.manifest)
