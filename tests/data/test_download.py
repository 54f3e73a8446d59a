"""``download``: from folders / archives / a loopback URL, verification before install, refusal
of unsafe archives (atrec.data.sources, exercised through ``download``), and ``atrec download``."""

import dataclasses
import hashlib
import http.server
import io
import os
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED  # noqa: E402  (tests/ is on sys.path)

from atrec.cli import main
from atrec.data import catalogue
from atrec.data.catalogue import YAHOO_TEST, YAHOO_TRAIN, get_spec
from atrec.data.download import download, progress_bar
from atrec.data.integrity import verify_file
from atrec.errors import AtrecError, DataError

COAT_FILES = ("train.ascii", "test.ascii")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()



@pytest.fixture(scope="session")
def coat_bytes():
    return {name: (SHARED / "coat" / name).read_bytes() for name in COAT_FILES}


def _zip(path: Path, members: dict) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _tgz(path: Path, members: dict, kinds: dict | None = None) -> Path:
    """A .tar.gz with regular members, plus special ones: name -> (tar type, link target)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, (kind, target) in (kinds or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            tar.addfile(info)
    return path


def _coat_zip(path: Path, coat_bytes: dict, lf: bool = False) -> Path:
    members = {f"coat/{n}": (b.replace(b"\r\n", b"\n") if lf else b) for n, b in coat_bytes.items()}
    members["coat/README.txt"] = b"readme"
    return _zip(path, members)


def _leftovers(data_dir: Path, name: str) -> list[str]:
    """Names in the dataset folder other than a complete raw/ (staging, temp, partial files)."""
    folder = data_dir / name
    return sorted(p.name for p in folder.iterdir() if p.name != "raw") if folder.exists() else []


def test_download_from_folder_then_cached_then_forced(data_dir):
    first = download("coat", source=SHARED / "coat", quiet=True)
    assert not first.cached and first.folder == data_dir / "coat" / "raw"
    # the rating files and, since the shared folder holds them, the optional side files
    side = [f.name for f in get_spec("coat").side]
    assert sorted(p.name for p in first.folder.iterdir()) == sorted([*COAT_FILES, *side])
    assert sorted(p.name for p in first.files) == sorted([*COAT_FILES, *side])
    for name in COAT_FILES:
        assert (first.folder / name).read_bytes() == (SHARED / "coat" / name).read_bytes()
    again = download("coat", source=SHARED / "coat", quiet=True)
    assert again.cached and "nothing to do" in again.message
    forced = download("coat", source=SHARED / "coat", quiet=True, force=True)
    assert not forced.cached and _leftovers(data_dir, "coat") == []


@pytest.mark.parametrize("lf", [False, True], ids=["crlf", "lf"])
def test_download_from_zip_accepts_either_line_ending(data_dir, tmp_path, coat_bytes, lf):
    archive = _coat_zip(tmp_path / "coat.zip", coat_bytes, lf=lf)
    result = download("coat", source=archive, quiet=True)
    train = (result.folder / "train.ascii").read_bytes()
    assert (b"\r\n" in train) is not lf
    assert train.replace(b"\r\n", b"\n") == coat_bytes["train.ascii"].replace(b"\r\n", b"\n")
    assert _leftovers(data_dir, "coat") == []
    # an archive without the optional side files installs the rating files only
    assert sorted(p.name for p in result.folder.iterdir()) == sorted(COAT_FILES)


def test_side_files_are_verified_like_the_rating_files(data_dir, tmp_path, coat_bytes):
    folder = tmp_path / "coat"
    (folder / "user_item_features").mkdir(parents=True)
    for name, data in coat_bytes.items():
        (folder / name).write_bytes(data)
    (folder / "propensities.ascii").write_bytes(b"0.5 " * 300 + b"\n")
    with pytest.raises(DataError, match="propensities.ascii"):
        download("coat", source=folder, quiet=True)
    assert not (data_dir / "coat" / "raw").exists()


def test_download_lf_folder_and_single_file(data_dir, tmp_path, coat_bytes):
    folder = tmp_path / "lf"
    folder.mkdir()
    for name, data in coat_bytes.items():
        (folder / name).write_bytes(data.replace(b"\r\n", b"\n"))
    download("coat", source=folder, quiet=True)
    result = download("ml-100k", source=SHARED / "ml-100k" / "u.data", quiet=True)
    assert [p.name for p in result.files] == ["u.data"]


def test_a_corrupt_cached_copy_is_replaced(data_dir):
    download("coat", source=SHARED / "coat", quiet=True)
    raw = data_dir / "coat" / "raw" / "test.ascii"
    raw.write_bytes(raw.read_bytes()[:-10])
    result = download("coat", source=SHARED / "coat", quiet=True)
    assert not result.cached
    verify_file(raw, get_spec("coat").files[1])


# --- bad inputs: (how to build the case, exception type, message fragment) --------------------
# Each builder returns the keyword arguments of ``download`` (a ``source`` path, or a ``name``).

def _src_missing(tmp_path, coat_bytes, monkeypatch):
    return {"source": tmp_path / "nowhere.zip"}


def _src_truncated(tmp_path, coat_bytes, monkeypatch):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "train.ascii").write_bytes(coat_bytes["train.ascii"][:1000])
    (folder / "test.ascii").write_bytes(coat_bytes["test.ascii"])
    return {"source": folder}


def _src_wrong_checksum(tmp_path, coat_bytes, monkeypatch):
    changed = dict(coat_bytes)
    changed["test.ascii"] = coat_bytes["test.ascii"].replace(b"0 ", b"1 ", 1)
    return {"source": _coat_zip(tmp_path / "coat.zip", changed)}


def _src_missing_member(tmp_path, coat_bytes, monkeypatch):
    return {"source": _zip(tmp_path / "coat.zip", {"coat/train.ascii": coat_bytes["train.ascii"]})}


def _src_single_file(tmp_path, coat_bytes, monkeypatch):
    return {"source": SHARED / "coat" / "train.ascii"}


def _src_dotdot(tmp_path, coat_bytes, monkeypatch):
    members = {f"coat/{n}": b for n, b in coat_bytes.items()}
    members["coat/../../evil.txt"] = b"x"
    return {"source": _zip(tmp_path / "coat.zip", members)}


def _src_absolute(tmp_path, coat_bytes, monkeypatch):
    members = {f"coat/{n}": b for n, b in coat_bytes.items()}
    return {"source": _tgz(tmp_path / "coat.tgz", {**members, "/tmp/evil.txt": b"x"})}


def _src_symlink_tar(tmp_path, coat_bytes, monkeypatch):
    members = {f"coat/{n}": b for n, b in coat_bytes.items()}
    link = {"coat/link": (tarfile.SYMTYPE, "/etc/passwd")}
    return {"source": _tgz(tmp_path / "coat.tar.gz", members, link)}


def _src_hardlink_tar(tmp_path, coat_bytes, monkeypatch):
    members = {f"coat/{n}": b for n, b in coat_bytes.items()}
    link = {"coat/hard": (tarfile.LNKTYPE, "/etc/passwd")}
    return {"source": _tgz(tmp_path / "coat.tar.gz", members, link)}


def _src_device_tar(tmp_path, coat_bytes, monkeypatch):
    members = {f"coat/{n}": b for n, b in coat_bytes.items()}
    return {"source": _tgz(tmp_path / "coat.tgz", members, {"coat/dev": (tarfile.CHRTYPE, "")})}


def _src_symlink_zip(tmp_path, coat_bytes, monkeypatch):
    path = _coat_zip(tmp_path / "coat.zip", coat_bytes)
    with zipfile.ZipFile(path, "a") as zf:
        info = zipfile.ZipInfo("coat/link")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    return {"source": path}


def _src_not_an_archive(tmp_path, coat_bytes, monkeypatch):
    path = tmp_path / "coat.zip"
    path.write_bytes(b"this is not a zip file")
    return {"source": path}


def _src_unknown_name(tmp_path, coat_bytes, monkeypatch):
    return {"name": "netflix", "source": SHARED / "coat"}


def _src_unwritable_data_folder(tmp_path, coat_bytes, monkeypatch):
    if os.geteuid() == 0:
        # root bypasses permission bits: a path under a regular FILE fails for root too
        blocker = tmp_path / "blocker"
        blocker.write_text("a file, not a folder")
        target = blocker / "data"
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        target = locked / "data"
    monkeypatch.setenv("ATREC_DATA_DIR", str(target))
    return {"source": SHARED / "coat"}


BAD_SOURCES = [
    (_src_missing, DataError, "does not exist"),
    (_src_truncated, DataError, "has 2 rows, expected 290"),
    (_src_wrong_checksum, DataError, r"test\.ascii from \S*coat\.zip fails its checksum"),
    (_src_missing_member, DataError, "has no test.ascii"),
    (_src_single_file, DataError, "is a single file"),
    (_src_dotdot, DataError, "climbing out with '..'"),
    (_src_absolute, DataError, "absolute path"),
    (_src_symlink_tar, DataError, "link member"),
    (_src_hardlink_tar, DataError, "link member"),
    (_src_device_tar, DataError, "device member"),
    (_src_symlink_zip, DataError, "link member"),
    (_src_not_an_archive, DataError, "cannot read archive"),
    (_src_unknown_name, AtrecError, "unknown dataset 'netflix': choose from coat"),
    (_src_unwritable_data_folder, AtrecError, "data folder .*ATREC_DATA_DIR"),
]


@pytest.mark.parametrize("build, exc, fragment", BAD_SOURCES,
                         ids=[b[0].__name__.removeprefix("_src_") for b in BAD_SOURCES])
def test_bad_sources_fail_with_one_line_and_leave_nothing(data_dir, tmp_path, coat_bytes,
                                                          monkeypatch, build, exc, fragment):
    kwargs = {"name": "coat", **build(tmp_path, coat_bytes, monkeypatch)}
    with pytest.raises(exc, match=fragment) as info:
        download(quiet=True, **kwargs)
    assert "\n" not in str(info.value)
    assert not (data_dir / "coat" / "raw").exists()
    assert _leftovers(data_dir, "coat") == []
    assert not (tmp_path / "evil.txt").exists() and not Path("/tmp/evil.txt").exists()


def test_a_failed_forced_download_keeps_the_valid_copy(data_dir, tmp_path, coat_bytes,
                                                       monkeypatch):
    download("coat", source=SHARED / "coat", quiet=True)
    with pytest.raises(DataError, match="fails its checksum"):
        download("coat", quiet=True, force=True,
                 **_src_wrong_checksum(tmp_path, coat_bytes, monkeypatch))
    assert download("coat", quiet=True).cached
    assert _leftovers(data_dir, "coat") == []


# --- the URL path, against a loopback HTTP server ---------------------------------------------

@pytest.fixture
def http_root(tmp_path):
    """Serve ``tmp_path / 'www'`` on 127.0.0.1; yields (folder, base URL)."""
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _point_coat_at(monkeypatch, url: str) -> None:
    monkeypatch.setitem(catalogue.REGISTRY, "coat",
                        dataclasses.replace(catalogue.REGISTRY["coat"], url=url))


def test_download_from_url(data_dir, http_root, coat_bytes, monkeypatch):
    root, base = http_root
    _coat_zip(root / "coat.zip", coat_bytes)
    _point_coat_at(monkeypatch, f"{base}/coat.zip")
    result = download("coat", quiet=True)
    assert base in result.message and not result.cached
    assert (result.folder / "test.ascii").read_bytes() == coat_bytes["test.ascii"]
    assert _leftovers(data_dir, "coat") == []


@pytest.mark.parametrize("path", ["missing.zip", None], ids=["http-404", "refused"])
def test_network_failure_points_to_source(data_dir, http_root, monkeypatch, path):
    _, base = http_root
    url = f"{base}/{path}" if path else "http://127.0.0.1:9/coat.zip"  # port 9: discard
    _point_coat_at(monkeypatch, url)
    with pytest.raises(DataError, match="atrec download coat --source PATH") as info:
        download("coat", quiet=True)
    assert "\n" not in str(info.value)
    assert _leftovers(data_dir, "coat") == [] and not (data_dir / "coat" / "raw").exists()


# --- Yahoo! R3 with tiny synthetic files in its format ----------------------------------------

YAHOO_TRAIN_ROWS = b"1\t1\t5\n1\t3\t1\n2\t2\t4\n3\t1\t2\n3\t4\t5\n"
YAHOO_TEST_ROWS = b"1\t2\t1\n2\t1\t2\n"


@pytest.fixture
def tiny_yahoo(monkeypatch):
    """Replace the yahoo registry entry by one for the tiny files (same names, same checks)."""
    real = catalogue.REGISTRY["yahoo"]
    specs = tuple(dataclasses.replace(f, sha256=_sha(data), canonical_sha256=_sha(data),
                                      rows=data.count(b"\n"))
                  for f, data in zip(real.files, (YAHOO_TRAIN_ROWS, YAHOO_TEST_ROWS)))
    monkeypatch.setitem(catalogue.REGISTRY, "yahoo", dataclasses.replace(real, files=specs))
    return specs


def test_yahoo_from_webscope_style_tgz(data_dir, tmp_path, tiny_yahoo):
    archive = _tgz(tmp_path / "dataset.tgz", {
        f"./{YAHOO_TRAIN}": YAHOO_TRAIN_ROWS, f"./{YAHOO_TEST}": YAHOO_TEST_ROWS,
        "./WebscopeReadMe.txt": b"licence",
    })
    result = download("yahoo", source=archive, quiet=True)
    assert "do not redistribute" in result.message
    assert (data_dir / "yahoo" / "raw" / YAHOO_TEST).read_bytes() == YAHOO_TEST_ROWS
    assert sorted(p.name for p in (data_dir / "yahoo" / "raw").iterdir()) == \
        sorted([YAHOO_TRAIN, YAHOO_TEST])


def test_yahoo_from_folder_with_wrong_row_count(data_dir, tmp_path, tiny_yahoo):
    folder = tmp_path / "r3"
    folder.mkdir()
    (folder / YAHOO_TRAIN).write_bytes(YAHOO_TRAIN_ROWS[:-6])  # last row cut off
    (folder / YAHOO_TEST).write_bytes(YAHOO_TEST_ROWS)
    with pytest.raises(DataError, match="has 4 rows, expected 5"):
        download("yahoo", source=folder, quiet=True)
    assert not (data_dir / "yahoo" / "raw").exists()


def test_yahoo_without_source_explains_how_to_get_it(data_dir):
    with pytest.raises(DataError) as info:
        download("yahoo")
    text = str(info.value)
    assert "webscope.sandbox.yahoo.com" in text and "R3 - Yahoo! Music ratings" in text
    assert "atrec download yahoo --source PATH" in text


# --- command line --------------------------------------------------------------------------

def _run(args, env_dir: Path):
    result = CliRunner().invoke(main, args, env={"ATREC_DATA_DIR": str(env_dir)})
    assert "Traceback" not in result.output + result.stderr
    return result


def test_cli_download_yahoo_without_source(tmp_path):
    result = _run(["download", "yahoo"], tmp_path)
    assert result.exit_code != 0
    assert "webscope.sandbox.yahoo.com" in result.stderr and "--source PATH" in result.stderr


@pytest.mark.parametrize("args, fragment", [
    (["download", "movielens"], "unknown dataset 'movielens'"),
    (["download", "coat", "--source", "/no/such/coat.zip"], "does not exist"),
    (["download", "all", "--source", "x.zip"], "--source gives one dataset"),
])
def test_cli_download_errors_are_one_line(tmp_path, args, fragment):
    result = _run(args, tmp_path)
    assert result.exit_code != 0
    assert result.stderr.count("\n") == 1 and fragment in result.stderr


def test_cli_download_coat_from_folder(tmp_path):
    result = _run(["download", "coat", "--source", str(SHARED / "coat")], tmp_path)
    assert result.exit_code == 0, result.stderr
    # the two rating files and the five side files of the shared folder
    assert "verified 7 file(s) (train.ascii, test.ascii, propensities.ascii" in result.stdout
    quiet = _run(["download", "coat", "--quiet"], tmp_path)
    assert quiet.exit_code == 0 and quiet.stdout == ""


def test_progress_bar_is_silent_when_quiet_or_not_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    assert type(progress_bar(10, "x", quiet=True)).__name__ == "_SilentBar"
    assert type(progress_bar(10, "x")).__name__ == "ProgressBar"
    monkeypatch.setattr("sys.stdout.isatty", lambda: False, raising=False)
    assert type(progress_bar(10, "x")).__name__ == "_SilentBar"
