"""Running Figure 2: train every (min_items, with/without AT, seed), summarise, draw the figure
and write ``variance.md``; resumable, and refusing records made under other settings."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from atrec.data.ratings import RatingData
from atrec.errors import AtrecError
from atrec.experiments import interrupt
from atrec.experiments.driver import run_config
from atrec.experiments.progress import StageProgress
from atrec.experiments.groups import ConfigOutcome
from atrec.experiments.spec import RunSpec
from atrec.experiments.training import ensure_data
from atrec.fileio import atomic_write_text
from atrec.names import config_key
from atrec.paths import results_dir
from atrec.run_settings import settings_dict
from atrec.reporting.figures import figure2, save_figure
from atrec.reporting.tables import render
from atrec.params.lookup import TUNED
from atrec.results.records import RecordError, load_record, params_label, record_path
from atrec.runtime import compiled
from atrec.workflows.variance.data import build_point_data, check_min_items, run_spec
from atrec.workflows.variance.request import (
    DATASET,
    DEFAULT,
    FIGURE_NAME,
    PROPENSITY,
    VARIANCE_PARAMS,
    VarianceRequest,
    variance_dataset,
    variance_params,
)
from atrec.workflows.variance.summary import (
    VariancePoint,
    describe_settings,
    summarize_point,
    variance_rows,
)
from atrec.workflows.variance.tuning import tune_variance


@dataclass
class VarianceResult:
    """What :func:`run_variance` did: one point per ``min_items`` and the runs behind them."""

    request: VarianceRequest
    points: list[VariancePoint]
    params: dict                     # (min_items, with_at) -> HyperParams
    params_source: str               # label: default, tuned:<path> or file:<path>
    outcomes: list[ConfigOutcome] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    studies: list = field(default_factory=list)   # tuning.StudyOutcome, with tune_trials
    seconds: float = 0.0

    @property
    def trained(self) -> int:
        return sum(len(o.trained) for o in self.outcomes)

    @property
    def reused(self) -> int:
        return sum(len(o.reused) for o in self.outcomes)


def run_variance(request: VarianceRequest, data: RatingData | None = None,
                 root: Path | str | None = None,
                 figures: bool = True, out_dir: Path | None = None, quiet: bool = True,
                 progress: Callable[[ConfigOutcome], None] | None = None,
                 tune_progress: Callable | None = None,
                 echo: Callable[[str], None] | None = None) -> VarianceResult:
    """Train MF-IPS without / with AT for every ``min_items`` and seed; summarise; draw Figure 2.

    ``data``: ML-100K as :func:`atrec.data.preprocess.load_data` gives it (all of ``u.data`` as
    ``train``); default: :func:`atrec.experiments.training.ensure_data` (downloads and preprocesses when
    needed). ``root``: results folder of the records (default ``results/``); ``out_dir``: folder
    of the figure (default ``<root>/figures``). ``progress(outcome)`` is called after each
    (min_items, method) with the outcomes of its seeds merged into one; ``tune_progress`` after
    every tuning trial (see :func:`tune_variance`); ``echo(line)`` one progress line per
    (min_items, method) with the seeds done and the time left
    (:class:`~atrec.experiments.progress.StageProgress`). Ctrl-C stops after saving the group in
    progress (:class:`~atrec.experiments.interrupt.RunInterrupted`).
    """
    start = time.perf_counter()
    root = None if root is None else Path(root)
    if data is None:
        data = ensure_data(DATASET, quiet=quiet)
    studies = []
    if request.tune_trials:
        studies = tune_variance(data, request.min_items, request.at_options, request.tune_trials,
                                request.storage, request.settings, request.at_settings,
                                progress=tune_progress)
    # every min_items and parameter is checked before any training, so bad input fails at once
    for m in request.min_items:
        check_min_items(data, m)
    looked_up = variance_params(request.params, request.min_items, request.at_options)
    params = {key: hp for key, (hp, _) in looked_up.items()}
    source = next(iter(looked_up.values()))[1]
    if not request.force:
        check_reusable(request, params_label(source), root)
    result = VarianceResult(request, [], params, source, studies=studies)
    stage = StageProgress(echo)
    n_configs = len(request.min_items) * len(request.at_options)
    stage.expect(n_configs, n_configs * len(request.seeds))
    with interrupt.graceful_stop():
        for min_items in request.min_items:
            result.points.append(_train_point(request, data, min_items, params, source, root,
                                              stage, result, progress))
            # every point has its own table sizes, so its loops are not needed again
            compiled.retire()
    if figures:
        if out_dir is None and root is not None:
            out_dir = root / "figures"
        fig = figure2(result.points, params_label(source), note=describe_settings(request))
        result.figures = save_figure(fig, FIGURE_NAME, out_dir)
    result.seconds = time.perf_counter() - start
    return result


def _train_point(request: VarianceRequest, data: RatingData, min_items: int, params: dict,
                 source: str, root, stage: StageProgress, result: VarianceResult,
                 progress) -> VariancePoint:
    """Train (or reuse) both methods at one ``min_items``; its point of Figure 2."""
    # seeds that share a data draw are trained together (stacked, one compilation)
    draws: dict[int, list[int]] = {}
    for seed in request.seeds:
        draws.setdefault(request.data_seed(seed), []).append(seed)
    point_data = {d: build_point_data(data, min_items, d) for d in draws}
    records: list[dict] = []
    for with_at in request.at_options:
        hp = params[(min_items, with_at)]
        merged = None
        for d, seeds in draws.items():
            spec = run_spec(point_data[d], with_at, hp, source, tuple(seeds), request)
            outcome = run_config(point_data[d].data, spec, root, force=request.force, stage=stage)
            merged = _merge(merged, outcome, request.seeds)
        merged.records.sort(key=lambda r: r["seed"])
        result.outcomes.append(merged)
        records += merged.records
        stage.done(f"{merged.spec.dataset} {merged.spec.key}", len(merged.trained),
                   len(merged.reused))
        if progress:
            progress(merged)
        interrupt.check(stage.interrupted)
    first = next(iter(point_data.values()))
    return summarize_point(min_items, first.min_relative_propensity, first.data.num_users,
                           first.data.num_items, records)


def check_reusable(request: VarianceRequest, label: str, root: Path | None = None) -> None:
    """Refuse to reuse a record made on another data draw or under other protocol settings.

    Records are filed by (min_items, method, parameter set, seed), not by settings, so a rerun
    with e.g. another ``pre_steps`` would otherwise silently reuse the old numbers.
    """
    for with_at in request.at_options:
        expected = settings_dict(request.settings, request.at_settings, with_at)
        for m in request.min_items:
            for seed in request.seeds:
                path = record_path(variance_dataset(m), config_key(PROPENSITY, with_at), label,
                                   seed, root)
                if not path.exists():
                    continue
                try:
                    record = load_record(path)
                except RecordError:
                    continue  # corrupt: run_config recomputes it and says so
                data_seed = record.get("experiment", {}).get("data_seed")
                if data_seed != request.data_seed(seed):
                    raise AtrecError(f"{path} was trained on the data draw of seed {data_seed}, "
                                     f"not {request.data_seed(seed)} (data_draw "
                                     f"{request.data_draw}); rerun with --force to replace such "
                                     f"records, or use another results folder (ATREC_RESULTS_DIR)")
                stored = record.get("protocol", {}).get("settings")
                if stored != expected:
                    diff = ", ".join(f"{k} {stored.get(k) if stored else None} (now {v})"
                                     for k, v in expected.items()
                                     if not stored or stored.get(k) != v)
                    raise AtrecError(f"{path} was made with other settings: {diff}; rerun with "
                                     f"--force to replace such records, or use another results "
                                     f"folder (ATREC_RESULTS_DIR)")


def _merge(merged: ConfigOutcome | None, outcome: ConfigOutcome, seeds) -> ConfigOutcome:
    """One outcome for all seeds of a (min_items, method): runs are made one seed at a time."""
    if merged is None:
        spec = outcome.spec
        merged = ConfigOutcome(RunSpec(spec.dataset, spec.propensity, spec.with_at, spec.params,
                                       spec.params_source, tuple(seeds), spec.settings,
                                       spec.at_settings))
    merged.records += outcome.records
    merged.trained += outcome.trained
    merged.reused += outcome.reused
    merged.seconds += outcome.seconds
    return merged


def describe_params(result: VarianceResult) -> str:
    """One line naming the parameter set and its values, for the report."""
    what = {DEFAULT: "default set (atrec/resources/ml100k_params.yaml: Coat's published item "
                     "values; none are published for ML-100K)"}.get(result.params_source,
                                                                 result.params_source)
    parts = []
    for with_at in result.request.at_options:
        by_value: dict[tuple, list[int]] = {}
        for (min_items, at), hp in result.params.items():
            if at == with_at:
                by_value.setdefault(tuple(hp.as_dict().items()), []).append(min_items)
        for value, grid in by_value.items():
            where = "" if len(by_value) == 1 else f" at min_items {','.join(map(str, grid))}"
            parts.append(f"{'w/' if with_at else 'w/o'} AT{where}: "
                         + ", ".join(f"{k}={v:g}" for k, v in value))
    return f"parameters: {what}; " + "; ".join(parts)


@dataclass
class VarianceReport:
    """What :func:`reproduce_variance` wrote: ``outputs`` (label -> path) and a one-line summary."""

    result: VarianceResult
    outputs: dict[str, Path]
    summary: str


def reproduce_variance(seeds: int = 20, params: str = VARIANCE_PARAMS, root: Path | None = None,
                       quiet: bool = True, tune_trials: int | None = None,
                       echo: Callable[[str], None] | None = None) -> VarianceReport:
    """The whole Figure-2 experiment for ``atrec reproduce`` / ``make reproduce``.

    Every ``min_items`` of the paper, without and with AT, seeds ``0..seeds-1``, the paper's
    protocol's settings (see :func:`variance_report`). ``tune_trials``: tune every configuration
    first (25 in the protocol) and train with the tuned values.
    """
    request = VarianceRequest(seeds=tuple(range(seeds)), params=TUNED if tune_trials else params,
                              tune_trials=tune_trials)
    return variance_report(request, root=root, quiet=quiet, echo=echo)


def variance_report(request: VarianceRequest, data: RatingData | None = None,
                    root: Path | None = None, quiet: bool = True,
                    echo: Callable[[str], None] | None = None) -> VarianceReport:
    """:func:`run_variance` (``echo``: its progress lines), then ``<root>/variance.md`` (the table, the parameter and settings
    lines) beside Figure 2; returns the paths and a one-line summary. Resumable."""
    result = run_variance(request, data, root=root, quiet=quiet, echo=echo)
    base = results_dir() if root is None else Path(root)
    table = base / "variance.md"
    text = render(variance_rows(result.points), "markdown", numparse=False)
    atomic_write_text(table, "# Figure 2: MovieLens 100K, MF-IPS with vs without AT\n\n"
                      f"{text}\n\n{describe_params(result)}\n\n{describe_settings(request)}\n")
    outputs = {"variance table": table}
    outputs.update({f"figure 2 ({p.suffix[1:]})": p for p in result.figures})
    ratios = ", ".join(f"{p.min_items}: {p.ratio['mse'].mean:.3f}" for p in result.points
                       if p.ratio)
    summary = (f"{len(result.points)} min_items x {len(request.seeds)} seeds: {result.trained} "
               f"runs trained, {result.reused} reused"
               + (f"; MSE w/ / w/o AT by min_items: {ratios}" if ratios else ""))
    return VarianceReport(result, outputs, summary)
