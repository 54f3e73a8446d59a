"""What ``atrec train`` and ``atrec run`` do: a selection of datasets, methods, propensities and
AT options (:class:`~atrec.experiments.plan.TrainRequest`), planned configuration by
configuration (:mod:`atrec.experiments.plan`) and trained here or on a Dask cluster, then
summarised in one row per configuration."""

from __future__ import annotations

from collections.abc import Callable

from atrec.evaluation.summary import summarize
from atrec.experiments.distributed import train_on_dask
from atrec.experiments.driver import train_plans
from atrec.experiments.plan import TrainRequest, ensure_data, plan_request  # noqa: F401  (re-exported)
from atrec.experiments.progress import StageProgress
from atrec.experiments.groups import ConfigOutcome, ConfigPlan
from atrec.propensity.registry import propensity_label
from atrec.params.budget import params_budget


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

    if scheduler is not None:  # an empty address is refused there, not taken as "here"
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
               "AT": "with" if spec.with_at else "without", "params": spec.label,
               "budget": spec.params_budget or params_budget(spec.params_source, spec.dataset,
                                                             spec.params_key, None,
                                                             spec.protocol),
               "seeds": len(outcome.records)}
        for metric in spec.protocol.metrics:
            cell = summary.cell(spec.dataset, spec.propensity, spec.with_at, metric)
            row[metric] = f"{cell.mean:.4f} ± {cell.sd:.4f}" if cell and cell.n > 1 else (
                f"{cell.mean:.4f}" if cell else "-")
        row["trained"] = len(outcome.trained)
        row["seconds"] = round(outcome.seconds, 2)
        rows.append(row)
    return rows
