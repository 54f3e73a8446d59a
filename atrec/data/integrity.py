"""Checking a dataset file against its catalogue entry, so corrupt or foreign data is never used.

A file passes when its line count matches (checked first, for a clearer message) and its bytes
match the official SHA-256, as they are or with CRLF replaced by LF. Both the download (before
installing a copy) and preprocessing (before reading one) check with :func:`verify_file`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from atrec.data.catalogue import FileSpec
from atrec.errors import DataError


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` as lower-case hex."""
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes:
    """The bytes of a dataset file; a missing or unreadable file is a one-line DataError."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path} is missing: run 'atrec download' for its dataset (--force "
                        f"fetches it again)") from None
    except OSError as exc:
        raise DataError(f"cannot read {path} ({exc.strerror}): check its permissions") from None


def verify_file(path: Path, spec: FileSpec, label: str | None = None) -> str:
    """Check ``path`` against ``spec``; return the SHA-256 of its bytes as they are.

    Passes when the bytes match the official digest, or when they match it once CRLF line
    endings are replaced by LF. Raises :class:`DataError` otherwise (or when ``spec.rows`` is
    set and the line count differs), naming the file as ``label`` (default: its path).
    """
    data = read_bytes(path)
    label = label or str(path)
    if spec.rows is not None:
        rows = sum(1 for line in data.splitlines() if line.strip())
        if rows != spec.rows:
            raise DataError(
                f"{label} has {rows:,} rows, expected {spec.rows:,}: it is truncated or not the "
                f"official {spec.name}; use the original file"
            )
    digest = sha256_hex(data)
    if digest != spec.sha256 and sha256_hex(data.replace(b"\r\n", b"\n")) != spec.canonical_sha256:
        raise DataError(
            f"{label} fails its checksum (sha256 {digest[:16]}..., expected {spec.sha256[:16]}...):"
            f" it is corrupt or another version of {spec.name}; use the official file"
        )
    return digest
