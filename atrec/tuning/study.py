"""Optuna studies that many workers share (docs/protocol.md, "Tuning").

:func:`run_study` works on one study until it holds the requested number of COMPLETE trials,
counted over every worker (process, machine) that opens it in the same storage
(:mod:`atrec.tuning.storage`). Sampler: Optuna's TPE with seed 123 (see
:class:`PerTrialTPESampler` for how the seed meets resumed and distributed studies).

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
inside one compiled loop (:mod:`atrec.learners.mf`), which reports nothing until the run ends.
Pruning on intermediate values would need that loop cut into pieces, and a pruned trial is not a
measured one. What is tuned and how the best values are kept: :mod:`atrec.tuning.configs`,
:mod:`atrec.tuning.export`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from atrec.errors import AtrecError
from atrec.names import DEFAULT_METHOD
from atrec.run_settings import SAMPLER_SEED, TUNING_BUDGET, TUNING_SEED
from atrec.params.lookup import HyperParams
from atrec.tuning.space import SEARCH_SPACE, SearchSpace
from atrec.tuning.storage import (  # noqa: F401  (WorkerSettings: re-exported)
    WorkerSettings,
    default_storage_url,
    open_storage,
    storage_label,
)

DEFAULT_TRIALS = TUNING_BUDGET   # the name the tuning API has always exported
DEFAULT_PREFIX = "atrec"
WORKER_ATTR = "worker"      # set by a trial's objective when it starts (host:pid)
SURPLUS_ATTR = "surplus"    # set on a trial that gave way to trials numbered below it
STUDY_ATTR = "atrec"        # what the study measures; a worker with other settings is refused
START_ATTR = "start"        # set on the enqueued first trial: the values it starts from

Objective = Callable[[HyperParams], float]


class PerTrialTPESampler:
    """Optuna's TPE sampler, re-seeded for every trial from ``(seed, trial number)``.

    Trial ``k`` is sampled by ``TPESampler(seed=SeedSequence([seed, k]))`` given the trials
    finished so far. One worker from scratch is therefore reproducible, as a single
    ``TPESampler(seed=123)`` would be; a resumed study does not replay the random start-up
    draws of its first trials (a fixed-seed sampler restarted from its seed would); and two
    workers never share a random stream, because no two trials share a number. Every other TPE
    setting is Optuna's default (``constant_liar`` on, so concurrent workers avoid each
    other's running points).

    It is an Optuna sampler by its methods (``optuna.samplers.BaseSampler``'s, each handed to
    the inner TPE sampler), not by its base class, so that defining it imports no Optuna.
    """

    def __init__(self, seed: int = SAMPLER_SEED) -> None:
        self.seed = seed
        self._inner = self._tpe(self.seed_for(0))

    @staticmethod
    def _tpe(seed: int):
        import optuna  # about 1 s to import: only where a study is used

        return optuna.samplers.TPESampler(seed=seed)

    def seed_for(self, number: int) -> int:
        """The TPE seed of trial ``number``."""
        return int(np.random.SeedSequence([self.seed, number]).generate_state(1)[0])

    def before_trial(self, study, trial) -> None:
        self._inner = self._tpe(self.seed_for(trial.number))
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
    start_value: float | None = None   # the value of the enqueued first trial
    start: str | None = None           # the set its values came from (its START_ATTR)
    # set by the export when the tuned file kept another study's better entry for this
    # configuration: (that study, its best value)
    kept: tuple[str, float] | None = None
    failed: str | None = None          # why its best trial is a failed fit: not exported
    seed: int = TUNING_SEED            # the run seed of the split its trials measure
    # set on the combined outcome of a tune on several splits (atrec.tuning.splits.SplitSpread)
    spread: object = None


class _Surplus(Exception):
    """Raised inside a trial that is not needed because trials numbered below it fill the target."""


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _fail_orphans(study, trials, grace: int, ages: dict[int, float] | None) -> None:
    """Mark FAIL the RUNNING trials older than ``grace`` that have no heartbeat: those that never
    started an objective, and those whose worker died before its first heartbeat was written.

    (Optuna's ``fail_stale_trials`` handles the trials whose heartbeat stopped; a trial with no
    heartbeat at all is not stale to it, so it would stay RUNNING and every other worker would
    wait for it forever.) Such orphans come from a worker killed between creating a trial and
    its heartbeat thread's first write (the objective may already have started), or from
    clients that ask for trials without heartbeats. ``ages``: :func:`_heartbeat_ages`; where
    the heartbeat table cannot be read (``None``), only the trials that never started an
    objective are failed.
    """
    from optuna.exceptions import (  # about 1 s to import: only where a study is used
        UpdateFinishedTrialError,  # about 1 s to import: only where a study is used
    )
    from optuna.trial import TrialState

    now = datetime.now()
    for t in trials:
        silent = WORKER_ATTR not in t.user_attrs or (ages is not None and t.number not in ages)
        if (t.state == TrialState.RUNNING and silent and t.datetime_start is not None
                and (now - t.datetime_start).total_seconds() > grace):
            with contextlib.suppress(UpdateFinishedTrialError, ValueError, RuntimeError):
                study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)


def _fail_stale(study, grace: int):
    """Fail killed workers' trials; return all trials of the study afterwards and the
    heartbeat ages read to do it (:func:`_heartbeat_ages`)."""
    import optuna  # about 1 s to import: only where a study is used
    from optuna.exceptions import ExperimentalWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    trials = study.get_trials(deepcopy=False)
    ages = _heartbeat_ages(study)
    _fail_orphans(study, trials, grace, ages)
    return study.get_trials(deepcopy=False), ages


def _counts(trials, below: int | None = None) -> tuple[int, int]:
    """``(complete, running)`` trials; running ones only numbered below ``below`` if given."""
    from optuna.trial import TrialState  # about 1 s to import: only where a study is used

    complete = sum(t.state == TrialState.COMPLETE for t in trials)
    running = sum(t.state == TrialState.RUNNING and (below is None or t.number < below)
                  for t in trials)
    return complete, running


def _best(trials) -> tuple[float | None, object]:
    from optuna.trial import TrialState  # about 1 s to import: only where a study is used

    done = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
    if not done:
        return None, None
    best = min(done, key=lambda t: (t.value, t.number))
    return float(best.value), best


def _heartbeat_ages(study) -> dict[int, float] | None:
    """Seconds since the last heartbeat of each RUNNING trial that has one, by trial number.

    Read from an RDB storage's heartbeat table (Optuna keeps no public reader of it); other
    storages, or an Optuna whose tables differ, give ``None``: unknown, never a reason to fail
    a trial.
    """
    import optuna  # about 1 s to import: only where a study is used
    from optuna.trial import TrialState

    try:
        import sqlalchemy
        from optuna.storages._rdb import models
        from optuna.storages._rdb.storage import _create_scoped_session

        storage = getattr(study._storage, "_backend", study._storage)
        if not isinstance(storage, optuna.storages.RDBStorage):
            return None
        with _create_scoped_session(storage.scoped_session) as session:
            now = session.execute(sqlalchemy.func.now()).scalar().replace(tzinfo=None)
            rows = (session.query(models.TrialModel.number, models.TrialHeartbeatModel.heartbeat)
                    .join(models.TrialHeartbeatModel,
                          models.TrialHeartbeatModel.trial_id == models.TrialModel.trial_id)
                    .filter(models.TrialModel.study_id == study._study_id,
                            models.TrialModel.state == TrialState.RUNNING).all())
        return {int(n): (now - beat.replace(tzinfo=None)).total_seconds() for n, beat in rows}
    except Exception:   # noqa: BLE001 - a private table: never let it break tuning
        return None


def _say_silent(trials, ages: dict[int, float] | None, worker: WorkerSettings, told: set,
                notice) -> None:
    """One line per other worker's RUNNING trial whose heartbeat stopped (once per trial): this
    worker waits for it up to the grace period before counting it failed."""
    from optuna.trial import TrialState  # about 1 s to import: only where a study is used

    if notice is None:
        return
    ages = ages or {}
    for t in trials:
        age = ages.get(t.number)
        if (t.state == TrialState.RUNNING and t.number not in told and age is not None
                and age > 2 * worker.heartbeat_interval):
            told.add(t.number)
            owner = t.user_attrs.get(WORKER_ATTR, "unknown")
            notice(f"waiting up to {max(0, worker.grace_period - age):.0f} s for trial "
                   f"{t.number} of worker {owner} (no heartbeat for {age:.0f} s) before "
                   f"counting it failed")


@contextlib.contextmanager
def quiet_optuna():
    """Optuna's logger at ERROR for the ``with`` block (restored afterwards)."""
    import optuna  # about 1 s to import: only where a study is used

    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def run_study(name: str, objective: Objective, with_at: bool, n_trials: int = DEFAULT_TRIALS,
              storage=None, *, space: SearchSpace = SEARCH_SPACE, seed: int = SAMPLER_SEED,
              worker: WorkerSettings | None = None, attrs: dict | None = None,
              progress: Callable[[Progress], None] | None = None,
              notice: Callable[[str], None] | None = None,
              first_trial: dict | None = None, first_label: str = "reference") -> StudyOutcome:
    """Work on study ``name`` until it holds ``n_trials`` COMPLETE trials (over all workers).

    ``objective(params) -> float`` is minimised over ``space`` (``epsilon`` only ``with_at``).
    ``storage``: an Optuna storage URL (default :func:`default_storage_url`) or a storage
    object. ``attrs`` describe what the objective measures; they are stored with a new study,
    and a worker whose ``attrs`` differ from the stored ones is refused (:class:`AtrecError`)
    rather than mixing two objectives in one study. ``progress`` is called once at the start
    and after every trial of this worker. ``notice(line)`` is told when this worker starts
    waiting for another worker's trial whose heartbeat stopped (a killed worker's trial counts
    as failed only after ``grace_period``). Returns the study's state when it is done.

    ``first_trial``: values (``name -> value``, a subset of the space's names) that a new study
    evaluates as its first trial (Optuna's ``enqueue_trial``; names not given are sampled), so
    the best value found is never worse than theirs; the trial carries the user attribute
    ``start = first_label``. A study that already holds trials gets none (a resumed study keeps
    its history; workers opening a new study together enqueue it once, Optuna's
    ``skip_if_exists`` dropping a second copy of the same values).
    """
    import optuna  # about 1 s to import: only where a study is used
    from optuna.trial import TrialState

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
        if first_trial and not study.get_trials(deepcopy=False):
            study.enqueue_trial(dict(first_trial), user_attrs={START_ATTR: first_label},
                                skip_if_exists=True)
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
        told: set[int] = set()
        while True:
            trials, ages = _fail_stale(study, worker.grace_period)
            complete, running = _counts(trials)
            if complete >= n_trials:
                break
            if complete + running >= n_trials:
                _say_silent(trials, ages, worker, told, notice)
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
    first = next((t for t in trials if START_ATTR in t.user_attrs
                  and t.state == TrialState.COMPLETE), None)
    if first is not None:
        outcome.start_value, outcome.start = float(first.value), str(first.user_attrs[START_ATTR])
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


