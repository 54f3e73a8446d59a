"""Progress of a training stage: one line per finished configuration, and what an interrupted
run saved.

Training a grid is long and otherwise silent (minutes in ``make reproduce``), so each finished
configuration gets one line (on standard error in the CLI) with the configurations and seeds
done out of the total, the time so far and an estimate of the time left (the time per seed
trained so far, times the seeds left). The same counts make the message of a run stopped by
Ctrl-C (:mod:`atrec.experiments.interrupt`) and the line of a process that waits for another
one's claimed seeds (:mod:`atrec.experiments.locks`).
"""

from __future__ import annotations

import time
from collections.abc import Callable


def _clock(seconds: float) -> str:
    seconds = round(seconds)
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def seed_list(seeds) -> str:
    """``0-3`` for a run of consecutive seeds, else ``1,3,5``."""
    seeds = sorted(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


class StageProgress:
    """Counts of one stage (configurations and seeds, trained and reused) and its lines.

    ``echo(line)`` receives the lines (``None``: count silently, e.g. ``--quiet``). Totals are
    announced with :meth:`expect` (a stage may plan its configurations in several steps);
    :meth:`saved` counts a saved group, :meth:`reused` records found on disk, :meth:`done` ends
    a configuration and writes its line.
    """

    def __init__(self, echo: Callable[[str], None] | None = None) -> None:
        self.echo = echo
        self.start = time.perf_counter()
        self.configs = 0
        self.seeds = 0
        self.configs_done = 0
        self.trained = 0
        self.reused_seeds = 0
        self.partial: dict[str, int] = {}    # configuration -> seeds saved, not yet finished

    def expect(self, configs: int, seeds: int) -> None:
        """Add ``configs`` configurations of ``seeds`` seeds in all to the totals."""
        self.configs += configs
        self.seeds += seeds

    def saved(self, name: str, n: int) -> None:
        """``n`` seeds of configuration ``name`` (``"coat item-at"``) trained and saved."""
        self.trained += n
        self.partial[name] = self.partial.get(name, 0) + n

    def reused(self, n: int) -> None:
        """``n`` seeds found saved (by an earlier run or another process)."""
        self.reused_seeds += n

    def done(self, name: str, trained: int, reused: int) -> None:
        """Configuration ``name`` is finished; write its line."""
        self.configs_done += 1
        self.partial.pop(name, None)
        self.say(f"[{self.configs_done}/{self.configs}] {name}: {trained} seed(s) trained, "
                 f"{reused} reused; {self.status()}")

    def status(self) -> str:
        """Seeds done out of the total, time so far and the estimated time left."""
        elapsed = time.perf_counter() - self.start
        finished = self.trained + self.reused_seeds
        left = max(0, self.seeds - finished)
        eta = (f"about {_clock(elapsed / self.trained * left)} left" if self.trained and left
               else "" if not left else "time left unknown")
        return (f"{finished}/{self.seeds} seeds, {_clock(elapsed)} elapsed"
                + (f", {eta}" if eta else ""))

    def say(self, line: str) -> None:
        if self.echo:
            self.echo(line)

    def interrupted(self) -> str:
        """What an interrupted run leaves: configurations done, seeds saved, what resumes."""
        parts = [f"{self.configs_done} of {self.configs} configurations done"]
        parts += [f"{n} seed(s) of {name} saved" for name, n in self.partial.items()]
        left = max(0, self.seeds - self.trained - self.reused_seeds)
        if not left:    # stopped after its last seed was saved: nothing to resume
            return ", ".join(parts) + f"; all {self.seeds} seeds saved: nothing left to resume"
        return (", ".join(parts) + f"; {left} of {self.seeds} seeds left: run the same command "
                f"again to resume them")
