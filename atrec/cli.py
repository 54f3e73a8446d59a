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
