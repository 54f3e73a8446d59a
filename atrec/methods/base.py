"""The contract of a debiasing method: a named, validated object that fits many seeds at once.

A method declares what it is as class attributes, readable without TensorFlow (name, label,
hyperparameters with their search spaces, what it uses: :class:`Method`), and implements
:meth:`Method.fit`, which trains the ``R`` seeds of a :class:`FitProblem` together (stacked
replicas) and returns a :class:`MethodResult`, and :meth:`Method.learner`, the learner that
asymmetric tri-training uses as A1 and A2 (:mod:`atrec.methods.tri_training`). Declaring
everything up front lets ``atrec methods``, the tuner and the parameter-file checks work
without loading TensorFlow; :meth:`Method.fit` and :meth:`Method.learner` may load it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from atrec.methods.hyperparameters import DIM, EPSILON, LAM, Hyperparameter
from atrec.methods.options import Option, resolve_options, validate_options
from atrec.run_settings import TrainSettings

__all__ = ["DIM", "EPSILON", "LAM", "FitProblem", "Hyperparameter", "Method", "MethodResult",
           "Option", "validate_method_class"]


@dataclass
class FitProblem:
    """What a method trains on: the stacked inputs of ``R`` seeds.

    Attributes
    ----------
    num_users, num_items : int
        The table sizes.
    seeds : tuple of int
        The ``R`` split seeds, which also seed each replica's model.
    train, val : dict
        ``user``, ``item`` (int32), ``rating``, ``weight`` (float32; ``1 / P`` of the chosen
        propensity, 1 for a method that uses none), each ``[R, n]``; ``train["calibration"]``
        (``[R]``, present when the estimator gives it) is the factor ``c`` of the calibrated
        propensity ``min(1, c * p)``
        (:meth:`atrec.propensity.base.Propensity.estimate_with_calibration`).
    test : dict
        ``user``, ``item``, ``rating``, each ``[n]``: the 95% MCAR slice, shared by the seeds.
    test_full : dict
        The whole MCAR test set, as ``test``: what nDCG ranks.
    splits : list of Split
        The ``R`` splits themselves (e.g. ``split.test_prior``, the 5% MCAR slice that a
        method with ``uses_mcar`` may read).
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

    Attributes
    ----------
    mae, mse : numpy.ndarray
        ``[R]``: the test metrics at the selected step.
    best_step : numpy.ndarray
        ``[R]``: the selected step, 0-based.
    best_val_loss : numpy.ndarray
        ``[R]``: the validation loss at that step.
    selection_trace : numpy.ndarray
        ``[steps, R]``: the validation loss the step was selected by.
    scores : numpy.ndarray
        ``[R, n_full]``: what nDCG ranks the full test set by (final parameters).
    traces : dict
        Name -> ``[steps, R]``: any other traces (stored in the records).
    diagnostics : dict
        Name -> ``[R, ...]``: what a fit reports about itself for the failed-fit rules
        (a binary method's ``val_scores``, its probabilities on the validation pairs).
    nuisance : list of dict
        Per replica, the diagnostics of the fit's nuisance models (a learned propensity, an
        imputation model) and the ``flags`` that say one is degenerate
        (:mod:`atrec.methods.binary.nuisance`); empty for a method that has none. Stored in
        the record as ``nuisance``.
    """

    mae: np.ndarray
    mse: np.ndarray
    best_step: np.ndarray
    best_val_loss: np.ndarray
    selection_trace: np.ndarray
    scores: np.ndarray
    traces: dict = field(default_factory=dict)
    diagnostics: dict = field(default_factory=dict)
    nuisance: list = field(default_factory=list)

    def select(self, keep: list[int]) -> MethodResult:
        """The result of some replicas, in the order given: the runner drops the filler
        replicas of a partial stack (:mod:`atrec.learners.layout`).

        Parameters
        ----------
        keep : list of int
            Replica indices.

        Returns
        -------
        MethodResult
            Every field restricted to those replicas.
        """
        idx = np.asarray(keep)
        return MethodResult(
            np.asarray(self.mae)[idx], np.asarray(self.mse)[idx],
            np.asarray(self.best_step)[idx], np.asarray(self.best_val_loss)[idx],
            np.asarray(self.selection_trace)[:, idx], np.asarray(self.scores)[idx],
            {name: np.asarray(v)[:, idx] for name, v in self.traces.items()},
            {name: np.asarray(v)[idx] for name, v in self.diagnostics.items()},
            [self.nuisance[i] for i in keep] if self.nuisance else [])

    def check(self, replicas: int, n_full: int) -> None:
        """Check every field's shape against the contract.

        Parameters
        ----------
        replicas : int
            ``R``, the number of seeds fitted.
        n_full : int
            The size of the full MCAR test set.

        Raises
        ------
        ValueError
            Naming the first field whose shape is wrong, with its shape and the expected one.
        """
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
    """Base class of methods (module doc). Subclasses set the class attributes and ``fit``.

    Attributes
    ----------
    name : str
        The ``--method`` value: lowercase letters, digits and ``-``.
    label : str
        Its row label in tables.
    description : str
        One line for ``atrec methods``.
    hyperparameters : tuple of Hyperparameter
        Its hyperparameters and search spaces; ``dim`` and ``lam`` (:data:`DIM`, :data:`LAM`)
        must be among them.
    uses_propensity : bool
        False for a method that weights nothing by ``1 / P``: it then runs once, with
        weights 1, whatever ``--propensity`` says.
    uses_mcar : bool
        True for a method that reads MCAR labels; tables mark it.
    reference_params : dict
        Values its authors published: ``dataset -> "<name>/<propensity>[-at]" -> values``.
    reference : str
        Where the method comes from (paper, code).
    serves_in_at : bool
        True for a method whose :meth:`learner` can serve as A1 and A2 of asymmetric
        tri-training (``--with-at``); False by default, True for every
        :class:`~atrec.methods.learner_method.LearnerMethod`.
    options : tuple of Option
        The choices that change what it computes without being tuned
        (:mod:`atrec.methods.options`): ``name[key=value]`` on the command line, ``+key=value``
        in its folders and keys. An instance holds its values in ``self.option_values``.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str] = ""
    hyperparameters: ClassVar[tuple[Hyperparameter, ...]] = (DIM, LAM)
    uses_propensity: ClassVar[bool] = True
    uses_mcar: ClassVar[bool] = False
    reference_params: ClassVar[dict] = {}
    reference: ClassVar[str] = ""
    serves_in_at: ClassVar[bool] = False
    options: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, **options) -> None:
        """A method with ``options`` (name -> value, checked); an option not given takes its
        default, or, when its default is the protocol's, stays unset (the protocol decides
        at fit time)."""
        given = {k: v for k, v in options.items() if v is not None}
        resolved = resolve_options(type(self), given, default_form="")
        self.option_values = {o.name: resolved[o.name] for o in self.options
                              if o.name in given or o.default is not None}

    def fit(self, problem: FitProblem, params: dict,
            settings: TrainSettings) -> MethodResult:  # pragma: no cover - abstract
        """Train every seed of a problem together.

        Parameters
        ----------
        problem : FitProblem
            The stacked inputs of ``R`` seeds.
        params : dict
            Hyperparameter name -> value, checked by :meth:`check_params`.
        settings : atrec.run_settings.TrainSettings
            The protocol's schedule (steps, batch size, learning rate, loss, batch seed).

        Returns
        -------
        MethodResult
            Per-seed metrics, selection and scores.
        """
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
        they run. A method that gives one declares ``serves_in_at = True``.

        Parameters
        ----------
        params : dict
            Hyperparameter name -> value.
        problem : FitProblem, optional
            The problem the learner will train on.

        Returns
        -------
        atrec.learners.base.Learner or None
            The learner, or None for a method that cannot serve inside AT.
        """
        return None

    @classmethod
    def hyperparameter(cls, name: str, form: str | None = None) -> Hyperparameter:
        for h in cls.hyperparameters_for(form):
            if h.name == name:
                return h
        raise KeyError(name)

    @classmethod
    def hyperparameters_for(cls, form: str | None = None) -> tuple[Hyperparameter, ...]:
        """The hyperparameters of the method run in ``form`` (a binary method's ``coded`` or
        ``corrected``; ``None`` outside the binary protocols): :attr:`hyperparameters`, the
        same in every form unless a subclass says otherwise
        (:meth:`atrec.methods.binary.base.BinaryMethod.hyperparameters_for`)."""
        return cls.hyperparameters

    @classmethod
    def check_params(cls, values: dict, with_at: bool = False, form: str | None = None) -> dict:
        """Validate a parameter set against :meth:`hyperparameters_for` ``form`` (plus
        ``epsilon`` with AT).

        Parameters
        ----------
        values : dict
            Name -> value, as read from a parameter file or a study.
        with_at : bool
            Whether AT's ``epsilon`` is required too.
        form : str, optional
            The form the method runs in (its hyperparameters may differ by form).

        Returns
        -------
        dict
            A new dict of exactly those names, each value converted by
            :meth:`Hyperparameter.check`; a hyperparameter that has a ``default`` and is not
            given takes it (a number, or the value of the hyperparameter it names).

        Raises
        ------
        ValueError
            Naming the missing key, or the key, the value and the allowed range, or a key the
            method does not take (a typo such as ``dimm`` would otherwise be dropped and the
            run go on without the value meant).
        """
        if not isinstance(values, dict):
            raise ValueError(f"parameters must map names to numbers, got {values!r}")
        wanted = cls.hyperparameters_for(form) + ((EPSILON,) if with_at else ())
        names = [h.name for h in wanted]
        other_forms = {h.name for h in cls.every_hyperparameter()} - set(names)
        for key in values:
            if key not in names:
                why = (" (AT's threshold: give it only with AT, in a '-at' entry)"
                       if key == EPSILON.name else
                       f" (a hyperparameter of another form than {form}: leave it out, or run "
                       f"that form)" if key in other_forms else "")
                raise ValueError(f"unknown hyperparameter '{key}'{why}: {cls.name}"
                                 f"{' with AT' if with_at else ''} takes {', '.join(names)}")
        out = {}
        for h in wanted:
            if h.name not in values and h.default is None:
                why = " (AT needs it)" if h is EPSILON else ""
                raise ValueError(f"lacks '{h.name}'{why}: give {h.allowed}")
            if h.name in values:
                out[h.name] = h.check(values[h.name])
        for h in wanted:     # the defaults last: one may name another hyperparameter's value
            if h.name not in out:
                out[h.name] = h.check(out[h.default] if isinstance(h.default, str)
                                      else h.default)
        return out

    @classmethod
    def every_hyperparameter(cls) -> tuple[Hyperparameter, ...]:
        """The hyperparameters of every form, each once (:meth:`hyperparameters_for`)."""
        return cls.hyperparameters


def validate_method_class(cls: type) -> None:
    """Check a class against the :class:`Method` contract (what the registry runs on it).

    Parameters
    ----------
    cls : type
        The candidate class.

    Raises
    ------
    ValueError
        Naming the field when ``cls`` is not a :class:`Method`, lacks a ``label``, declares
        bad or duplicate hyperparameters (or lacks ``dim`` and ``lam``), or does not
        implement ``fit``.
    """
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
    every = cls.every_hyperparameter()
    if len({h.name for h in every}) != len(every) or not all(
            isinstance(h, Hyperparameter) for h in every):
        raise ValueError(f"method class {cls.__name__}: the hyperparameters of its forms must "
                         f"be Hyperparameter, each name once, got {[h.name for h in every]}")
    for h in every:
        if isinstance(h.default, str) and h.default not in names:
            raise ValueError(f"method class {cls.__name__}: hyperparameter {h.name} defaults "
                             f"to '{h.default}', which is not one of {names}")
    if cls.fit is Method.fit:
        raise ValueError(f"method class {cls.__name__} does not implement fit()")
    validate_options(cls)
    if not isinstance(getattr(cls, "serves_in_at", None), bool):
        raise ValueError(f"method class {cls.__name__}: 'serves_in_at' must be True or False, "
                         f"got {getattr(cls, 'serves_in_at', None)!r}")
