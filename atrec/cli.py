"""The ``atrec`` command line: a thin shell over the library.

Each command parses options, calls one library function and formats its result. Library errors
(:class:`atrec.errors.AtrecError`) become one line on standard error and a non-zero exit code;
Ctrl-C exits with 130 after saying that a rerun resumes. Heavy imports (TensorFlow, Optuna) happen
inside the commands, so ``atrec --help`` is instant.

Shared vocabulary (the same option means the same thing everywhere): ``--dataset``,
``--propensity``, ``--with-at/--without-at``, ``--seeds``, ``--params``, ``--storage``,
``--format``, ``--quiet``, ``--force``.
"""

from __future__ import annotations

import functools
import sys

import click

from atrec import __version__
from atrec.errors import AtrecError

FORMATS = ("table", "markdown", "latex", "csv", "json")


def friendly_errors(func):
    """Turn library errors into one line and an exit code; never a traceback for bad input."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except AtrecError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted: finished runs are saved; run the same command again to resume",
                       err=True)
            sys.exit(130)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="atrec")
def main() -> None:
    """Reproduce and benchmark asymmetric tri-training (Saito, SIGIR 2020) on MNAR ratings.

    Typical use: atrec download coat; atrec preprocess coat;
    atrec run --dataset coat --propensity item --with-at; atrec report.
    """


@main.command("download")
@click.argument("name")
@click.option("--source", type=click.Path(path_type=str), default=None,
              help="Use this local copy instead of the official URL: an archive (.zip, .tar.gz, "
                   ".tgz), a folder, or a single file.")
@click.option("--force", is_flag=True, help="Fetch and verify again even if a valid copy is there.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no closing message.")
@friendly_errors
def download(name: str, source: str | None, force: bool, quiet: bool) -> None:
    """Fetch dataset NAME, verify its SHA-256 and install it under the data folder.

    NAME is coat, ml-100k, yahoo, or all (= coat and ml-100k, plus yahoo if it is already
    installed). Yahoo! R3 is licensed per user and never downloaded: request it from Yahoo!
    Webscope, then run 'atrec download yahoo --source PATH' (PATH: the archive, or a folder
    holding the two .txt files). Data folder: ./data or $ATREC_DATA_DIR.
    """
    from atrec.data.download import download_many

    for result in download_many(name, source=source, quiet=quiet, force=force):
        if not quiet:
            click.echo(result.message)


@main.command("preprocess")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format of the statistics table.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@friendly_errors
def preprocess(name: str, fmt: str, quiet: bool) -> None:
    """Parse the downloaded dataset NAME into atrec's binary store and print its statistics.

    NAME is coat, ml-100k, yahoo, or all (= coat and ml-100k, plus yahoo if installed). The
    table gives users, items, ratings, sparsity (train ratings / (users x items)), mean rating
    of train and test, and KL(train || test) of the rating shares.
    """
    from atrec.data.datastats import data_stats, stats_rows
    from atrec.data.preprocess import preprocess_many
    from atrec.reporting.tables import render

    rows = stats_rows([data_stats(d) for d in preprocess_many(name, quiet=quiet)])
    click.echo(render(rows, fmt))


def _table_datasets(values: tuple[str, ...]) -> list[str] | None:
    """``--dataset`` values of report/check (yahoo, coat, all); ``None`` when none were given."""
    from atrec.names import TABLE_DATASETS, expand

    return expand(values, TABLE_DATASETS, "dataset") or None


def _echo_notes(notes, prefix: str = "note") -> None:
    for note in notes:
        click.echo(f"{prefix}: {note}", err=True)


@main.command("report")
@click.option("--dataset", "datasets", multiple=True,
              help="yahoo, coat or all (repeat or comma-separate). Default: those with results.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format of every table.")
@click.option("--std", is_flag=True, help="Add the seed-to-seed sd to each cell (0.873 ± 0.004).")
@click.option("--ndcg", type=click.Choice(("paper", "standard", "both")), default="paper",
              show_default=True, help="nDCG@3 variant: the paper's formula, the standard one, or both.")
@click.option("--compare", type=click.Choice(("paper",)), default=None,
              help="Show the published value and the difference beside each cell.")
@click.option("--stats", is_flag=True, help="Add the data statistics table.")
@click.option("--claims/--no-claims", default=True, show_default=True,
              help="Evaluate the paper's claims on these results.")
@click.option("--significance/--no-significance", default=True, show_default=True,
              help="Paired t and Wilcoxon tests of w/ vs w/o AT, Holm-corrected.")
@click.option("--figures/--no-figures", default=True, show_default=True,
              help="Write figures 1, 3 and 4 (PNG and PDF) under <results>/figures.")
@click.option("--params", default="published", show_default=True,
              help="Parameter set of the results: published, tuned, or a parameter FILE; "
                   "add +ips / +per-seed for runs trained with --loss ips / --batch-seed "
                   "per-seed (e.g. published+ips).")
@click.option("--expected-seeds", type=click.IntRange(min=1), default=20, show_default=True,
              help="Seeds of a complete cell; cells with fewer are reported with a warning.")
@friendly_errors
def report_command(datasets, fmt, std, ndcg, compare, stats, claims, significance, figures,
                   params, expected_seeds) -> None:
    """Print Table 1 of the paper from your results, with tests, statistics and claims.

    Results are read from <results>/runs (./results or $ATREC_RESULTS_DIR); notices and the
    paths of the figures written go to standard error.
    """
    from atrec.reporting.report import report

    out = report(datasets=_table_datasets(datasets), fmt=fmt, std=std, ndcg=ndcg, compare=compare,
                 stats=stats, claims=claims, significance=significance, figures=figures,
                 params=params, expected_seeds=expected_seeds)
    click.echo(out.text)
    _echo_notes(out.notices)
    _echo_notes(out.figures, prefix="wrote")


@main.command("check")
@click.option("--dataset", "datasets", multiple=True,
              help="yahoo, coat or all (repeat or comma-separate). Default: those with results.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format of the pass/fail tables.")
@click.option("--params", default="published", show_default=True,
              help="Parameter set of the results: published, tuned, or a parameter FILE; "
                   "add +ips / +per-seed for runs trained with --loss ips / --batch-seed "
                   "per-seed (e.g. published+ips).")
@click.option("--allow-missing", is_flag=True,
              help="Cells and claims without results do not fail the check.")
@click.option("--expected-seeds", type=click.IntRange(min=1), default=20, show_default=True,
              help="Seeds of a complete cell; cells with fewer are reported with a warning.")
@friendly_errors
def check_command(datasets, fmt, params, allow_missing, expected_seeds) -> None:
    """Regression gate: compare your results with the published Table 1 and the paper's claims.

    Exit code 0 only when every selected cell is within tolerance and every gating claim holds;
    4 otherwise (tolerances and gating claims: see 'atrec.evaluation.check').
    """
    from atrec.evaluation.check import check, render_check

    result = check(None, _table_datasets(datasets), params, allow_missing=allow_missing,
                   expected_seeds=expected_seeds)
    click.echo(render_check(result, fmt))
    _echo_notes(result.notices)
    if not result.passed:
        sys.exit(result.exit_code)


# --- train / run ---------------------------------------------------------------------------

def _selection_options(func, params: bool = True):
    """The options shared by ``train``, ``run`` and ``tune`` (``tune`` without ``--params``)."""
    options = [
        click.option("--dataset", "datasets", multiple=True, default=("coat",), show_default=True,
                     help="coat, yahoo or all; repeat or comma-separate for several."),
        click.option("--propensity", "propensities", multiple=True, default=("all",),
                     show_default=True,
                     help="uniform, user, item, user-item, nb-uniform, nb-true or all."),
        click.option("--with-at", "with_at", is_flag=True,
                     help="Train MF-IPS with asymmetric tri-training."),
        click.option("--without-at", "without_at", is_flag=True,
                     help="Train plain MF-IPS. Give both flags (or neither) for both."),
        click.option("--params", default="published", show_default=True,
                     help="published (the authors' tuned values), tuned (from 'atrec tune'), "
                          "or a YAML parameter file."),
    ]
    if not params:
        options = options[:-1]  # tune makes parameters rather than taking them
    for option in reversed(options):
        func = option(func)
    return func


def _train_request(datasets, propensities, with_at, without_at, seeds, params, force, batch_seed,
                   loss, download, **_output):
    from atrec.experiments.runner import TrainRequest, parse_seeds
    from atrec.names import TABLE_DATASETS, expand
    from atrec.propensity.registry import propensity_names

    at_options = [False, True] if with_at == without_at else [with_at]
    return TrainRequest(
        datasets=expand(datasets, TABLE_DATASETS, "dataset"),
        propensities=expand(propensities, propensity_names(), "propensity"),
        at_options=at_options, seeds=parse_seeds(seeds), params=params, force=force,
        batch_seed=None if batch_seed == "per-seed" else 12345, loss=loss, download=download)


def _train_and_print(request, fmt: str, quiet: bool) -> None:
    from atrec.experiments.runner import outcome_rows, train
    from atrec.reporting.tables import render

    def progress(outcome):
        if not quiet:
            s = outcome.spec
            click.echo(f"{s.dataset} {s.key}: trained {len(outcome.trained)} seed(s), reused "
                       f"{len(outcome.reused)}, {outcome.seconds:.1f} s", err=True)

    outcomes = train(request, progress=progress)
    click.echo(render(outcome_rows(outcomes), fmt))


_run_options = [
    click.option("--seeds", default="20", show_default=True,
                 help="How many seeds (20 = seeds 0..19), a range (0-4) or a list (1,3,5)."),
    click.option("--force", is_flag=True, help="Recompute seeds that already have a record."),
    click.option("--batch-seed", type=click.Choice(["fixed", "per-seed"]), default="fixed",
                 show_default=True,
                 help="fixed: the authors' batch sampler reset to seed 12345 in every run; "
                      "per-seed: each seed its own batch stream."),
    click.option("--loss", type=click.Choice(["snips", "ips"]), default="snips", show_default=True,
                 help="snips: the authors' self-normalised IPS mean; ips: the paper's Eq. 3."),
    click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True),
    click.option("--quiet", "-q", is_flag=True, help="No progress lines."),
]


def _run_opts(func):
    for option in reversed(_run_options):
        func = option(func)
    return func


@main.command("train")
@_selection_options
@_run_opts
@friendly_errors
def train_command(**options) -> None:
    """Train configurations over seeds and save one result record per run under results/.

    Needs the preprocessed data (atrec download/preprocess). Seeds that already have a record
    are skipped (resume); --force recomputes. Example:
    atrec train --dataset coat --propensity item --without-at --seeds 20
    """
    _train_and_print(_train_request(download=False, **options), options["fmt"], options["quiet"])


@main.command("run")
@_selection_options
@_run_opts
@friendly_errors
def run_command(**options) -> None:
    """Download and preprocess if needed, train, and print the summary of the selection.

    Local sources come from ATREC_COAT_SOURCE / ATREC_ML_100K_SOURCE / ATREC_YAHOO_SOURCE when
    the data is not there yet. Example: atrec run --dataset coat --propensity item --with-at
    """
    _train_and_print(_train_request(download=True, **options), options["fmt"], options["quiet"])


# --- variance (paper Figure 2, ML-100K) --------------------------------------------------------

@main.command("variance")
@click.option("--min-items", default="1,2,5,10,20,50", show_default=True,
              help="Keep movies rated by at least this many users; comma-separated values or "
                   "'all' (the paper's grid).")
@click.option("--with-at", "with_at", is_flag=True, help="Train MF-IPS with asymmetric tri-training.")
@click.option("--without-at", "without_at", is_flag=True,
              help="Train plain MF-IPS. Give both flags (or neither) for both.")
@click.option("--seeds", default="20", show_default=True,
              help="How many seeds (20 = seeds 0..19), a range (0-4) or a list (1,3,5).")
@click.option("--params", default="default", show_default=True,
              help="default (documented set), tuned (from 'atrec variance --tune'), or a YAML "
                   "parameter file with keys ml-100k-min<N> -> data-item / data-item-at.")
@click.option("--tune", is_flag=True,
              help="Tune every (min_items, with/without AT) first (Optuna, as 'atrec tune'; "
                   "resumable) and train with the tuned values (implies --params tuned).")
@click.option("--trials", type=click.IntRange(min=1), default=25, show_default=True,
              help="Trials per study with --tune.")
@click.option("--storage", default=None,
              help="Optuna storage URL for --tune (default: <results>/optuna.db).")
@click.option("--data-draw", type=click.Choice(["fixed", "per-seed"]), default="fixed",
              show_default=True,
              help="fixed: one data draw (seed 12345) for all seeds, which vary split and "
                   "initialisation; per-seed: each seed also draws its own test set (slower, "
                   "more memory).")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="MF-IPS training steps (default: the protocol's 500).")
@click.option("--pre-steps", type=click.IntRange(min=1), default=None,
              help="AT pre-training steps (default: the protocol's 150; ML-100K's training "
                   "part is about 7x Coat's, so 150 batches are about 3 epochs there).")
@click.option("--figure/--no-figure", default=True, show_default=True,
              help="Write Figure 2 (PNG and PDF) under <results>/figures.")
@click.option("--force", is_flag=True, help="Recompute seeds that already have a record.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
@friendly_errors
def variance_command(min_items, with_at, without_at, seeds, params, tune, trials, storage,
                     data_draw, steps, pre_steps, figure, force, fmt, quiet) -> None:
    """The paper's variance experiment (RQ1, Figure 2) on MovieLens 100K.

    For each min_items: MF-IPS with the item propensity P(i) = n_i / max n_i, without and with
    AT, one record per seed (reruns resume). Prints per min_items the minimum relative
    propensity, MAE/MSE of both (mean ± se over seeds) and the paired ratio with / without AT;
    downloads and preprocesses ml-100k if needed (local copy: ATREC_ML_100K_SOURCE). The
    parameter set used is named on standard error. Example: atrec variance --min-items 1,50
    --seeds 5
    """
    from atrec.experiments.runner import parse_seeds
    from atrec.reporting.tables import render
    from atrec.experiments.variance import (
        VarianceRequest,
        describe_params,
        describe_settings,
        parse_min_items,
        protocol_settings,
        run_variance,
        variance_rows,
    )

    if tune and params not in ("default", "tuned"):
        raise AtrecError(f"--tune writes the tuned set and trains with it: drop --params {params}")
    settings, at_settings = protocol_settings(steps, pre_steps)
    request = VarianceRequest(
        min_items=parse_min_items(min_items),
        at_options=(False, True) if with_at == without_at else (with_at,),
        seeds=tuple(parse_seeds(seeds)), params="tuned" if tune else params, force=force,
        tune_trials=trials if tune else None, storage=storage, settings=settings,
        at_settings=at_settings, data_draw=data_draw)

    def progress(outcome):
        if not quiet:
            s = outcome.spec
            click.echo(f"{s.dataset} {s.key}: trained {len(outcome.trained)} seed(s), reused "
                       f"{len(outcome.reused)}, {outcome.seconds:.1f} s", err=True)

    result = run_variance(request, figures=figure, quiet=quiet, progress=progress,
                          tune_progress=_TuneProgress(enabled=not quiet and sys.stderr.isatty()))
    click.echo(render(variance_rows(result.points, numeric=fmt in ("csv", "json")), fmt,
                      numparse=False))
    _echo_notes([describe_params(result), describe_settings(request),
                 f"{result.trained} run(s) trained, {result.reused} reused, {result.seconds:.1f} s"])
    _echo_notes(result.figures, prefix="wrote")


# --- reproduce -----------------------------------------------------------------------------

@main.command("reproduce")
@click.option("--tune", is_flag=True, help="Tune every configuration first and train with the "
                                           "tuned parameters (default: the authors' published ones).")
@click.option("--seeds", type=click.IntRange(min=1), default=20, show_default=True,
              help="Seeds per configuration (0..N-1).")
@click.option("--trials", type=click.IntRange(min=1), default=25, show_default=True,
              help="Trials per study with --tune.")
@click.option("--variance/--no-variance", default=True, show_default=True,
              help="Include the ML-100K variance experiment (Figure 2).")
@friendly_errors
def reproduce_command(tune, seeds, trials, variance) -> None:
    """Run everything end to end: download, preprocess, (tune), train, report, check.

    Resumable: rerun after an interruption and finished work is reused. Local copies of the data
    come from ATREC_COAT_SOURCE, ATREC_ML_100K_SOURCE and ATREC_YAHOO_SOURCE (Yahoo! R3 is
    skipped with a notice when absent). Exit code 4 when the check against the paper fails.
    """
    from atrec.experiments.pipeline import reproduce

    result = reproduce(tune=tune, seeds=seeds, trials=trials, variance=variance, echo=click.echo)
    click.echo("\nOutputs:")
    for label, path in result.outputs.items():
        click.echo(f"  {label:44s} {path}")
    total = sum(s for _, s, _ in result.stages)
    click.echo(f"Done in {total:.1f} s; check {'passed' if result.passed else 'FAILED'}.")
    if result.passed is False:
        sys.exit(4)


# --- tune ----------------------------------------------------------------------------------

class _TuneProgress:
    """One click progress bar per study: trials complete / requested and the best value."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar = None
        self.study = None

    def __call__(self, p) -> None:
        if not self.enabled:
            return
        if p.study != self.study:
            self.close()
            self.study = p.study
            self.bar = click.progressbar(
                length=p.target, label=p.study, file=sys.stderr, show_pos=True, show_eta=False,
                item_show_func=lambda v: None if v is None else f"best {v:.4f}")
            self.bar.__enter__()
        self.bar.update(p.complete - self.bar.pos, current_item=p.best_value)
        if p.complete >= p.target:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


@main.command("tune")
@functools.partial(_selection_options, params=False)
@click.option("--trials", type=click.IntRange(min=1), default=25, show_default=True,
              help="COMPLETE trials per study, counted over every worker sharing the storage.")
@click.option("--storage", default=None,
              help="Optuna storage URL shared by workers (sqlite:///..., postgresql://...). "
                   "Default: sqlite:///<results>/optuna.db.")
@click.option("--study-prefix", default="atrec", show_default=True,
              help="Studies are named <prefix>-<dataset>-<propensity>[-at].")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no closing message.")
@friendly_errors
def tune_command(datasets, propensities, with_at, without_at, trials, storage, study_prefix, fmt,
                 quiet) -> None:
    """Tune dim, lam (and epsilon with AT) with Optuna TPE; export the best to --params tuned.

    One study per dataset, propensity and with/without AT; objective: the lowest validation
    loss of one run on the seed-12345 split. Rerun to resume a killed study. Start the same
    command in several processes (or on several machines with one --storage) to share the
    trials. No pruning: the objective is only known when a run ends.
    Example: atrec tune --dataset coat --propensity item --with-at --trials 25
    """
    from atrec.names import TABLE_DATASETS, expand
    from atrec.propensity.registry import propensity_names
    from atrec.experiments.params import tuned_params_path
    from atrec.reporting.tables import render
    from atrec.tuning.study import TuneRequest, outcome_rows, tune

    request = TuneRequest(
        datasets=tuple(expand(datasets, TABLE_DATASETS, "dataset")),
        propensities=tuple(expand(propensities, propensity_names(), "propensity")),
        at_options=(False, True) if with_at == without_at else (with_at,),
        trials=trials, storage=storage, study_prefix=study_prefix)
    bars = _TuneProgress(enabled=not quiet and sys.stderr.isatty())
    try:
        outcomes = tune(request, progress=bars)
    finally:
        bars.close()
    click.echo(render(outcome_rows(outcomes, numeric=fmt in ("csv", "json")), fmt,
                      numparse=False))
    if not quiet:
        _echo_notes([f"best parameters merged into {tuned_params_path()} (use --params tuned)"])
