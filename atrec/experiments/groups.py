"""Planning a configuration's seeds: which have a record already (reused), which are left and in
which groups they are trained (:func:`plan_config`), claimed (:mod:`atrec.experiments.locks`)
and saved (:class:`ConfigPlan`).

Its seeds are trained together (stacked replicas, see :mod:`atrec.learners.mf`), in groups
whose records are written as soon as the group finishes, so an interrupted run loses at most
the group in progress and a rerun skips every seed that already has a record (``force=True``
recomputes). The plan is shared by local runs and runs on a Dask cluster
(:mod:`atrec.experiments.distributed`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from atrec.data.ratings import RatingData
from atrec.experiments.locks import GroupClaim, Holder, try_claim
from atrec.experiments.reuse import load_existing
from atrec.experiments.spec import RunSpec
from atrec.learners import layout
from atrec.names import NO_PROPENSITY
from atrec.results.records import load_reusable, record_path, save_record


def group_seeds(data: RatingData, dim: int, seeds: list[int]) -> list[tuple[int, ...]]:
    """Seeds trained (and saved) together (:func:`atrec.learners.layout.group_seeds`)."""
    return layout.group_seeds(list(seeds), data_group_width(data, dim))


def data_group_width(data: RatingData, dim: int) -> int:
    return layout.group_width(data.num_users, data.num_items, dim)


@dataclass
class ConfigOutcome:
    """What :func:`atrec.experiments.driver.run_config` did for one configuration."""

    spec: RunSpec
    records: list[dict] = field(default_factory=list)
    trained: list[int] = field(default_factory=list)
    reused: list[int] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class ConfigPlan:
    """What is left to do for one configuration: its seeds without a record, in the groups they
    are trained in, and the outcome so far (the records reused).

    The one plan behind both a local run (:func:`atrec.experiments.driver.run_config`) and a
    run on a Dask cluster (:mod:`atrec.experiments.distributed`), so both skip the same seeds and group them alike,
    and hence give the same numbers. Before training a group, :meth:`take` claims its seeds
    (:mod:`atrec.experiments.locks`), so that processes sharing the results folder never train
    a seed twice; :meth:`save` and :meth:`release` give the claims back.
    """

    spec: RunSpec
    root: Path | None
    groups: list[tuple[int, ...]]
    outcome: ConfigOutcome
    # records present at planning but not reused (corrupt, or --force), by seed: their mtime
    skipped: dict[int, int] = field(default_factory=dict)
    claims: dict[tuple[int, ...], GroupClaim] = field(default_factory=dict, repr=False)

    @property
    def todo(self) -> int:
        """How many seeds are to be trained."""
        return sum(len(g) for g in self.groups)

    @property
    def name(self) -> str:
        """``dataset key`` (``coat item-at``), as progress lines and messages name it. MF-IPS's
        key names no method (``item``); without a propensity (the binary protocols' IPS) that
        would leave ``none``, so the method is named there: ``coat mf-ips/none``."""
        key = self.spec.key
        if self.spec.propensity == NO_PROPENSITY and "/" not in key:
            key = f"{self.spec.method}/{key}"
        return f"{self.spec.dataset} {key}"

    def _path(self, seed: int) -> Path:
        return record_path(self.spec.dataset, self.spec.key, self.spec.label, seed, self.root)

    def take(self, seeds) -> tuple[int, ...] | Holder:
        """Claim the seeds of a group for this process before training them.

        Returns the seeds to train now (their claims are held until :meth:`save`), ``()`` when
        another process saved all of them since planning (loaded and counted as reused), or the
        :class:`~atrec.experiments.locks.Holder` of a live claim on them: come back later.
        """
        left = self._reuse_new(seeds)
        if not left:
            return ()
        got = try_claim(self._path(left[0]).parent, left)
        if isinstance(got, Holder):
            return got
        left = self._reuse_new(left)   # saved between the look and the claim
        if not left:
            got.release()
            return ()
        self.claims[tuple(left)] = got
        return tuple(left)

    def _reuse_new(self, seeds) -> list[int]:
        """Load the records of ``seeds`` written since planning; return the seeds still without."""
        have = set(self.outcome.reused) | set(self.outcome.trained)
        left = []
        for seed in seeds:
            if seed in have:
                continue
            path = self._path(seed)
            try:
                mtime = path.stat().st_mtime_ns
            except FileNotFoundError:
                mtime = None
            record = None
            if mtime is not None and self.skipped.get(seed) != mtime:
                record = load_reusable(path)
            elif mtime is None and seed not in self.skipped:
                record = load_existing(self.spec, seed, self.root)
            if record is None:
                left.append(seed)
            else:
                self.outcome.records.append(record)
                self.outcome.reused.append(seed)
        return left

    def save(self, seeds: tuple[int, ...], records: list[dict], elapsed: float) -> None:
        """Write the records of one finished group (atomically), count them as trained and give
        their claims back."""
        self.outcome.seconds += elapsed
        try:
            for seed, record in zip(seeds, records):
                save_record(record, self._path(seed))
                self.outcome.records.append(record)
                self.outcome.trained.append(seed)
        finally:
            claim = self.claims.pop(tuple(seeds), None)
            if claim:
                claim.release()

    def release(self) -> None:
        """Give back every claim still held (a run that stops early: error, Ctrl-C)."""
        for claim in self.claims.values():
            claim.release()
        self.claims.clear()

    def finish(self) -> ConfigOutcome:
        """The outcome, records in seed order."""
        self.outcome.records.sort(key=lambda r: r["seed"])
        return self.outcome


def plan_config(data: RatingData, spec: RunSpec, root=None, force: bool = False) -> ConfigPlan:
    """Load the records ``spec`` already has (none with ``force``) and group the other seeds.

    Groups follow :func:`group_seeds`, whoever trains them. The layout is canonical
    (:mod:`atrec.learners.layout`), so a seed's numbers do not depend on the grouping.
    """
    outcome = ConfigOutcome(spec)
    root = spec.protocol.results_root(root)
    todo, skipped = [], {}
    for seed in spec.seeds:
        path = record_path(spec.dataset, spec.key, spec.label, seed, root)
        record = None if force else load_existing(spec, seed, root)
        if record is not None:
            outcome.records.append(record)
            outcome.reused.append(seed)
        else:
            todo.append(seed)
            if path.exists():
                skipped[seed] = path.stat().st_mtime_ns
    groups = group_seeds(data, spec.params.dim, todo)
    return ConfigPlan(spec, root, groups, outcome, skipped)
