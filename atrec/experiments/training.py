"""What ``atrec train`` and ``atrec run`` do: a selection of datasets, methods, propensities and
AT options (:class:`TrainRequest`), planned configuration by configuration
(:func:`atrec.experiments.runner.plan_config`) and trained here or on a Dask cluster, then
summarised in one row per configuration."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from atrec.data.ratings import RatingData
from atrec.evaluation.summary import summarize
from atrec.experiments.driver import train_plans
from atrec.experiments.params import get_params
from atrec.experiments.progress import StageProgress
from atrec.experiments.runner import ConfigOutcome, ConfigPlan, RunSpec, plan_config
from atrec.methods.registry import configurations
from atrec.names import DEFAULT_METHOD, METRICS
from atrec.propensity.registry import propensity_label
from atrec.protocol import AUTHORS_BATCH_SEED, ATSettings, TrainSettings


def ensure_data(name: str, quiet: bool = False) -> RatingData:
    """The preprocessed dataset, downloading and preprocessing it first if needed.

    A download takes its source from ``ATREC_<NAME>_SOURCE`` (e.g. ``ATREC_COAT_SOURCE``,
    ``ATREC_YAHOO_SOURCE``) when set, else the official URL (Yahoo has none: see
    ``atrec download yahoo``).
    """
    from atrec.data.catalogue import raw_present
    from atrec.data.download import download_from_env
    from atrec.data.preprocess import load_data

    if not raw_present(name):
        download_from_env(name, quiet=quiet)
    return load_data(name)


@dataclass
class TrainRequest:
    """The selection of ``atrec train`` / ``atrec run`` (names already validated)."""

    datasets: list[str]
    propensities: list[str]
    at_options: list[bool]
    seeds: list[int]
    params: str = "published"
    force: bool = False
    batch_seed: int | None = AUTHORS_BATCH_SEED
    loss: str = "snips"
    download: bool = False
    methods: list[str] = field(default_factory=lambda: [DEFAULT_METHOD])

    def configurations(self, dataset: str | None = None) -> list[tuple[str, str, bool]]:
        """``(method, propensity, with_at)`` in training order (:func:`configurations`), for
        ``dataset`` when given (estimators that do not apply to it left out)."""
        return configurations(self.methods, self.propensities, self.at_options, dataset)


def plan_request(request: TrainRequest, root=None) -> Iterator[tuple[RatingData, list[ConfigPlan]]]:
    """Per dataset of ``request``: the data and the plan of every configuration, in training
    order. Shared by local and Dask runs (:func:`train`)."""
    configs = {d: request.configurations(d) for d in request.datasets}
    # resolve every parameter set first: a bad --params fails before any data is touched
    chosen = {(d, c): get_params(request.params, d, c[1], c[2], c[0])
              for d in request.datasets for c in configs[d]}
    for dataset in request.datasets:
        if request.download:
            data = ensure_data(dataset, quiet=True)
        else:
            from atrec.data.preprocess import load_data

            data = load_data(dataset)
        plans = []
        for method, propensity, with_at in configs[dataset]:
            params, source = chosen[(dataset, (method, propensity, with_at))]
            at_settings = (ATSettings(loss=request.loss, batch_seed=request.batch_seed)
                           if with_at else None)
            spec = RunSpec(
                dataset, propensity, with_at, params, source, tuple(request.seeds),
                TrainSettings(loss=request.loss, batch_seed=request.batch_seed), at_settings,
                method=method)
            plans.append(plan_config(data, spec, root, force=request.force))
        yield data, plans


def train(request: TrainRequest, root=None, progress=None, scheduler: str | None = None,
          echo: Callable[[str], None] | None = None) -> list[ConfigOutcome]:
    """Train every selected configuration; ``progress(outcome)`` after each one.

    ``echo(line)`` receives one progress line per finished configuration (configurations and
    seeds done, time so far and left: :class:`~atrec.experiments.progress.StageProgress`).
    ``scheduler``: the address of a Dask scheduler (``tcp://HOST:8786``) or ``local:N`` to train
    the groups of seeds on a Dask cluster (:mod:`atrec.experiments.distributed`); this process
    still writes every record. ``None``: train here, one group after another. Either way groups
    that another process on the same results folder is training are left to it and their
    records loaded afterwards (:mod:`atrec.experiments.locks`), and Ctrl-C stops after saving
    the group in progress (:class:`~atrec.experiments.interrupt.RunInterrupted`).
    """
    stage = StageProgress(echo)

    def done(plan: ConfigPlan) -> None:
        outcome = plan.finish()
        stage.done(plan.name, len(outcome.trained), len(outcome.reused))
        if progress:
            progress(outcome)

    if scheduler:
        from atrec.experiments.distributed import train_on_dask

        return train_on_dask(request, scheduler, root, done, stage)
    work = list(plan_request(request, root))
    plans = [plan for _, ps in work for plan in ps]
    stage.expect(len(plans), sum(len(plan.spec.seeds) for plan in plans))
    train_plans(work, stage, done)
    return [plan.finish() for plan in plans]


def outcome_rows(outcomes: list[ConfigOutcome]) -> list[dict]:
    """One summary row per configuration: mean and sd over its seeds of every metric."""
    rows = []
    for outcome in outcomes:
        spec = outcome.spec
        summary = summarize(outcome.records, params=spec.label,
                            expected_seeds=len(spec.seeds), method=spec.method)
        row = {"dataset": spec.dataset, "method": spec.method,
               "propensity": propensity_label(spec.propensity),
               "AT": "with" if spec.with_at else "without", "seeds": len(outcome.records)}
        for metric in METRICS:
            cell = summary.cell(spec.dataset, spec.propensity, spec.with_at, metric)
            row[metric] = f"{cell.mean:.4f} ± {cell.sd:.4f}" if cell and cell.n > 1 else (
                f"{cell.mean:.4f}" if cell else "-")
        row["trained"] = len(outcome.trained)
        row["seconds"] = round(outcome.seconds, 2)
        rows.append(row)
    return rows
