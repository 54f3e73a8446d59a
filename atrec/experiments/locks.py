"""Claims on seeds being trained, so that processes sharing a results folder split the work.

Before a process trains a group of seeds of one configuration it claims each seed: it creates
``<record folder>/.seed-NN.claim`` atomically (``os.open`` with ``O_CREAT | O_EXCL``) and writes
its owner into it (host, PID, the process's start time, when). A second process that finds a seed
claimed leaves the group to its owner and turns to other work; when it has nothing else left, it
waits for the claim to go and then loads the records the owner saved (or trains the seeds itself
when the owner went without saving them). Seeds are claimed one file each, in seed order, so two
runs that group the same seeds differently (``--seeds 4`` beside ``--seeds 8``) still never
train a seed twice, and never wait on each other in a cycle (nobody waits while holding a claim
it has not started to train).

A claim is *stale*, and the next process that meets it takes it over, when its owner can no
longer release it:

* owner on this host: its process is gone (``os.kill(pid, 0)`` fails), or the PID now belongs
  to a process started later (PID reuse; start times come from ``/proc`` where it exists);
* owner on another host, whose process cannot be looked at from here: the claim is older than
  :data:`STALE_AFTER_S` (12 hours, far longer than any group of seeds trains). Delete the
  ``.seed-NN.claim`` files of a machine known to be dead to take its work over sooner.

Taking over is itself guarded by a short-lived ``.claim.break`` file, so that two processes that
find the same stale claim do not both take it. The owner removes its claims when the group's
records are saved and on every way out of the run (an error, Ctrl-C); only ``kill -9`` (or a
second Ctrl-C) leaves claims behind, and those are stale at once on this host.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

STALE_AFTER_S = 12 * 3600   # a claim from another host this old is taken as abandoned
BLANK_GRACE_S = 60          # a claim still empty this long was left by a process killed mid-write
BREAK_STALE_S = 60          # a take-over guard this old was left by a process killed mid-break


def claim_path(folder: Path, seed: int) -> Path:
    """The claim file of ``seed`` beside its record (``seed-NN.json``)."""
    return Path(folder) / f".seed-{seed:02d}.claim"


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, Linux ``/proc``); ``None`` where
    unknown."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


@dataclass(frozen=True)
class Holder:
    """Who holds a claim: ``host``, ``pid``, the process's ``started`` time (or ``None``) and
    ``created`` (seconds since the epoch, of the claim)."""

    host: str
    pid: int
    started: int | None
    created: float

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"

    def alive(self, now: float | None = None) -> bool:
        """Whether the owner may still release the claim (see the module's notes on staleness)."""
        now = time.time() if now is None else now
        if self.host != socket.gethostname():
            return now - self.created < STALE_AFTER_S
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass   # another user's process: it exists
        started = _start_time(self.pid)
        return self.started is None or started is None or started == self.started


def _me() -> bytes:
    pid = os.getpid()
    return json.dumps({"host": socket.gethostname(), "pid": pid, "started": _start_time(pid),
                       "created": time.time()}).encode()


def _read(path: Path) -> tuple[bytes, Holder | None]:
    """The claim file's bytes and its holder (``None`` when it is empty or unreadable)."""
    data = path.read_bytes()
    try:
        d = json.loads(data)
        return data, Holder(str(d["host"]), int(d["pid"]), d.get("started"), float(d["created"]))
    except (ValueError, KeyError, TypeError):
        return data, None


def _create(path: Path, content: bytes) -> bool:
    """Create ``path`` holding ``content`` if nobody has it; ``False`` when it exists."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as fh:
        fh.write(content)
    return True


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _break(path: Path, seen: bytes) -> None:
    """Remove the stale claim ``path`` if it still holds ``seen``; one process at a time."""
    guard = path.with_name(path.name + ".break")
    if not _create(guard, b""):
        if _age(guard) > BREAK_STALE_S:
            guard.unlink(missing_ok=True)
        return
    try:
        if path.read_bytes() == seen:
            path.unlink()
    except FileNotFoundError:
        pass
    finally:
        guard.unlink(missing_ok=True)


class GroupClaim:
    """This process's claims on some seeds of one record folder; :meth:`release` removes them."""

    def __init__(self, paths: list[tuple[Path, bytes]]) -> None:
        self.paths = paths

    def release(self) -> None:
        """Remove the claim files that still hold this process's claim (idempotent)."""
        for path, content in self.paths:
            try:
                if path.read_bytes() == content:
                    path.unlink()
            except FileNotFoundError:
                pass
        self.paths = []


def try_claim(folder: Path, seeds) -> GroupClaim | Holder:
    """Claim every seed of ``seeds`` in ``folder`` for this process, or none of them.

    Returns the claim, or the :class:`Holder` of a live claim on one of the seeds (nothing is
    claimed then). Stale claims met on the way are taken over.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    content = _me()
    made: list[tuple[Path, bytes]] = []
    for seed in sorted(seeds):
        path = claim_path(folder, seed)
        for _ in range(3):
            if _create(path, content):
                made.append((path, content))
                break
            try:
                seen, holder = _read(path)
            except FileNotFoundError:
                continue   # released meanwhile: try again
            if holder is None and _age(path) < BLANK_GRACE_S:
                holder = Holder("?", 0, None, time.time())   # being written right now
            if holder is not None and holder.alive():
                GroupClaim(made).release()
                return holder
            _break(path, seen)
        else:
            GroupClaim(made).release()
            return Holder("?", 0, None, time.time())   # contended: look again later
    return GroupClaim(made)
