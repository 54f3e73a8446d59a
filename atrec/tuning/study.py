"""Hyperparameter tuning with Optuna (PROTOCOL.md, "Hyperparameters and tuning").

One study per (dataset, propensity, with/without AT), named ``<prefix>-<dataset>-<config key>``
(e.g. ``atrec-coat-item-at``). Search space: ``dim`` in {5, 10, ..., 50}, ``lam`` log-uniform in
[1e-6, 1], ``epsilon`` (AT only) log-uniform in [1e-3, 1]. Sampler: Optuna's TPE with seed 123
(see :class:`PerTrialTPESampler` for how the seed meets resumed and distributed studies).
Objective: :func:`atrec.experiments.runner.validation_loss`, the lowest validation loss of one run on the
seed-12345 split. A study stops when it holds the requested number of COMPLETE trials, counted
over every worker that shares its storage.

Storage: any Optuna storage URL (``sqlite:///...``, ``postgresql://...``, ``mysql://...``); the
default is the SQLite file ``<results>/optuna.db`` (URLs, drivers and safe opening:
:mod:`atrec.tuning.storage`). Several workers (processes, machines) that open the same study
share its trials:

* exact trial count: a worker only starts a trial while ``complete + running < target``; inside
  the trial, before any parameter is sampled, it checks again and gives way (the trial is marked
  FAIL with user attribute ``surplus``) when trials numbered below it already fill the target.
  A trial only proceeds when the COMPLETE trials plus the live RUNNING trials numbered below it
  are fewer than the target, so the study never ends with more COMPLETE trials than asked for.
* killed workers: trials carry Optuna heartbeats (``heartbeat_interval``); a RUNNING trial whose
  heartbeat is older than ``grace_period`` seconds (or which never started its objective and is
  that old) is marked FAIL by the next worker, so it neither counts nor blocks. Restarting a
  killed study continues from its COMPLETE trials.

Pruning is deliberately absent: the objective is the minimum of the validation curve computed
inside one compiled loop (:mod:`atrec.learners.mf`), which reports nothing until the run ends. Pruning on
intermediate values would need that loop cut into pieces, and a pruned trial is not a measured
one. A Coat trial takes about 0.03 s once compiled, so there is little to save there.

Compilation: the objective passes ``lam`` and ``epsilon`` to the compiled loops as values, so a
process compiles once per ``dim`` (at most 10 shapes) and every other trial costs one run.

The best parameters of every finished study are merged into the tuned parameter file
(:func:`atrec.experiments.params.tuned_params_path`) that ``--params tuned`` reads.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import optuna
import yaml
from optuna.exceptions import ExperimentalWarning, UpdateFinishedTrialError
from optuna.trial import TrialState

from atrec.errors import AtrecError
from atrec.methods.base import EPSILON
from atrec.methods.registry import METHODS, configurations
from atrec.names import DEFAULT_METHOD, config_key
from atrec.experiments.params import HyperParams, load_param_table, tuned_params_path
from atrec.experiments.records import atomic_write_text
from atrec.protocol import SAMPLER_SEED, settings_dict
from atrec.tuning.storage import (default_storage_url, file_lock, open_storage, resolve_url,
                                  storage_label)

DEFAULT_TRIALS = 25
DEFAULT_PREFIX = "atrec"
WORKER_ATTR = "worker"      # set by a trial's objective when it starts (host:pid)
SURPLUS_ATTR = "surplus"    # set on a trial that gave way to trials numbered below it
STUDY_ATTR = "atrec"        # what the study measures; a worker with other settings is refused

Objective = Callable[[HyperParams], float]


@dataclass(frozen=True)
class SearchSpace:
    """The search space of PROTOCOL.md: ``dim`` on a grid, ``lam`` and ``epsilon`` log-uniform."""

    dim_low: int = 5
    dim_high: int = 50
    dim_step: int = 5
    lam_low: float = 1e-6
    lam_high: float = 1.0
    epsilon_low: float = 1e-3
    epsilon_high: float = 1.0
    extra: tuple = ()   # a method's own hyperparameters (atrec.methods.base.Hyperparameter)

    @classmethod
    def for_method(cls, method: str = DEFAULT_METHOD) -> "SearchSpace":
        """The space of a registered method: its ``dim`` and ``lam`` ranges, its other
        hyperparameters, and AT's ``epsilon``; MF-IPS's is PROTOCOL.md's."""
        method_cls = METHODS.get(method)
        dim, lam = method_cls.hyperparameter("dim"), method_cls.hyperparameter("lam")
        return cls(int(dim.low), int(dim.high), int(dim.step or 1), lam.low, lam.high,
                   EPSILON.low, EPSILON.high,
                   tuple(h for h in method_cls.hyperparameters if h.name not in ("dim", "lam")))

    def __post_init__(self) -> None:
        if not (0 < self.dim_low <= self.dim_high and self.dim_step > 0
                and (self.dim_high - self.dim_low) % self.dim_step == 0):
            raise ValueError(f"dim range {self.dim_low}..{self.dim_high} step {self.dim_step} "
                             f"must be positive and end on the grid")
        for name, lo, hi in (("lam", self.lam_low, self.lam_high),
                             ("epsilon", self.epsilon_low, self.epsilon_high)):
            if not 0 < lo < hi:
                raise ValueError(f"{name} range [{lo}, {hi}] must satisfy 0 < low < high "
                                 f"(it is sampled on a log scale)")

    def suggest(self, trial, with_at: bool) -> HyperParams:
        """Sample one point through an Optuna ``trial`` (names ``dim``, ``lam``, ``epsilon``)."""
        dim = trial.suggest_int("dim", self.dim_low, self.dim_high, step=self.dim_step)
        lam = trial.suggest_float("lam", self.lam_low, self.lam_high, log=True)
        extra = tuple((h.name, h.suggest(trial)) for h in self.extra)
        epsilon = (trial.suggest_float("epsilon", self.epsilon_low, self.epsilon_high, log=True)
                   if with_at else None)
        return HyperParams(dim=dim, lam=lam, epsilon=epsilon, extra=tuple(sorted(extra)))

    def as_dict(self) -> dict:
        out = {"dim": [self.dim_low, self.dim_high, self.dim_step],
               "lam": [self.lam_low, self.lam_high, "log"],
               "epsilon": [self.epsilon_low, self.epsilon_high, "log"]}
        for h in self.extra:   # none for MF-IPS, whose stored studies keep their attributes
            out[h.name] = [h.low, h.high, h.step if h.kind == "int" else
                           ("log" if h.log else "linear")]
        return out


SEARCH_SPACE = SearchSpace()


@dataclass(frozen=True)
class WorkerSettings:
    """How one worker behaves in a shared study.

    ``heartbeat_interval`` (s): how often a running trial says it is alive (RDB storages).
    ``grace_period`` (s): a RUNNING trial silent for longer is taken as killed and marked FAIL.
    ``poll_seconds``: how long to wait before looking again when other workers' running trials
    already fill the target. ``max_failures``: consecutive failed trials (e.g. NaN objective)
    after which the worker stops with an error instead of trying forever.
    """

    heartbeat_interval: int = 10
    grace_period: int = 60
    poll_seconds: float = 2.0
    max_failures: int = 5

    def __post_init__(self) -> None:
        if int(self.heartbeat_interval) != self.heartbeat_interval or self.heartbeat_interval < 1:
            raise ValueError(f"heartbeat_interval must be a positive integer, got "
                             f"{self.heartbeat_interval!r}")
        if int(self.grace_period) != self.grace_period or self.grace_period <= \
                self.heartbeat_interval:
            raise ValueError(f"grace_period must be an integer above heartbeat_interval "
                             f"({self.heartbeat_interval}), got {self.grace_period!r}")
        if not self.poll_seconds > 0:
            raise ValueError(f"poll_seconds must be > 0, got {self.poll_seconds!r}")
        if self.max_failures < 1:
            raise ValueError(f"max_failures must be >= 1, got {self.max_failures!r}")


def study_name(prefix: str, dataset: str, propensity: str, with_at: bool,
               method: str = DEFAULT_METHOD) -> str:
    """``<prefix>-<dataset>-<config key>``, e.g. ``atrec-coat-item-at`` (MF-IPS) or
    ``atrec-coat-mf-umi/item-at`` (another method)."""
    return f"{prefix}-{dataset}-{config_key(propensity, with_at, method)}"


class PerTrialTPESampler(optuna.samplers.BaseSampler):
    """Optuna's TPE sampler, re-seeded for every trial from ``(seed, trial number)``.

    Trial ``k`` is sampled by ``TPESampler(seed=SeedSequence([seed, k]))`` given the trials
    finished so far. One worker from scratch is therefore reproducible, as a single
    ``TPESampler(seed=123)`` would be; a resumed study does not replay the random start-up
    draws of its first trials (a fixed-seed sampler restarted from its seed would); and two
    workers never share a random stream, because no two trials share a number. Every other TPE
    setting is Optuna's default (``constant_liar`` on, so concurrent workers avoid each
    other's running points).
    """

    def __init__(self, seed: int = SAMPLER_SEED) -> None:
        self.seed = seed
        self._inner = optuna.samplers.TPESampler(seed=self.seed_for(0))

    def seed_for(self, number: int) -> int:
        """The TPE seed of trial ``number``."""
        return int(np.random.SeedSequence([self.seed, number]).generate_state(1)[0])

    def before_trial(self, study, trial) -> None:
        self._inner = optuna.samplers.TPESampler(seed=self.seed_for(trial.number))
        self._inner.before_trial(study, trial)

    def infer_relative_search_space(self, study, trial):
        return self._inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._inner.sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._inner.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial, state, values) -> None:
        self._inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self._inner.reseed_rng()


@dataclass(frozen=True)
class Progress:
    """State of one study after a trial of this worker (for progress bars)."""

    study: str
    complete: int
    target: int
    best_value: float | None


@dataclass
class StudyOutcome:
    """What :func:`run_study` left in one study."""

    study: str
    target: int
    complete: int = 0
    ran: int = 0                  # trials this worker completed
    best_value: float | None = None
    best_params: HyperParams | None = None
    best_trial: int | None = None
    storage: str = ""
    seconds: float = 0.0
    dataset: str = ""
    propensity: str = ""
    with_at: bool = False
    method: str = DEFAULT_METHOD


class _Surplus(Exception):
    """Raised inside a trial that is not needed because trials numbered below it fill the target."""


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _fail_orphans(study, trials, grace: int) -> None:
    """Mark FAIL the RUNNING trials that never started an objective and are older than ``grace``.

    (Trials whose objective started have heartbeats; Optuna's ``fail_stale_trials`` handles
    those.) Such orphans come from a worker killed between creating a trial and starting it, or
    from clients that ask for trials without heartbeats.
    """
    now = datetime.now()
    for t in trials:
        if (t.state == TrialState.RUNNING and WORKER_ATTR not in t.user_attrs
                and t.datetime_start is not None
                and (now - t.datetime_start).total_seconds() > grace):
            with contextlib.suppress(UpdateFinishedTrialError, ValueError, RuntimeError):
                study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)


def _fail_stale(study, grace: int):
    """Fail killed workers' trials; return all trials of the study afterwards."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    trials = study.get_trials(deepcopy=False)
    _fail_orphans(study, trials, grace)
    return study.get_trials(deepcopy=False)


def _counts(trials, below: int | None = None) -> tuple[int, int]:
    """``(complete, running)`` trials; running ones only numbered below ``below`` if given."""
    complete = sum(t.state == TrialState.COMPLETE for t in trials)
    running = sum(t.state == TrialState.RUNNING and (below is None or t.number < below)
                  for t in trials)
    return complete, running


def _best(trials) -> tuple[float | None, object]:
    done = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
    if not done:
        return None, None
    best = min(done, key=lambda t: (t.value, t.number))
    return float(best.value), best


@contextlib.contextmanager
def quiet_optuna():
    """Optuna's logger at ERROR for the ``with`` block (restored afterwards)."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def run_study(name: str, objective: Objective, with_at: bool, n_trials: int = DEFAULT_TRIALS,
              storage=None, *, space: SearchSpace = SEARCH_SPACE, seed: int = SAMPLER_SEED,
              worker: WorkerSettings | None = None, attrs: dict | None = None,
              progress: Callable[[Progress], None] | None = None) -> StudyOutcome:
    """Work on study ``name`` until it holds ``n_trials`` COMPLETE trials (over all workers).

    ``objective(params) -> float`` is minimised over ``space`` (``epsilon`` only ``with_at``).
    ``storage``: an Optuna storage URL (default :func:`default_storage_url`) or a storage
    object. ``attrs`` describe what the objective measures; they are stored with a new study,
    and a worker whose ``attrs`` differ from the stored ones is refused (:class:`AtrecError`)
    rather than mixing two objectives in one study. ``progress`` is called once at the start
    and after every trial of this worker. Returns the study's state when it is done.
    """
    if int(n_trials) != n_trials or n_trials < 1:
        raise AtrecError(f"--trials {n_trials}: give a positive number of trials (e.g. 25)")
    worker = worker or WorkerSettings()
    if storage is None or isinstance(storage, str):
        url = storage or default_storage_url()
        storage, label = open_storage(url, worker), storage_label(url)
    else:
        url = getattr(storage, "url", None)
        label = storage_label(url) if url else type(storage).__name__
    outcome = StudyOutcome(study=name, target=n_trials, storage=label)
    start = time.perf_counter()
    with quiet_optuna():
        study = optuna.create_study(study_name=name, storage=storage, direction="minimize",
                                    sampler=PerTrialTPESampler(seed), load_if_exists=True)
        _check_attrs(study, attrs)
        me = _worker_id()

        def trial_objective(trial) -> float:
            trial.set_user_attr(WORKER_ATTR, me)
            complete, running_below = _counts(study.get_trials(deepcopy=False), trial.number)
            if complete + running_below >= n_trials:
                trial.set_user_attr(SURPLUS_ATTR, True)
                raise _Surplus(f"{complete} complete and {running_below} running trials already "
                               f"fill the target of {n_trials}")
            return objective(space.suggest(trial, with_at))

        def report(trials) -> None:
            if progress:
                best_value, _ = _best(trials)
                progress(Progress(name, min(_counts(trials)[0], n_trials), n_trials, best_value))

        report(study.get_trials(deepcopy=False))
        finished: list = []
        failures = 0
        while True:
            trials = _fail_stale(study, worker.grace_period)
            complete, running = _counts(trials)
            if complete >= n_trials:
                break
            if complete + running >= n_trials:
                time.sleep(worker.poll_seconds)  # other workers are finishing the last trials
                continue
            study.optimize(trial_objective, n_trials=1, catch=(_Surplus,),
                           callbacks=[lambda _s, t: finished.append(t)])
            last = finished[-1]
            if last.state == TrialState.COMPLETE:
                outcome.ran += 1
                failures = 0
            elif not last.user_attrs.get(SURPLUS_ATTR):
                failures += 1
                if failures >= worker.max_failures:
                    raise AtrecError(
                        f"study {name}: {failures} trials in a row failed (the objective gave "
                        f"NaN or no value): check the data and settings, then run again")
            report(study.get_trials(deepcopy=False))
        trials = study.get_trials(deepcopy=False)
    outcome.complete = _counts(trials)[0]
    outcome.best_value, best = _best(trials)
    if best is not None:
        p = best.params
        outcome.best_params = HyperParams.from_values(dict(p))
        outcome.best_trial = best.number
    outcome.seconds = time.perf_counter() - start
    return outcome


def _check_attrs(study, attrs: dict | None) -> None:
    """Store ``attrs`` with a new study; refuse (:class:`AtrecError`) a study made with others."""
    if not attrs:
        return
    stored = study.user_attrs.get(STUDY_ATTR)
    if stored is None:
        # workers started together may all find none and all set theirs: Optuna keeps the
        # first and ignores the others, so read back what was kept before comparing
        study.set_user_attr(STUDY_ATTR, attrs)
        stored = study.user_attrs.get(STUDY_ATTR)
    if stored != attrs:
        diff = sorted(k for k in set(stored) | set(attrs) if stored.get(k) != attrs.get(k))
        raise AtrecError(
            f"study {study.study_name} was made with other {', '.join(diff)}: give another "
            f"--study-prefix or --storage, or delete that study")


# --- the atrec objective, many studies, export --------------------------------------------------

def make_objective(data, propensity: str, with_at: bool, settings=None,
                   at_settings=None, method: str = DEFAULT_METHOD) -> Objective:
    """The protocol's objective for one configuration: ``params -> validation_loss(...)``."""
    from atrec.experiments.runner import validation_loss

    def objective(params: HyperParams) -> float:
        return validation_loss(data, propensity, with_at, params, settings=settings,
                               at_settings=at_settings, method=method)

    return objective


@dataclass(frozen=True)
class TuneRequest:
    """The selection of ``atrec tune`` (names already validated with :func:`atrec.names.expand`).

    ``settings`` / ``at_settings``: protocol settings of the objective (``None``: PROTOCOL.md's).
    """

    datasets: tuple[str, ...]
    propensities: tuple[str, ...]
    at_options: tuple[bool, ...]
    trials: int = DEFAULT_TRIALS
    storage: str | None = None
    study_prefix: str = DEFAULT_PREFIX
    settings: object = None
    at_settings: object = None
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    methods: tuple[str, ...] = (DEFAULT_METHOD,)

    def __post_init__(self) -> None:
        if int(self.trials) != self.trials or self.trials < 1:
            raise AtrecError(f"--trials {self.trials}: give a positive number of trials (e.g. 25)")
        prefix = self.study_prefix
        if not prefix or any(c.isspace() for c in prefix):
            raise AtrecError(f"--study-prefix {prefix!r}: give a non-empty name without spaces")
        if self.storage is not None:
            resolve_url(self.storage)  # an unusable URL or missing driver: before any data loads


OBJECTIVE_NOTE = "min validation loss, split seed 12345"


def study_attrs(dataset: str, propensity: str, with_at: bool, checksums: dict, settings=None,
                at_settings=None, objective: str = OBJECTIVE_NOTE,
                method: str = DEFAULT_METHOD) -> dict:
    """What a study measures (stored with it; see ``attrs`` of :func:`run_study`). MF-IPS's
    attributes name no method, as they did before methods were named, so its studies resume."""
    attrs = {"dataset": dataset, "propensity": propensity, "with_at": with_at,
             "objective": objective,
             "settings": settings_dict(settings, at_settings, with_at),
             "search_space": SearchSpace.for_method(method).as_dict(),
             "sampler_seed": SAMPLER_SEED, "data": dict(checksums)}
    if method != DEFAULT_METHOD:
        attrs["method"] = method
    return attrs


def tune_config(data, propensity: str, with_at: bool, trials: int = DEFAULT_TRIALS,
                storage=None, *, objective: Objective | None = None,
                objective_note: str = OBJECTIVE_NOTE, settings=None, at_settings=None,
                study_prefix: str = DEFAULT_PREFIX, worker: WorkerSettings | None = None,
                progress: Callable[[Progress], None] | None = None,
                export_path: Path | None = None, method: str = DEFAULT_METHOD) -> StudyOutcome:
    """Tune one configuration on ``data`` and merge its best parameters into the tuned file.

    The study is ``study_name(study_prefix, data.name, propensity, with_at, method)``;
    ``objective``
    defaults to :func:`make_objective` (then ``objective_note`` should say what a custom one
    measures, since it is stored with the study). ``storage``: a URL or an opened storage
    (:func:`open_storage`); ``export_path`` defaults to the tuned parameter file.
    """
    if objective is None:
        objective = make_objective(data, propensity, with_at, settings, at_settings, method)
    attrs = study_attrs(data.name, propensity, with_at, data.checksums, settings, at_settings,
                        objective_note, method)
    name = study_name(study_prefix, data.name, propensity, with_at, method)
    outcome = run_study(name, objective, with_at, trials, storage, worker=worker, attrs=attrs,
                        progress=progress, space=SearchSpace.for_method(method))
    outcome.dataset, outcome.propensity, outcome.with_at = data.name, propensity, with_at
    outcome.method = method
    export_best([outcome], export_path)
    return outcome


def tune(request: TuneRequest, progress: Callable[[Progress], None] | None = None,
         export_path: Path | None = None, loader: Callable | None = None) -> list[StudyOutcome]:
    """Run every selected study to ``request.trials`` COMPLETE trials and export the best values.

    Datasets are read with ``loader(name)`` (default :func:`atrec.data.preprocess.load_data`). After
    each study, its best parameters are merged into ``export_path`` (default the tuned file).
    """
    if loader is None:
        from atrec.data.preprocess import load_data as loader
    datasets = [loader(name) for name in request.datasets]  # a missing one fails before any work
    storage = open_storage(request.storage, request.worker)
    outcomes = []
    for data in datasets:
        for method, propensity, with_at in configurations(request.methods, request.propensities,
                                                          request.at_options):
            outcomes.append(tune_config(
                data, propensity, with_at, request.trials, storage,
                settings=request.settings, at_settings=request.at_settings,
                study_prefix=request.study_prefix, worker=request.worker,
                progress=progress, export_path=export_path, method=method))
    return outcomes


def tune_all(datasets, propensities, at_options, trials: int = DEFAULT_TRIALS,
             storage: str | None = None, study_prefix: str = DEFAULT_PREFIX, quiet: bool = True,
             progress: Callable[[Progress], None] | None = None) -> list[StudyOutcome]:
    """:func:`tune` of a selection given as lists (``quiet`` drops ``progress``)."""
    request = TuneRequest(tuple(datasets), tuple(propensities), tuple(at_options), trials,
                          storage, study_prefix)
    return tune(request, progress=None if quiet else progress)


EXPORT_HEADER = """\
# Hyperparameters tuned by 'atrec tune' (Optuna TPE, PROTOCOL.md "Hyperparameters and tuning").
# Read by '--params tuned'. Per entry: dim, lam[, epsilon] are the parameters; study, trials,
# best_value (lowest validation loss), best_trial, storage and updated record where they
# come from. Entries are merged, one per study, under a file lock; edit with care.
"""


def export_best(outcomes: list[StudyOutcome], path: Path | None = None) -> Path:
    """Merge the best parameters of ``outcomes`` into the tuned parameter file; return its path.

    The file (default :func:`atrec.experiments.params.tuned_params_path`) maps ``dataset -> config key ->
    {dim, lam[, epsilon], study, trials, best_value, best_trial, storage, updated}``.
    Concurrent exports are serialised by an ``flock`` on ``<file>.lock`` and each writes the
    whole file atomically, so none loses another's entries. Outcomes without a best trial are
    skipped.
    """
    path = Path(path) if path is not None else tuned_params_path()
    with file_lock(path.with_name(path.name + ".lock")):
        table = load_param_table(str(path))[0] if path.exists() else {}
        for o in outcomes:
            if o.best_params is None:
                continue
            entry = o.best_params.as_dict()
            entry.update(study=o.study, trials=o.complete, best_value=o.best_value,
                         best_trial=o.best_trial, storage=o.storage,
                         updated=datetime.now(UTC).isoformat(timespec="seconds"))
            section = table.setdefault(o.dataset, {})
            if not isinstance(section, dict):
                raise AtrecError(f"tuned parameter file {path}: '{o.dataset}' is not a mapping; "
                                 f"fix or delete the file")
            section[config_key(o.propensity, o.with_at, o.method)] = entry
        atomic_write_text(path, EXPORT_HEADER + yaml.safe_dump(table, sort_keys=True))
    return path


def outcome_rows(outcomes: list[StudyOutcome], numeric: bool = False) -> list[dict]:
    """One summary row per study: its best parameters and value, trials, time.

    ``numeric``: raw numbers (for csv/json); otherwise display strings (4-decimal loss, lam and
    epsilon to 3 significant digits).
    """
    from atrec.propensity.registry import propensity_label

    def show(value, spec: str):
        if value is None:
            return None if numeric else "-"
        return value if numeric else format(value, spec)

    rows = []
    for o in outcomes:
        p = o.best_params
        rows.append({
            "dataset": o.dataset, "method": o.method,
            "propensity": propensity_label(o.propensity),
            "AT": "with" if o.with_at else "without", "study": o.study,
            "trials": o.complete if numeric else f"{o.complete}/{o.target}", "ran": o.ran,
            "best val loss": show(o.best_value, ".4f"),
            "dim": show(p.dim if p else None, "d"), "lam": show(p.lam if p else None, ".3g"),
            "epsilon": show(p.epsilon if p else None, ".3g"),
            **{k: show(v, ".3g") for k, v in (p.extra if p else ())},
            "seconds": round(o.seconds, 1),
        })
    return rows
