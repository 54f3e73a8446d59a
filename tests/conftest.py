"""Shared fixtures: the real Coat copy (read-only, from ../shared/data), small synthetic data,
and a throwaway PostgreSQL server."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import data_sources
import numpy as np
import pytest
from run_groups import suite_environment

# before atrec is imported: it chooses its compilation cache then (tests/run_groups.py says why)
os.environ.update(suite_environment())
# Where the real Coat and ML-100K copies are (tests/data_sources.py), found before the data
# folder below replaces the user's (make reproduce installs them there)
_SOURCES = {name: data_sources.find(name) for name in data_sources.DATASETS}
# ... and then the source variables go, as the folders below: a test that needs one sets its own
for _name in (*data_sources.DATASETS, "yahoo"):
    os.environ.pop(data_sources.source_env(_name), None)
# Data and results folders of the test process's own, whatever the checkout or the user's
# environment holds: after `make reproduce` the checkout's data/ and results/ hold real
# datasets and records, and a test that fell back to them (the report header reads the
# processed data's manifest when no record names its files) would pass or fail depending on
# whether the main job ran first. A test that needs a folder still sets its own.
_FOLDERS = Path(tempfile.mkdtemp(prefix="atrec-tests-"))
os.environ["ATREC_DATA_DIR"] = str(_FOLDERS / "data")
os.environ["ATREC_RESULTS_DIR"] = str(_FOLDERS / "results")
atexit.register(shutil.rmtree, _FOLDERS, ignore_errors=True)

from atrec.data.ratings import RatingData, Ratings  # noqa: E402  (after the folders above)
from atrec.runtime import gcfreeze  # noqa: E402

# as the commands do: TensorFlow's objects skip the collector's walks (atrec.runtime.gcfreeze);
# the suite's tracing-heavy tests ran about 7% faster
gcfreeze.request()



def _assemble_shared(folder: Path) -> Path:
    """One folder holding ``coat/`` and ``ml-100k/`` as found (:data:`_SOURCES`): a link to a
    found folder, or the needed files copied out of a found archive or file (atrec's own
    staging, :func:`atrec.data.sources.stage_from_source`), beside the checksum list of the
    shared copies where there is one."""
    from atrec.data.catalogue import get_spec
    from atrec.data.sources import stage_from_source

    folder.mkdir(parents=True, exist_ok=True)
    for name, found in _SOURCES.items():
        if found is None:
            continue
        if found.is_dir():
            (folder / name).symlink_to(found.resolve(), target_is_directory=True)
        else:
            (folder / name).mkdir()
            stage_from_source(get_spec(name), found, folder / name)
        sums = found.resolve().parent / "SHA256SUMS"
        if found.is_dir() and sums.is_file() and not (folder / "SHA256SUMS").exists():
            (folder / "SHA256SUMS").symlink_to(sums)
    return folder


SHARED = _assemble_shared(_FOLDERS / "shared")
"""The real copies (module ``data_sources``): ``SHARED / "coat"``, ``SHARED / "ml-100k"``."""


def pytest_configure(config):
    """Stop before any test, in one line, when a real copy is found nowhere."""
    lacking = [name for name, found in _SOURCES.items() if found is None]
    if lacking:
        raise pytest.UsageError(data_sources.missing_line(lacking))


def _install_shared(name: str, tmp_path_factory) -> RatingData:
    """Dataset ``name`` as atrec loads it, downloaded from the shared copy into a session folder."""
    from atrec.data.download import download
    from atrec.data.preprocess import preprocess

    folder = tmp_path_factory.mktemp(f"{name}-data")
    old = os.environ.get("ATREC_DATA_DIR")
    os.environ["ATREC_DATA_DIR"] = str(folder)
    try:
        download(name, source=SHARED / name, quiet=True)
        return preprocess(name, quiet=True)
    finally:
        if old is None:
            del os.environ["ATREC_DATA_DIR"]
        else:
            os.environ["ATREC_DATA_DIR"] = old


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """An empty data folder for this test (``ATREC_DATA_DIR``)."""
    folder = tmp_path / "data"
    monkeypatch.setenv("ATREC_DATA_DIR", str(folder))
    return folder


@pytest.fixture
def reproduce_env(tmp_path, monkeypatch):
    """Empty data and results folders under ``tmp_path`` and the sources ``atrec reproduce``
    installs from: the shared Coat and ML-100K copies, no Yahoo! R3. Returns ``tmp_path``."""
    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("ATREC_COAT_SOURCE", str(SHARED / "coat"))
    monkeypatch.setenv("ATREC_ML_100K_SOURCE", str(SHARED / "ml-100k"))
    monkeypatch.delenv("ATREC_YAHOO_SOURCE", raising=False)
    return tmp_path


@pytest.fixture(scope="session")
def coat_data(tmp_path_factory) -> RatingData:
    """Coat as atrec loads it (train and test matrices), from the shared copy."""
    return _install_shared("coat", tmp_path_factory)


@pytest.fixture(scope="session")
def ml100k_data(tmp_path_factory) -> RatingData:
    """ML-100K as atrec loads it (all of u.data as ``train``, empty test), from the shared copy."""
    return _install_shared("ml-100k", tmp_path_factory)


@pytest.fixture(scope="session")
def coat_dir(tmp_path_factory):
    """A data folder with Coat installed from the shared copy (for ``ATREC_DATA_DIR``)."""
    from atrec.data.download import download
    from atrec.data.preprocess import preprocess

    folder = tmp_path_factory.mktemp("tune-data")
    old = os.environ.get("ATREC_DATA_DIR")
    os.environ["ATREC_DATA_DIR"] = str(folder)
    try:
        download("coat", source=SHARED / "coat", quiet=True)
        preprocess("coat", quiet=True)
    finally:
        if old is None:
            del os.environ["ATREC_DATA_DIR"]
        else:
            os.environ["ATREC_DATA_DIR"] = old
    return folder


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for the session (:mod:`local_postgres`), stopped at the end.

    It runs pgserver's binaries from a temporary folder and listens on 127.0.0.1, on a free port.
    Never skipped: pgserver and psycopg come with the dev extra, so a missing one is an error.
    """
    from local_postgres import LocalPostgres

    server = LocalPostgres()
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tiny_data() -> RatingData:
    """A small synthetic MNAR data set (40 users x 30 items) with a fixed seed."""
    rng = np.random.default_rng(5)
    n_u, n_i = 40, 30
    truth = np.clip(np.rint(3 + rng.normal(0, 1, (n_u, 3)) @ rng.normal(0, 0.6, (3, n_i))), 1, 5)
    cells = rng.permutation(n_u * n_i)
    train_cells, test_cells = cells[:400], cells[400:640]

    def ratings(c):
        u, i = np.divmod(c, n_i)
        return Ratings.from_arrays(u, i, truth[u, i])

    return RatingData("tiny", ratings(train_cells), ratings(test_cells), n_u, n_i, {})


@pytest.fixture(scope="session")
def small_mnar() -> RatingData:
    """A small MNAR data set from the synthetic generator (60 users x 40 items, 600 training
    and 240 MCAR test ratings), for the conformance suites over the method and propensity
    registries."""
    from atrec.data.synthetic import make_synthetic

    return make_synthetic(num_users=60, num_items=40, n_train=600, n_test_users=30,
                          test_per_user=8, dim=3, seed=0, name="small").data
