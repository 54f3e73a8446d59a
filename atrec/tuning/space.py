"""The search space of a tuning study: the paper's (``dim`` in {5, 10, ..., 50}, ``lam``
log-uniform in [1e-6, 1], ``epsilon`` log-uniform in [1e-3, 1] with AT), or a registered
method's, built from its declared hyperparameters."""

from __future__ import annotations

from dataclasses import dataclass

from atrec.methods.base import EPSILON
from atrec.methods.registry import hyperparameters_of, method_class
from atrec.names import DEFAULT_METHOD
from atrec.protocols import Protocol, get_protocol
from atrec.params.lookup import HyperParams


@dataclass(frozen=True)
class SearchSpace:
    """The search space of the paper (docs/protocol.md, "Tuning"): ``dim`` on a grid, ``lam`` and
    ``epsilon`` log-uniform."""

    dim_low: int = 5
    dim_high: int = 50
    dim_step: int = 5
    lam_low: float = 1e-6
    lam_high: float = 1.0
    epsilon_low: float = 1e-3
    epsilon_high: float = 1.0
    extra: tuple = ()   # a method's own hyperparameters (atrec.methods.base.Hyperparameter)

    @classmethod
    def for_method(cls, method: str = DEFAULT_METHOD, protocol: Protocol | str | None = None) -> "SearchSpace":
        """The space of a registered method: its ``dim`` and ``lam`` ranges, its other
        hyperparameters in the form it runs in under ``protocol``
        (:func:`~atrec.methods.registry.hyperparameters_of`: a binary method's corrected form
        adds its nuisance models' own), and AT's ``epsilon``; MF-IPS's is the paper's."""
        method_cls = method_class(method, protocol)
        dim, lam = method_cls.hyperparameter("dim"), method_cls.hyperparameter("lam")
        inert = ("dim", "lam")
        epochs = getattr(get_protocol(protocol), "epochs", None)
        if getattr(epochs, "stopping", None) == "validation":   # the reference rule's own keys
            inert += tuple(getattr(method_cls, "rule_hyperparameters", ()))
        return cls(int(dim.low), int(dim.high), int(dim.step or 1), lam.low, lam.high,
                   EPSILON.low, EPSILON.high,
                   tuple(h for h in hyperparameters_of(method, protocol)
                         if h.name not in inert))

    def __post_init__(self) -> None:
        if not (0 < self.dim_low <= self.dim_high and self.dim_step > 0
                and (self.dim_high - self.dim_low) % self.dim_step == 0):
            raise ValueError(f"dim range {self.dim_low}..{self.dim_high} step {self.dim_step} "
                             f"must be positive and end on the grid")
        for name, lo, hi in (("lam", self.lam_low, self.lam_high),
                             ("epsilon", self.epsilon_low, self.epsilon_high)):
            if not 0 < lo < hi:
                raise ValueError(f"{name} range [{lo}, {hi}] must satisfy 0 < low < high "
                                 f"(it is sampled on a log scale)")

    def suggest(self, trial, with_at: bool) -> HyperParams:
        """Sample one point through an Optuna ``trial`` (names ``dim``, ``lam``, ``epsilon``)."""
        dim = trial.suggest_int("dim", self.dim_low, self.dim_high, step=self.dim_step)
        lam = trial.suggest_float("lam", self.lam_low, self.lam_high, log=True)
        extra = tuple((h.name, h.suggest(trial)) for h in self.extra)
        epsilon = (trial.suggest_float("epsilon", self.epsilon_low, self.epsilon_high, log=True)
                   if with_at else None)
        return HyperParams(dim=dim, lam=lam, epsilon=epsilon, extra=tuple(sorted(extra)))

    def as_dict(self) -> dict:
        out = {"dim": [self.dim_low, self.dim_high, self.dim_step],
               "lam": [self.lam_low, self.lam_high, "log"],
               "epsilon": [self.epsilon_low, self.epsilon_high, "log"]}
        for h in self.extra:   # none for MF-IPS, whose stored studies keep their attributes
            out[h.name] = [h.low, h.high, h.step if h.kind == "int" else
                           ("log" if h.log else "linear")]
        return out


SEARCH_SPACE = SearchSpace()
