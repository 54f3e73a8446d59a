"""``atrec report``, ``atrec check`` and ``atrec methods``: what the results and the
registries hold."""

from __future__ import annotations

import json
import sys

import click

from atrec.cli.app import (
    FORMATS,
    check_protocol,
    echo_notes,
    expand_methods,
    friendly_errors,
    main,
    methods_option,
    one_method,
    protocol_option,
    protocol_root,
    table_datasets,
)
from atrec.errors import AtrecError
from atrec.limits import MAX_SEEDS
from atrec.methods.catalogue import binary_rows, catalogue_rows
from atrec.reporting.catalogue import details_text, summary_text
from atrec.paths import require_writable
from atrec.protocols import get_protocol
from atrec.reporting.benchmark_render import benchmark_report
from atrec.reporting.check import check, render_check
from atrec.reporting.protocol_gap_report import gap_reports
from atrec.reporting.protocols import protocol_rows
from atrec.reporting.truth_alpha import alpha_report
from atrec.reporting.tuning_spread import spread_report
from atrec.reporting.report import report
from atrec.reporting.tables import render
from atrec.params.lookup import DEFAULT_PARAMS


@main.command("report")
@click.option("--dataset", "datasets", multiple=True,
              help="yahoo, coat or all (repeat or comma-separate). Default: those with results.")
@click.option("--table", type=click.Choice(("paper", "benchmark", "protocol-gap",
                                            "truth-alpha", "tuning-spread")),
              default=None,
              help="Default: paper under saito2020, benchmark under any other protocol. "
                   "paper: Table 1's layout for one method (with tests, claims, figures); "
                   "benchmark: every method x propensity, w/o and w/ AT, with paired tests "
                   "against MF-IPS (Holm; MF under a binary protocol); protocol-gap: each "
                   "binary method's metrics and ranks under binary-icde24 beside "
                   "binary-clean and on the semi-synthetic truth, and which beat MF (reads "
                   "them all; --protocol is ignored); truth-alpha: the methods' truth AUC and "
                   "nDCG@5 under binary-truth at each alpha of the MNAR mechanism, and its "
                   "figure; tuning-spread: each split's best value and values from 'atrec "
                   "tune --splits N' under --protocol, the one exported, and the spread.")
@methods_option(default=None, help="With --table paper: the method shown (default mf-ips). "
                                   "With --table benchmark: the methods compared (default: all "
                                   "with results). Comma-separate or repeat; 'all'.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format of every table.")
@click.option("--std", is_flag=True, help="Add the seed-to-seed sd to each cell (0.873 ± 0.004).")
@click.option("--ndcg", type=click.Choice(("paper", "standard", "both")), default=None,
              help="nDCG@3 variant: the paper's formula, the standard one, or both "
                   "(default: paper for --table paper, both for --table benchmark).")
@click.option("--compare", type=click.Choice(("paper",)), default=None,
              help="Show the published value and the difference beside each cell.")
@click.option("--stats", is_flag=True, help="Add the data statistics table.")
@click.option("--claims/--no-claims", default=True, show_default=True,
              help="Evaluate the paper's claims on these results.")
@click.option("--significance/--no-significance", default=True, show_default=True,
              help="Paired t and Wilcoxon tests of w/ vs w/o AT, Holm-corrected.")
@click.option("--figures/--no-figures", default=True, show_default=True,
              help="Write figures 1, 3 and 4 (PNG and PDF) under <results>/figures.")
@click.option("--params", default=None,
              help="Parameter set of the results: published, tuned-atrec, reference, tuned, or "
                   "a parameter FILE; add +ips / +per-seed for runs trained with --loss ips / "
                   "--batch-seed per-seed (e.g. published+ips). With --table benchmark, several "
                   "comma-separated: each method from the first that has its results (default "
                   f"{DEFAULT_PARAMS}; --table paper: published).")
@click.option("--expected-seeds", type=click.IntRange(1, MAX_SEEDS), default=None,
              help="Seeds of a complete cell; cells with fewer are reported with a warning. "
                   "Default: the protocol's (saito2020: 20, ijcai2022: 10).")
@protocol_option
@friendly_errors
def report_command(datasets, table, methods, fmt, std, ndcg, compare, stats, claims,
                   significance, figures, params, expected_seeds, protocol) -> None:
    """Print Table 1 of the paper from your results, with tests, statistics and claims, or the
    benchmark table of every method (--table benchmark).

    Results are read from <results>/runs (./results or $ATREC_RESULTS_DIR); notices and the
    paths of the figures written go to standard error.
    """
    chosen = get_protocol(check_protocol(protocol))   # resolved once for the command
    if table is None:     # the protocol's own table: the paper's Table 1 exists for saito2020
        table = "paper" if chosen.shared_sets else "benchmark"
    if table == "protocol-gap":
        if figures:
            require_writable("results")
        for out in gap_reports(table_datasets(datasets) or None, fmt, figures, expected_seeds):
            click.echo(out.text)
            echo_notes(out.notices)
            echo_notes(out.figures, prefix="wrote")
        return
    if table == "truth-alpha":
        if figures:
            require_writable("results")
        out = alpha_report(fmt=fmt, figures=figures)
        click.echo(out.text)
        echo_notes(out.notices)
        echo_notes(out.figures, prefix="wrote")
        return
    if table == "tuning-spread":
        out = spread_report(chosen.name, table_datasets(datasets) or None, fmt)
        if out.text:
            click.echo(out.text)
        echo_notes(out.notices)
        return
    root = protocol_root(chosen)
    expected_seeds = expected_seeds or chosen.seeds
    if root is not None and table == "paper":
        raise AtrecError(f"--table paper is the paper's Table 1 (protocol saito2020): use "
                         f"'atrec report --protocol {protocol} --table benchmark'")
    if figures and table == "paper":
        require_writable("results")  # checked before the tables are computed, not at the end
    if table == "benchmark":
        default = chosen.default_params
        out = benchmark_report(root=root, datasets=table_datasets(datasets),
                               params=params or default, fmt=fmt,
                               std=std, ndcg=ndcg or "both", expected_seeds=expected_seeds,
                               methods=expand_methods(methods, chosen) if methods else None,
                               protocol=None if root is None else chosen.name)
        click.echo(out.text)
        echo_notes(out.notices)
        return
    out = report(datasets=table_datasets(datasets), fmt=fmt, std=std, ndcg=ndcg or "paper",
                 compare=compare,
                 stats=stats, claims=claims, significance=significance, figures=figures,
                 params=params or "published", expected_seeds=expected_seeds,
                 method=one_method(methods) if methods else "mf-ips")
    click.echo(out.text)
    echo_notes(out.notices)
    echo_notes(out.figures, prefix="wrote")


@main.command("check")
@click.option("--dataset", "datasets", multiple=True,
              help="yahoo, coat or all (repeat or comma-separate). Default: those with results.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format of the pass/fail tables.")
@click.option("--params", default=DEFAULT_PARAMS, show_default=True,
              help="Parameter set of the results: published, tuned-atrec, reference, tuned, or "
                   "a parameter FILE; add +ips / +per-seed for runs trained with --loss ips / "
                   "--batch-seed per-seed (e.g. published+ips); several comma-separated: each "
                   "configuration from the first that has its results (the default: the sets "
                   "'atrec train' reads, so MF-IPS is checked with the published values).")
@methods_option(help="The method whose results are compared with the paper's Table 1 "
                     "(default mf-ips, the paper's).")
@click.option("--allow-missing", is_flag=True,
              help="Cells and claims without results do not fail the check.")
@click.option("--expected-seeds", type=click.IntRange(1, MAX_SEEDS), default=None,
              help="Seeds of a complete cell; cells with fewer are reported with a warning. "
                   "Default: the protocol's (saito2020: 20, ijcai2022: 10).")
@protocol_option
@friendly_errors
def check_command(datasets, fmt, params, methods, allow_missing, expected_seeds,
                  protocol) -> None:
    """Regression gate: compare your results with the published Table 1 and the paper's claims.

    Exit code 0 only when every selected cell is within tolerance and every gating claim holds;
    4 otherwise (tolerances and gating claims: see 'atrec.reporting.check'); 3 when there are
    no results to check.
    """
    chosen = get_protocol(check_protocol(protocol))   # resolved once for the command
    if protocol_root(chosen) is not None:
        raise AtrecError(f"protocol '{protocol}' has no published table to check against (the "
                         f"check holds saito2020's Table 1): use 'atrec report --protocol "
                         f"{protocol} --table benchmark'")
    result = check(None, table_datasets(datasets), params, allow_missing=allow_missing,
                   expected_seeds=expected_seeds or chosen.seeds, method=one_method(methods))
    click.echo(render_check(result, fmt))
    echo_notes(result.notices)
    if not result.passed:
        sys.exit(result.exit_code)




@main.command("methods")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--method", "method", default=None, metavar="NAME",
              help="Every detail of one method (an old name or NAME[KEY=VALUE] too): its "
                   "options and their meanings, hyperparameters, reference, the names it had.")
@click.option("--verbose", "-v", is_flag=True, help="Every detail of every method.")
@friendly_errors
def methods_command(fmt, method, verbose) -> None:
    """List every registered method (1-5 star, then binary) with its options, the propensity
    estimators and the protocols, in tables that fit a terminal; --method NAME or -v for the
    details (hyperparameters and search spaces, options and what each value means, where each
    comes from: built-in, or the package that plugs it in).

    Broken plug-ins are named on standard error with what to do; atrec keeps working.
    """
    methods, propensities, problems = catalogue_rows()
    binary, broken = binary_rows()
    protocols, more = protocol_rows()
    problems = problems + broken + more
    if fmt == "json":
        click.echo(json.dumps({"methods": methods, "binary_methods": binary,
                               "propensities": propensities, "protocols": protocols,
                               "problems": problems}, indent=1))
    elif method or verbose:
        click.echo(details_text(method))
    elif fmt == "table":
        click.echo(summary_text())
    else:
        click.echo(render(methods, fmt, numparse=False))
        click.echo("")
        click.echo(render(binary, fmt, numparse=False))
        click.echo("")
        click.echo(render(propensities, fmt, numparse=False))
        click.echo("")
        click.echo(render(protocols, fmt, numparse=False))
    echo_notes(problems, prefix="warning")
