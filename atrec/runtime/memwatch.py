"""The resident size of this process, and the peak it reaches while a stretch of work runs.

The bound on compiled loops (:mod:`atrec.runtime.compiled`) is a bound on the process's peak,
so it must know how far a fit takes the process above where it started: the fit's buffers, a
compilation's transient and the loop it keeps (a tuning trial at Yahoo's size rises by about
0.2-0.3 GB and falls back; one on Coat by much less). The kernel keeps only the peak of the
whole process (``VmHWM``), so :class:`Peak` samples the resident size on a thread of its own
while the work runs. A sample reads ``/proc/self/statm`` (microseconds) every
:data:`INTERVAL_S`; a rise shorter than that can be missed, which the bound's margin absorbs.
Reading memory changes nothing computed.
"""

from __future__ import annotations

import os
import threading
from typing import Self

INTERVAL_S = 0.02
"""Seconds between two samples: a fit lasts from tenths of a second to minutes, a compilation's
transient seconds."""

_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20 if hasattr(os, "sysconf") else 4096 / 2**20


def rss_mb() -> float:
    """This process's resident size now in MB (``/proc/self/statm``); 0 where it cannot be read
    (no ``/proc``), so that a bound on it then never acts."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE_MB
    except (OSError, IndexError, ValueError):
        return 0.0


class Peak:
    """A context manager: while its block runs, a thread samples :func:`rss_mb`; ``start``,
    ``peak`` and ``rise`` (``peak - start``, MB) are read after it. ``each``, if given, is called
    after every sample, on the sampling thread; if it raises, it is dropped and the sampling (the
    figure the memory bound reads) goes on."""

    def __init__(self, each=None) -> None:
        self.start = self.peak = 0.0
        self._each = each
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self.peak = max(self.peak, rss_mb())
            if self._each is not None:
                try:
                    self._each()
                except Exception:  # noqa: BLE001 - a failing hook must not end the sampling
                    self._each = None

    def __enter__(self) -> Self:
        self.start = self.peak = rss_mb()
        self._thread = threading.Thread(target=self._sample, name="atrec-memwatch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak = max(self.peak, rss_mb())

    @property
    def rise(self) -> float:
        return self.peak - self.start
