"""The ``atrec`` command group and what its commands share: one-line errors, the option
vocabulary (``--dataset``, ``--method``, ``--propensity``, ``--with-at/--without-at``,
``--params``, ``--seeds``, ``--format``) and the expansion of their values into registered names.
"""

from __future__ import annotations

import functools
import sys

import click

from atrec._version import __version__
from atrec.errors import AtrecError
from atrec.methods import registry as method_registry
from atrec.methods.registry import expand_methods as _expand_methods
from atrec.methods.registry import method_class
from atrec.names import TABLE_DATASETS, expand
from atrec.propensity.registry import (
    PROPENSITIES,
    builtin_propensity_names,
    propensity_names,
    table1_propensities,
)
from atrec.protocols import PROTOCOLS, Protocol, get_protocol
from atrec.params.lookup import DEFAULT_PARAMS, NAMED_SETS, SET_HELP
from atrec.runtime import gcfreeze

FORMATS = ("table", "markdown", "latex", "csv", "json")
METHOD_HELP = ("mf-ips (the paper's), any registered method ('atrec methods' lists them) or all; "
               "repeat or comma-separate for several. Options in brackets: "
               "escm2-dr[form=coded].")
OPTION_HELP = ("Set a method option, KEY=VALUE (form=coded), on every selected method that has "
               "it; KEY=all: each of its values. Repeat for several; the same as "
               "NAME[KEY=VALUE] in --method.")
_OPTIONS_META = "atrec.method_options"   # where --option's values wait for expand_methods


def friendly_errors(func):
    """Turn library errors into one line and an exit code; never a traceback for bad input."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except AtrecError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            # a run stopped by Ctrl-C says what it saved (atrec.experiments.interrupt)
            what = str(exc) or "finished runs are saved; run the same command again to resume"
            click.echo(f"interrupted: {what}", err=True)
            sys.exit(130)

    return wrapper


class OneLineGroup(click.Group):
    """A click group whose usage errors are one line too (``error: ... (see 'atrec X --help')``),
    like library errors, instead of click's three lines of usage, hint and message."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        gcfreeze.request()   # a process of its own: TensorFlow's objects skip the collector
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
                exc.show()  # a bare 'atrec' asks for the help text
            else:
                where = exc.ctx.command_path if exc.ctx else "atrec"
                click.echo(f"error: {exc.format_message().rstrip('.')}; see '{where} --help'",
                           err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="atrec")
def main() -> None:
    """Reproduce and benchmark asymmetric tri-training (Saito, SIGIR 2020) on MNAR ratings.

    Typical use: atrec download coat; atrec preprocess coat;
    atrec run --dataset coat --propensity item --with-at; atrec report.
    """


def table_datasets(values: tuple[str, ...]) -> list[str] | None:
    """``--dataset`` values of report/check (yahoo, coat, all); ``None`` when none were given."""
    return expand(values, TABLE_DATASETS, "dataset") or None


def _keep_options(ctx, _param, value):
    ctx.meta[_OPTIONS_META] = tuple(value or ())


def methods_option(default: str | None = "mf-ips", help: str = METHOD_HELP):
    """``--method`` and ``--option KEY=VALUE``, the same on every command that selects results
    or runs (``--option`` is read by :func:`expand_methods`)."""
    method = click.option("--method", "methods", multiple=True,
                          default=(default,) if default else (), show_default=bool(default),
                          help=help)
    option = click.option("--option", "method_options", multiple=True, metavar="KEY=VALUE",
                          expose_value=False, callback=_keep_options, help=OPTION_HELP)
    return lambda func: method(option(func))


def expand_methods(values, protocol: str | None = None) -> list[str]:
    """``--method`` values as method keys (:func:`atrec.methods.registry.expand_methods`:
    ``all`` = every registered one) of the methods ``protocol`` runs (a binary protocol's are
    its own), with this command's ``--option`` values applied."""
    ctx = click.get_current_context(silent=True)
    assignments = ctx.meta.get(_OPTIONS_META, ()) if ctx is not None else ()
    return _expand_methods(values, protocol, assignments)


def at_options(with_at: bool, without_at: bool) -> list[bool]:
    """The AT settings ``--with-at`` / ``--without-at`` select, the same under every protocol:
    one flag, its setting; both or neither, both (without AT first)."""
    return [False, True] if with_at == without_at else [with_at]


def at_notice(methods: list[str], ats: list[bool], protocol: str | None = None) -> None:
    """One line naming the selected methods that cannot serve in AT under ``protocol`` when AT
    is asked for: they run without AT only (:func:`atrec.methods.registry.at_skipped`)."""
    alone = method_registry.at_skipped(methods, ats, protocol)
    if alone and len(alone) < len(methods):
        one = len(alone) == 1
        what = ((f"{'it runs' if one else 'they run'} without AT only") if False in ats else
                f"{'it is' if one else 'they are'} left out (only --with-at was given)")
        click.echo(f"note: {', '.join(alone)} cannot serve in AT (as A1 and A2) under protocol "
                   f"'{protocol}': {what}", err=True)


def one_method(values) -> str:
    """The single method a Table-1 layout shows; several are refused with what to do."""
    names = expand_methods(values)
    if len(names) != 1:
        raise AtrecError(f"--method {','.join(names)}: Table 1 and the check show one method; "
                         f"give one, or use 'atrec report --table benchmark' to compare methods")
    return names[0]


def echo_notes(notes, prefix: str = "note") -> None:
    for note in notes:
        click.echo(f"{prefix}: {note}", err=True)



def propensity_notice(methods: list[str], protocol: str | None = None) -> None:
    """One line when ``--propensity`` was given and a selected method uses none (CausE, DAMF):
    a notice rather than an error, because ``--method mf-ips,cause --propensity item`` is a
    valid selection in which the option applies to one method and not to the other."""
    from click.core import ParameterSource  # click's own, loaded with click

    ctx = click.get_current_context()
    if ctx.get_parameter_source("propensities") in (ParameterSource.DEFAULT, None):
        return
    unused = [m for m in methods if not method_class(m, protocol).uses_propensity]
    given = ",".join(ctx.params["propensities"])
    own = [m for m in unused if getattr(method_class(m, protocol), "own_propensity", False)]
    none = [m for m in unused if m not in own]
    if own:
        click.echo(f"note: {', '.join(own)} weight{'s' if len(own) == 1 else ''} by "
                   f"{'its' if len(own) == 1 else 'their'} own propensity (learned in the run): "
                   f"--propensity {given} does not apply to {'it' if len(own) == 1 else 'them'}"
                   f" (trained once)", err=True)
    if none:
        click.echo(f"note: {', '.join(none)} use{'s' if len(none) == 1 else ''} no "
                   f"propensity: --propensity {given} does not apply to "
                   f"{'it' if len(none) == 1 else 'them'} (trained once, unweighted)", err=True)


def expand_propensities(values) -> list[str]:
    """``--propensity`` values as selectable registered estimators. ``all`` is the paper's six
    (Table 1's rows, which every parameter set covers); other estimators are named."""
    return PROPENSITIES.expand(values, propensity_names(), every=table1_propensities())


def params_help() -> str:
    """``--params``'s help, one phrase per named set of :data:`atrec.params.lookup.NAMED_SETS`
    (so a new set is listed once it is named there)."""
    sets = "; ".join(f"{name} ({SET_HELP[name]})" for name in NAMED_SETS)
    defaults = "; ".join(
        f"{name}'s: {DEFAULT_PARAMS if k == 0 else ','.join(get_protocol(name).param_sets)}"
        for k, name in enumerate(PROTOCOLS.names()))
    return (f"A named parameter set: {sets}; or a YAML parameter file; several comma-separated: "
            f"each configuration from the first that has its values (default {defaults}).")


def protocol_option(func):
    """``--protocol``, the same on every command that trains or reads results."""
    return click.option(
        "--protocol", default="saito2020", show_default=True,
        help="The experimental protocol: saito2020 (the paper's) or any registered one "
             "('atrec methods' lists them, e.g. ijcai2022). Its records live apart: "
             "<results>/protocols/<name> for any but saito2020.")(func)


def check_protocol(name: str) -> str:
    """``--protocol``'s value as a registered protocol name (one-line error otherwise)."""
    return PROTOCOLS.entry(name.strip().lower()).name


def protocol_root(name):
    """The results folder ``--protocol`` (a name or a resolved protocol) reads: ``None`` (the
    results folder itself) for a protocol with ``legacy_names`` (saito2020)."""
    protocol = name if isinstance(name, Protocol) else get_protocol(check_protocol(name))
    return None if protocol.legacy_names else protocol.results_root()


def selection_options(func, params: bool = True):
    """The options shared by ``train``, ``run`` and ``tune`` (``tune`` without ``--params``)."""
    options = [
        click.option("--dataset", "datasets", multiple=True, default=("coat",), show_default=True,
                     help="coat, yahoo or all; repeat or comma-separate for several."),
        methods_option(),
        click.option("--propensity", "propensities", multiple=True, default=("all",),
                     show_default=True,
                     help=f"{', '.join(builtin_propensity_names())}, any plug-in's ('atrec "
                          f"methods' lists them), or all (the paper's six). A method that uses "
                          f"no propensity runs once."),
        click.option("--with-at", "with_at", is_flag=True,
                     help="Train the method inside asymmetric tri-training (as A1 and A2)."),
        click.option("--without-at", "without_at", is_flag=True,
                     help="Train the method alone. Give both flags (or neither) for both."),
        click.option("--params", default=None, help=params_help()),
    ]
    if not params:
        options = options[:-1]  # tune makes parameters rather than taking them
    for option in reversed(options):
        func = option(func)
    return protocol_option(func)



SCHEDULER_OPTION = click.option(
    "--scheduler", default=None, metavar="ADDRESS",
    help="Train the groups of seeds on a Dask cluster: a scheduler address (tcp://HOST:8786) or "
         "local:N (N worker processes here). This process writes every record; workers need "
         "no data or results folder. Needs the dask extra.")

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
    SCHEDULER_OPTION,
    click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True),
    click.option("--quiet", "-q", is_flag=True, help="No progress lines."),
]


def run_opts(func):
    for option in reversed(_run_options):
        func = option(func)
    return func


class TuneProgress:
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
