"""A method's hyperparameters: a named, validated search-space entry each, and the three every
method shares (``dim``, ``lam``, and AT's ``epsilon``).

A :class:`Hyperparameter` is both the check a value must pass (``check``: finite, in range, of
the right kind, with a message naming the bad value) and the Optuna search space the tuner
draws from, so a method declares each once. Re-exported by :mod:`atrec.methods.base`, where
plug-ins import them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Hyperparameter:
    """One hyperparameter and its search space.

    Attributes
    ----------
    name : str
        Its key in parameter files, records and Optuna trials.
    kind : str
        ``int`` (a grid ``low, low + step, ..., high``) or ``float`` (``[low, high]``).
    low, high : float
        The search space's ends.
    step : int or None
        The ``int`` grid's step (default 1).
    log : bool
        Sample a ``float`` log-uniformly.
    help : str
        One line for ``atrec methods`` and the reference pages.
    maximum : float or None
        The largest value a parameter file may give (an ``int`` grid's default: ``4 * high``,
        so a hand-written file cannot ask for an absurd table).
    positive : bool
        Makes 0 invalid for a ``float`` (whose file range is otherwise ``[0, bound]``).
    default : float, str or None
        The value a parameter set that lacks it takes: a number, or the name of another
        hyperparameter whose value it takes (an imputation model's ``imp_lr`` defaults to the
        predictor's ``lr``); ``None`` (every hyperparameter of a method's own list): required.
        A hyperparameter that only some form of a method has (a binary method's
        ``corrected_hyperparameters``) has one, so that parameter sets written before it
        existed keep working.

    Raises
    ------
    ValueError
        When ``kind`` is not ``int`` or ``float``, ``low >= high``, or ``low <= 0`` on a log
        scale.
    """

    name: str
    kind: str
    low: float
    high: float
    step: int | None = None
    log: bool = False
    help: str = ""
    maximum: float | None = None
    positive: bool = False
    default: float | str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("int", "float"):
            raise ValueError(f"hyperparameter {self.name}: kind must be 'int' or 'float', "
                             f"got {self.kind!r}")
        if not self.low < self.high or (self.log and not self.low > 0):
            raise ValueError(f"hyperparameter {self.name}: range [{self.low}, {self.high}] must "
                             f"have low < high (and low > 0 on a log scale)")

    @property
    def bound(self) -> float:
        """The largest value accepted from a parameter file."""
        if self.maximum is not None:
            return self.maximum
        return 4 * self.high if self.kind == "int" else math.inf

    def suggest(self, trial):
        """Sample one value of this hyperparameter.

        Parameters
        ----------
        trial : optuna.trial.Trial
            The trial that samples it (under :attr:`name`).

        Returns
        -------
        int or float
            The sampled value.
        """
        if self.kind == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high),
                                     step=self.step or 1)
        return trial.suggest_float(self.name, self.low, self.high, log=self.log)

    @property
    def allowed(self) -> str:
        """The values a parameter file may give, in words (``an integer in 1..1024``)."""
        if self.kind == "int":
            return f"an integer in 1..{int(self.bound)}"
        return f"a number in {'(' if self.positive else '['}0, {self.bound:g}]"

    def check(self, value):
        """A value from a parameter file, checked and converted to this hyperparameter's type.

        A string that reads as a number is taken as one: PyYAML reads ``1e-3`` (no dot) as a
        string, and a hand-written file should not fail for that.

        Parameters
        ----------
        value : object
            The value as read.

        Returns
        -------
        int or float
            ``int`` for an ``int`` hyperparameter, else ``float``.

        Raises
        ------
        ValueError
            Naming the hyperparameter, the value and the allowed range, when the value is not
            a finite number within bounds (or not a whole number for an ``int``).
        """
        shown = f"{value!r:.60}"
        number = value
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                pass
        if isinstance(number, bool) or not isinstance(number, (int, float, np.integer,
                                                                 np.floating)):
            raise ValueError(f"{self.name} must be {self.allowed}, got {shown}")
        number = float(number)
        if not math.isfinite(number):
            raise ValueError(f"{self.name} must be {self.allowed} (finite), got {shown}")
        if self.kind == "int":
            if int(number) != number or not 1 <= number <= self.bound:
                raise ValueError(f"{self.name} must be {self.allowed}, got {shown}")
            return int(number)
        if not (0 < number if self.positive else 0 <= number) or number > self.bound:
            raise ValueError(f"{self.name} must be {self.allowed}, got {shown}")
        return number

    def describe(self) -> str:
        """The search space in words: ``int 5..50 step 5`` or ``float [1e-06, 1] log``."""
        if self.kind == "int":
            return f"int {int(self.low)}..{int(self.high)} step {self.step or 1}"
        return f"float [{self.low:g}, {self.high:g}]{' log' if self.log else ''}"

    def as_dict(self) -> dict:
        return {"kind": self.kind, "low": self.low, "high": self.high, "step": self.step,
                "log": self.log}


DIM = Hyperparameter("dim", "int", 5, 50, step=5, help="embedding size", maximum=1024)
LAM = Hyperparameter("lam", "float", 1e-6, 1.0, log=True, maximum=1e6,
                     help="L2 weight over the whole tables")
EPSILON = Hyperparameter("epsilon", "float", 1e-3, 1.0, log=True, maximum=5.0, positive=True,
                         help="AT: largest |A1 - A2| of a pseudo-label")
