"""The contract of a debiasing method: a named, validated object that fits many seeds at once.

A method declares (as class attributes, readable without TensorFlow):

- ``name`` (the ``--method`` value), ``label`` (its row label) and ``description``;
- ``hyperparameters``: :class:`Hyperparameter` objects, each with its Optuna search space;
  ``dim`` and ``lam`` (PROTOCOL.md's) by default;
- ``uses_propensity``: False for a method that weights nothing by ``1 / P`` (it then runs once,
  with weights 1, whatever ``--propensity`` says); ``uses_mcar``: True for a method that reads
  MCAR labels (it is marked in the tables, as NB (true) is);
- ``reference_params``: values its authors published, ``dataset -> config key -> values``
  (the ``published`` parameter set of that method);

and implements :meth:`Method.fit`, which trains the ``R`` seeds of a :class:`FitProblem`
together (stacked replicas) and returns a :class:`MethodResult`, and :meth:`Method.learner`,
the learner that asymmetric tri-training uses as A1 and A2 (:mod:`atrec.methods.tri_training`).

This module imports no TensorFlow; :meth:`Method.fit` and :meth:`Method.learner` may.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from atrec.protocol import TrainSettings


@dataclass(frozen=True)
class Hyperparameter:
    """One hyperparameter and its search space.

    ``kind`` is ``int`` (a grid ``low, low + step, ..., high``) or ``float`` (``[low, high]``,
    log-uniform when ``log``). ``maximum`` bounds values given in a parameter file (an ``int``
    grid's default: ``4 * high``, so a hand-written file cannot ask for an absurd table);
    ``positive`` makes 0 invalid for a ``float`` (whose file range is otherwise ``[0, bound]``).
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
        """One value through an Optuna ``trial``."""
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
        """``value`` as this hyperparameter's type; ``ValueError`` naming it, the value and the
        allowed range when it is not a finite number within bounds.

        A string that reads as a number is taken as one: PyYAML reads ``1e-3`` (no dot) as a
        string, and a hand-written file should not fail for that.
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


@dataclass
class FitProblem:
    """What a method trains on: the stacked inputs of ``R`` seeds.

    ``train`` / ``val``: ``user``, ``item`` (int32), ``rating``, ``weight`` (float32, weight =
    ``1 / P`` of the chosen propensity, 1 for a method that uses none) of shape ``[R, n]``;
    ``train["calibration"]`` (``[R]``, present when the estimator gives it): the factor ``c`` of
    the calibrated propensity ``min(1, c * p)`` (:meth:`atrec.propensity.base.Propensity.calibration`);
    ``test``: ``user``, ``item``, ``rating`` ``[n]`` (the 95% MCAR slice, shared);
    ``test_full``: the whole MCAR test set (what nDCG ranks); ``splits``: the ``R`` splits
    themselves (e.g. ``split.test_prior``, the 5% MCAR slice a method that ``uses_mcar`` may
    read); ``seeds``: the split seeds, which also seed each replica's model.
    """

    num_users: int
    num_items: int
    seeds: tuple[int, ...]
    train: dict
    val: dict
    test: dict
    test_full: dict
    splits: list = field(default_factory=list)

    @property
    def replicas(self) -> int:
        return len(self.seeds)


@dataclass
class MethodResult:
    """What a fit returns, per seed (axis ``R``).

    ``mae`` / ``mse`` ``[R]``: test metrics at the selected step; ``best_step`` ``[R]`` (0-based)
    and ``best_val_loss`` ``[R]``: the selection; ``selection_trace`` ``[steps, R]``: the
    validation loss the step was selected by; ``scores`` ``[R, n_full]``: what nDCG ranks the
    full test set by (final parameters); ``traces``: name -> ``[steps, R]``, any other traces.
    """

    mae: np.ndarray
    mse: np.ndarray
    best_step: np.ndarray
    best_val_loss: np.ndarray
    selection_trace: np.ndarray
    scores: np.ndarray
    traces: dict = field(default_factory=dict)

    def select(self, keep: list[int]) -> MethodResult:
        """The result of the replicas ``keep`` (indices), in that order: the runner drops the
        filler replicas of a partial stack (:mod:`atrec.learners.layout`)."""
        idx = np.asarray(keep)
        return MethodResult(
            np.asarray(self.mae)[idx], np.asarray(self.mse)[idx],
            np.asarray(self.best_step)[idx], np.asarray(self.best_val_loss)[idx],
            np.asarray(self.selection_trace)[:, idx], np.asarray(self.scores)[idx],
            {name: np.asarray(v)[:, idx] for name, v in self.traces.items()})

    def check(self, replicas: int, n_full: int) -> None:
        """Raise ``ValueError`` naming the field whose shape breaks the contract."""
        for name in ("mae", "mse", "best_step", "best_val_loss"):
            if np.shape(getattr(self, name)) != (replicas,):
                raise ValueError(f"{name} has shape {np.shape(getattr(self, name))}, "
                                 f"expected ({replicas},)")
        if np.ndim(self.selection_trace) != 2 or np.shape(self.selection_trace)[1] != replicas:
            raise ValueError(f"selection_trace has shape {np.shape(self.selection_trace)}, "
                             f"expected (steps, {replicas})")
        if np.shape(self.scores) != (replicas, n_full):
            raise ValueError(f"scores has shape {np.shape(self.scores)}, expected "
                             f"({replicas}, {n_full})")


class Method:
    """Base class of methods (module doc). Subclasses set the class attributes and ``fit``."""

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str] = ""
    hyperparameters: ClassVar[tuple[Hyperparameter, ...]] = (DIM, LAM)
    uses_propensity: ClassVar[bool] = True
    uses_mcar: ClassVar[bool] = False
    reference_params: ClassVar[dict] = {}
    reference: ClassVar[str] = ""

    def fit(self, problem: FitProblem, params: dict,
            settings: TrainSettings) -> MethodResult:  # pragma: no cover - abstract
        """Train the ``problem.replicas`` seeds with ``params`` (name -> value)."""
        raise NotImplementedError

    def learner(self, params: dict, problem: FitProblem | None = None):
        """The learner AT trains as A1 and A2 (:class:`atrec.learners.base.Learner`); ``None``
        when the method cannot take those roles.

        ``problem`` is the :class:`FitProblem` the learner is about to train on; every caller
        that trains passes it (:meth:`LearnerMethod.fit
        <atrec.methods.learner_method.LearnerMethod.fit>`, AT's
        :func:`~atrec.methods.tri_training.fit_with_at`). A learner whose model needs
        per-replica constants from the training split (e.g. each user's mean training rating)
        builds them into its ``init`` from ``problem.train`` (arrays ``[R, n]``, replica ``k``
        = ``problem.seeds[k]``) and carries them in its parameter tuple with a zero gradient:
        Adam then leaves them unchanged, and the training loops slice them with the replicas
        they run. ``None`` when a caller only asks whether the method can take those roles.
        """
        return None

    @classmethod
    def hyperparameter(cls, name: str) -> Hyperparameter:
        for h in cls.hyperparameters:
            if h.name == name:
                return h
        raise KeyError(name)

    @classmethod
    def check_params(cls, values: dict, with_at: bool = False) -> dict:
        """``values`` validated against :attr:`hyperparameters` (plus ``epsilon`` with AT).

        Returns a new dict of exactly those names; raises ``ValueError`` naming the key, the
        value and the allowed range.
        """
        if not isinstance(values, dict):
            raise ValueError(f"parameters must map names to numbers, got {values!r}")
        wanted = cls.hyperparameters + ((EPSILON,) if with_at else ())
        out = {}
        for h in wanted:
            if h.name not in values:
                why = " (AT needs it)" if h is EPSILON else ""
                raise ValueError(f"lacks '{h.name}'{why}: give {h.allowed}")
            out[h.name] = h.check(values[h.name])
        return out


def validate_method_class(cls: type) -> None:
    """Raise ``ValueError`` naming the field when ``cls`` breaks the :class:`Method` contract."""
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise ValueError(f"{cls!r} is not a subclass of atrec.methods.base.Method")
    if not isinstance(getattr(cls, "label", None), str) or not cls.label:
        raise ValueError(f"method class {cls.__name__} lacks a non-empty 'label'")
    hps = getattr(cls, "hyperparameters", None)
    if not isinstance(hps, tuple) or not all(isinstance(h, Hyperparameter) for h in hps):
        raise ValueError(f"method class {cls.__name__}: 'hyperparameters' must be a tuple of "
                         f"Hyperparameter")
    names = [h.name for h in hps]
    if len(set(names)) != len(names) or "epsilon" in names:
        raise ValueError(f"method class {cls.__name__}: hyperparameter names must be unique "
                         f"and not 'epsilon' (AT's), got {names}")
    if "dim" not in names or "lam" not in names:
        raise ValueError(f"method class {cls.__name__}: hyperparameters must include 'dim' and "
                         f"'lam' (AT's A3 and the search space use them), got {names}")
    if cls.fit is Method.fit:
        raise ValueError(f"method class {cls.__name__} does not implement fit()")
