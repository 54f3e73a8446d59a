"""The entries of the compilation cache folder (:mod:`atrec.runtime.compilecache`) on disk:
which are whole, and the sweep that removes the others and keeps the folder under its limit.

An entry damaged after TensorFlow wrote it makes the loop's call fail, so every command sweeps
the folder when it starts (:func:`sweep`). Reading every entry's framing took 0.12 s for a
folder of 2,800 entries, 2% of a 20-seed binary MF run on Coat, on every command. So the sweep
keeps a list of the entries it found whole, each with its size and modification time in
nanoseconds (:data:`CHECKED`), and reads again only an entry that is not on it or no longer
matches it. TensorFlow writes an entry to a temporary file and renames it, and anything that
cuts an entry short or rewrites it changes its size or its time, so such an entry is read
again. The list is written whole to a temporary file and renamed, so two processes that sweep
at once each write a list that is true; the last one stays, and an entry missing from it is
read again by the next sweep. A damaged or missing list only means reading every entry.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

LIMIT_MB = 2000
"""Largest size of the cache folder (MB): an AT loop is 6-12 MB, an MF-IPS loop 1-3 MB, so this
holds several hundred loops, every loop of Table 1 and of a few tuning runs."""

CHECKED = "checked-entries.txt"
"""The sweep's list of the entries it found whole: ``name size mtime_ns`` per line."""

STALE_TEMPORARY_S = 3600
"""A temporary file older than this was left by a writer killed before its rename."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("truncated")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def entry_ok(path: Path) -> bool:
    """Whether ``path`` is a whole entry: its top-level protobuf fields (the key, the HLO, the
    executable) parse and end exactly at the end of the file, the executable present. Reads
    the field headers only."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            at, fields = 0, set()
            while at < size:
                f.seek(at)
                head = f.read(20)
                tag, used = _varint(head, 0)
                number, wire = tag >> 3, tag & 7
                if wire != 2:
                    return False
                length, used = _varint(head, used)
                at += used + length
                fields.add(number)
            return at == size and 3 in fields
    except (OSError, ValueError):
        return False


def _read_checked(where: Path) -> set[tuple[str, int, int]]:
    try:
        text = (where / CHECKED).read_text()
    except (OSError, UnicodeDecodeError):
        return set()
    checked = set()
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            checked.add((parts[0], int(parts[1]), int(parts[2])))
    return checked


def _write_checked(where: Path, checked: set[tuple[str, int, int]]) -> None:
    temporary = where / f"{CHECKED}.{os.getpid()}.tmp"
    try:
        temporary.write_text("".join(f"{n} {s} {t}\n" for n, s, t in sorted(checked)))
        os.replace(temporary, where / CHECKED)
    except OSError:      # a list not written: the next sweep reads the entries again
        try:
            temporary.unlink()
        except OSError:
            pass


def sweep(where: Path | None, limit_mb: float = LIMIT_MB, trust_list: bool = True) -> int:
    """Remove entries that are not whole (:func:`entry_ok`, skipped for an entry on the list of
    those already found whole unless ``trust_list`` is False) and folders under an entry's
    name, then the oldest entries while the folder is over ``limit_mb``. Returns how many were
    removed."""
    if where is None or not where.is_dir():
        return 0
    removed = 0
    before = _read_checked(where) if trust_list else set()
    checked = set()
    entries = []
    try:
        listing = list(os.scandir(where))
    except OSError:
        return 0
    for item in listing:
        path = Path(item.path)
        try:
            if item.name.endswith(".tmp"):   # a writer killed before its rename, an hour ago or more
                if item.stat().st_mtime < time.time() - STALE_TEMPORARY_S:
                    path.unlink()
                    removed += 1
                continue
            if not item.name.endswith(".pb"):
                continue
            if item.is_dir(follow_symlinks=False):   # not TensorFlow's: it would read it empty
                shutil.rmtree(path, ignore_errors=True)
                removed += 1
                continue
            stat = item.stat()
        except OSError:
            continue
        mark = (item.name, stat.st_size, stat.st_mtime_ns)
        if mark in before or entry_ok(path):
            checked.add(mark)
            entries.append((stat.st_mtime, stat.st_size, path))
            continue
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    total = sum(size for _, size, _ in entries)
    pruned = set()
    for _, size, path in sorted(entries):
        if total <= limit_mb * 2**20:
            break
        try:
            path.unlink()
            removed += 1
            total -= size
            pruned.add(path.name)
        except OSError:
            pass
    checked = {mark for mark in checked if mark[0] not in pruned}
    if checked != before:
        _write_checked(where, checked)
    return removed
