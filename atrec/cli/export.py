"""``atrec export``: every run as one tidy table (CSV or Parquet) for your own analysis."""

from __future__ import annotations

from pathlib import Path

import click

from atrec.cli.app import (
    check_protocol,
    echo_notes,
    expand_methods,
    friendly_errors,
    main,
    methods_option,
    protocol_option,
)
from atrec.errors import AtrecError
from atrec.reporting.export import export_runs


def _split(values) -> list[str] | None:
    """Repeated or comma-separated option values; ``all`` (or nothing) selects everything."""
    names = [p.strip() for v in values for p in str(v).split(",") if p.strip()]
    return None if not names or "all" in names else list(dict.fromkeys(names))


def _keys(name: str, protocol: str) -> list[str]:
    try:
        return expand_methods([name], protocol)
    except AtrecError:
        return [name]


@main.command("export")
@click.option("--format", "fmt", type=click.Choice(("csv", "parquet")), default="csv",
              show_default=True,
              help="csv (text; standard output unless --output) or parquet (binary: needs "
                   "--output and pyarrow, pip install -e '.[export]').")
@click.option("--dataset", "datasets", multiple=True,
              help="Datasets to keep, as their record folders are named (coat, yahoo, ...); "
                   "repeat or comma-separate. Default: all.")
@methods_option(default=None, help="Methods to keep (mf-ips, a plug-in's name, a method with "
                                   "options: dr-jl[weighting=mrdr], ...); repeat or "
                                   "comma-separate. Default: all.")
@click.option("--params", "params", multiple=True,
              help="Parameter sets to keep: published, tuned or a parameter FILE (every "
                   "protocol variant), or one variant (published+ips). Default: all.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File to write (atomically). Default for csv: standard output.")
@protocol_option
@friendly_errors
def export_command(fmt, datasets, methods, params, output, protocol) -> None:
    """Export every run as one row (protocol, dataset, method, propensity, AT, params, seed):
    its metrics, one column per hyperparameter, the protocol variant and its provenance.

    The same table as atrec.load_runs(protocol=...) in Python; records are read from
    <results>/runs (another protocol's from <results>/protocols/<name>/runs).
    """
    name = check_protocol(protocol)
    chosen = _split(methods)
    if chosen:      # each as its key; a name no method has (an uninstalled plug-in's) as given
        chosen = [k for m in chosen for k in _keys(m, name)]
    text, n = export_runs(fmt, output, None, _split(datasets), chosen, _split(params), name)
    if text is not None:
        click.echo(text, nl=False)
    else:
        echo_notes([f"{output} ({n} runs)"], prefix="wrote")
