"""The ``atrec`` command line: a thin shell over the library.

Each command parses options, calls one library function and formats its result. Library errors
(:class:`atrec.errors.AtrecError`) become one line on standard error and a non-zero exit code;
Ctrl-C exits with 130 after saying that a rerun resumes. The heavy packages (TensorFlow,
Optuna, SciPy, matplotlib, pandas) are imported by the library calls that use them, so
``atrec --help`` loads none of them. Exit codes: ``docs/configuration.md``.

Shared vocabulary (the same option means the same thing everywhere): ``--dataset``,
``--propensity``, ``--with-at/--without-at``, ``--seeds``, ``--params``, ``--storage``,
``--format``, ``--quiet``, ``--force``.
"""

from atrec.cli import (  # noqa: E402, F401  (commands)
    data, experiments, export, results, semisynthetic, training,
)
from atrec.cli.app import main  # noqa: E402

__all__ = ["main"]
