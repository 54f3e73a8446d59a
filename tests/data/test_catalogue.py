"""The catalogue: registry digests against the shared copies, spec validation, NAME arguments."""

import hashlib

import pytest
from conftest import SHARED  # noqa: E402  (tests/ is on sys.path)

from atrec.data.catalogue import YAHOO_TEST, YAHOO_TRAIN, FileSpec, get_spec, resolve_names


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_registry_digests_match_the_shared_copies():
    # Exact digests come from SHA256SUMS; the canonical ones are checked here independently.
    for name in ("coat", "ml-100k"):
        for f in get_spec(name).files:
            data = (SHARED / name / f.name).read_bytes()
            assert _sha(data) == f.sha256
            assert _sha(data.replace(b"\r\n", b"\n")) == f.canonical_sha256
    # the shared copies' checksum list, where the copies came with it (a user's own copy, or
    # the one make reproduce installed, has none: the digests above are the check there)
    if (SHARED / "SHA256SUMS").is_file():
        sums = dict(line.split()[::-1]
                    for line in (SHARED / "SHA256SUMS").read_text().splitlines())
        assert sums["coat/train.ascii"] == get_spec("coat").files[0].sha256


def test_real_yahoo_entry_keeps_the_official_checks():
    spec = get_spec("yahoo")
    assert spec.url is None
    assert [(f.name, f.rows) for f in spec.files] == [(YAHOO_TRAIN, 311_704), (YAHOO_TEST, 54_000)]
    assert spec.files[0].sha256.startswith("85538b3c")
    assert spec.files[1].sha256.startswith("f27a73be")


def test_file_spec_validation():
    with pytest.raises(ValueError, match="role"):
        FileSpec("a", "a", "valid", "0" * 64, "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        FileSpec("a", "a", "train", "xyz", "0" * 64)


def test_all_means_the_public_datasets_plus_an_installed_yahoo(data_dir):
    assert resolve_names("all") == ["coat", "ml-100k"]
    raw = data_dir / "yahoo" / "raw"
    raw.mkdir(parents=True)
    for name in (YAHOO_TRAIN, YAHOO_TEST):  # presence is what counts, not the contents
        (raw / name).write_bytes(b"1\t1\t5\n")
    assert resolve_names("all") == ["coat", "ml-100k", "yahoo"]
    assert resolve_names("ml-100k,coat") == ["ml-100k", "coat"]
