"""``atrec train``, ``atrec run`` and ``atrec tune``: train configurations over seeds, or tune
their hyperparameters."""

from __future__ import annotations

import functools
import sys

import click

from atrec.cli.app import (
    FORMATS,
    TuneProgress,
    at_notice,
    at_options,
    check_protocol,
    echo_notes,
    expand_methods,
    expand_propensities,
    friendly_errors,
    main,
    propensity_notice,
    run_opts,
    selection_options,
)
from atrec.errors import AtrecError
from atrec.experiments.seeds import parse_seeds
from atrec.experiments.training import TrainRequest, train
from atrec.experiments.training import outcome_rows as train_rows
from atrec.limits import MAX_SPLITS, MAX_TRIALS
from atrec.names import expand
from atrec.paths import require_writable
from atrec.run_settings import AUTHORS_BATCH_SEED, TUNING_BUDGET
from atrec.protocols import get_protocol
from atrec.reporting.tables import render
from atrec.params.lookup import tuned_params_path
from atrec.tuning import TuneRequest, tune
from atrec.tuning import outcome_rows as tune_rows
from atrec.tuning.configs import check_start
from atrec.tuning.export import kept_notes
from atrec.tuning.splits import spread_lines


def _train_request(datasets, methods, propensities, with_at, without_at, seeds, params, force,
                   batch_seed, loss, download, protocol, **_output_and_scheduler):
    chosen = get_protocol(check_protocol(protocol))
    names = expand_methods(methods, chosen.name)
    ats = at_options(with_at, without_at)
    propensity_notice(names, chosen.name)
    at_notice(names, ats, chosen.name)
    return TrainRequest(
        datasets=expand(datasets, chosen.datasets, "dataset"),
        propensities=expand_propensities(propensities),
        at_options=ats, seeds=parse_seeds(seeds),
        params=params or chosen.default_params, force=force,
        batch_seed=None if batch_seed == "per-seed" else AUTHORS_BATCH_SEED, loss=loss,
        download=download, methods=names, protocol=chosen)


def _train_and_print(request, fmt: str, quiet: bool, scheduler: str | None) -> None:
    echo = None if quiet else functools.partial(click.echo, err=True)
    outcomes = train(request, scheduler=scheduler, echo=echo)
    click.echo(render(train_rows(outcomes), fmt))


@main.command("train")
@selection_options
@run_opts
@friendly_errors
def train_command(**options) -> None:
    """Train configurations over seeds and save one result record per run under results/.

    Needs the preprocessed data (atrec download/preprocess). Seeds that already have a record
    are skipped (resume); --force recomputes. --scheduler spreads the groups of seeds over a
    Dask cluster. Example: atrec train --dataset coat --propensity item --without-at --seeds 20
    """
    request = _train_request(download=False, **options)
    require_writable("results")  # before any training, not when the first record is saved
    _train_and_print(request, options["fmt"], options["quiet"], options["scheduler"])


@main.command("run")
@selection_options
@run_opts
@friendly_errors
def run_command(**options) -> None:
    """Download and preprocess if needed, train, and print the summary of the selection.

    Local sources come from ATREC_COAT_SOURCE / ATREC_ML_100K_SOURCE / ATREC_YAHOO_SOURCE when
    the data is not there yet. Example: atrec run --dataset coat --propensity item --with-at
    """
    request = _train_request(download=True, **options)
    require_writable("results")
    _train_and_print(request, options["fmt"], options["quiet"], options["scheduler"])


@main.command("tune")
@functools.partial(selection_options, params=False)
@click.option("--trials", type=click.IntRange(1, MAX_TRIALS), default=TUNING_BUDGET,
              show_default=True,
              help="COMPLETE trials per study, counted over every worker sharing the storage "
                   "(default: atrec's budget, the same for every method; a method's reference "
                   "values, where it has them, are its first trial).")
@click.option("--storage", default=None,
              help="Optuna storage URL shared by workers (sqlite:///..., postgresql://...). "
                   "Default: sqlite:///<results>/optuna.db.")
@click.option("--params", "start", default=None,
              help="The sets a new study's first trial is taken from: the first, of those "
                   "comma-separated, that has the configuration's values (with AT and none, its "
                   "values without AT, epsilon sampled), so the best found is never worse on "
                   "the objective than what 'atrec train' would use; 'none': the sampler alone. "
                   "Default: the sets 'atrec train' reads under --protocol, less tuned "
                   "(saito2020: published,tuned-atrec,reference).")
@click.option("--study-prefix", default="atrec", show_default=True,
              help="Studies are named <prefix>-<dataset>-[<method>/]<propensity>[-at].")
@click.option("--splits", type=click.IntRange(1, MAX_SPLITS), default=1, show_default=True,
              help="Validation splits each configuration is tuned on, one study each (run "
                   "seeds 12345, 12346, ...; the first is the single-split study, the others "
                   "named ...-seed<seed>). Each split's winner is measured on the other splits "
                   "(at most N*(N-1) extra runs) and the one whose objective averaged over the "
                   "splits is lowest is exported, with the spread of the splits' best values; "
                   "every split's result goes to tuning_spread.json beside the tuned parameter "
                   "file ('atrec report --table tuning-spread').")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no closing message.")
@friendly_errors
def tune_command(datasets, methods, propensities, with_at, without_at, trials, start, storage,
                 study_prefix, splits, fmt, quiet, protocol) -> None:
    """Tune dim, lam (and epsilon with AT) with Optuna TPE; export the best to --params tuned.

    One study per dataset, method, propensity and with/without AT (search space: the method's
    hyperparameters, 'atrec methods' lists them); objective: the lowest validation
    loss of one run on the seed-12345 split (binary-icde24, which has no validation part: the
    last epoch's training loss); --splits N: on N splits, the spread of their best values
    reported, the values best on average exported. A study's best replaces a tuned entry only
    when it is no worse. Rerun to resume a killed study. Start the same
    command in several processes (or on several machines with one --storage) to share the
    trials. No pruning: the objective is only known when a run ends.
    Example: atrec tune --dataset coat --propensity item --with-at
    """
    chosen = get_protocol(check_protocol(protocol))
    protocol = chosen.name
    names = expand_methods(methods, chosen)
    ats = at_options(with_at, without_at)
    propensity_notice(names, chosen)
    at_notice(names, ats, chosen)
    request = TuneRequest(
        datasets=tuple(expand(datasets, get_protocol(protocol).datasets, "dataset")),
        propensities=tuple(expand_propensities(propensities)),
        at_options=tuple(ats), trials=trials, storage=storage, study_prefix=study_prefix,
        methods=tuple(names), protocol=chosen, start=check_start(start, chosen), splits=splits)
    if not chosen.has_validation and not quiet:
        echo_notes([f"protocol '{protocol}' has no validation split: each trial's objective "
                    f"is its last epoch's training loss, so the values fit the "
                    f"training data (binary-clean tunes on a validation part)"])
    require_writable("results")  # the default storage and the tuned parameter file live there
    bars = TuneProgress(enabled=not quiet and sys.stderr.isatty())
    try:
        outcomes = tune(request, progress=bars,
                        notice=None if quiet else functools.partial(click.echo, err=True))
    finally:
        bars.close()
    objective = "best val loss" if chosen.has_validation else "best train loss"
    if splits > 1:       # the exported values' objective averaged over the splits
        objective = objective.replace("best ", "") + " (mean over splits)"
    click.echo(render(tune_rows(outcomes, numeric=fmt in ("csv", "json"), objective=objective),
                      fmt, numparse=False))
    path = tuned_params_path(request.protocol)
    echo_notes(kept_notes(outcomes, path))
    if not quiet:
        echo_notes(spread_lines(outcomes))
    failed = [o for o in outcomes if o.failed]
    if failed:
        raise AtrecError(f"{len(failed)} of {len(outcomes)} studies failed and were not "
                         f"exported ({'; '.join(f'{o.study}: {o.failed}' for o in failed)}): "
                         f"widen the search space or fix the method before shipping values",
                         exit_code=1)
    if not quiet:
        echo_notes([f"best parameters merged into {path} (use --params tuned"
                    f"{chosen.flag})"])
