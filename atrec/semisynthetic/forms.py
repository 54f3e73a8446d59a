"""The MNAR mechanism and the benchmark's forms: the reference code's and the corrected one.

Intended propensity (Guo et al. 2021, section 4): ``p = 0.5^k`` with ``k`` = 1, 2, 3, 4, 4 for
``c`` = 0.9, 0.7, 0.5, 0.3, 0.1 (:data:`INTENDED`).

The reference code (``synthetic.py``) replaces the values of one matrix in place, one rate after
another (0.9, then 0.7, 0.5, 0.3, 0.1): the 0.9 cells first become 0.5 and are then caught by
the replacement of 0.5, so ``p(0.9) = 0.125`` (the ``cascade`` rule, :func:`propensity`). It
also overwrites ``c`` with a Bernoulli draw inside its repetition loop, so the labels of the
first repetition are reused by every later one (a draw of ``Bernoulli(y)`` with ``y`` in {0, 1}
is ``y``): ``labels="once"``.

A :class:`Form` holds three switches: the propensity rule, when labels are drawn, and the rank
cuts of the conversion. :data:`FORMS` names the reference form, the corrected one and the three
forms that each correct one behaviour of the reference (to measure what each one does).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from atrec.semisynthetic.conversion import CODE_CUTS, MARGINAL_CUTS, RATES, check_cuts

INTENDED = {0.9: 0.5, 0.7: 0.25, 0.5: 0.125, 0.3: 0.0625, 0.1: 0.0625}
PROPENSITY_RULES = ("cascade", "intended")
LABEL_DRAWS = ("once", "per-repetition")
OBSERVATION_STREAM, LABEL_STREAM = 0, 1   # default_rng([stream, seed]) of each draw


def propensity(rates: np.ndarray, rule: str) -> np.ndarray:
    """The propensity of every cell (float64, the shape of ``rates``).

    ``intended``: :data:`INTENDED`. ``cascade``: the reference's in-place replacements, run as
    coded on one copy of ``rates`` in the order 0.9, 0.7, 0.5, 0.3, 0.1, so ``p(0.9) = 0.125``.
    Raises ``ValueError`` for another rule or a rate outside :data:`RATES`.
    """
    rates = np.asarray(rates, dtype=np.float64)
    if rule not in PROPENSITY_RULES:
        raise ValueError(f"unknown propensity rule {rule!r}: choose from "
                         f"{', '.join(PROPENSITY_RULES)}")
    if not np.isin(rates, RATES).all():
        raise ValueError(f"rates must take the values {RATES}")
    if rule == "intended":
        out = np.empty_like(rates)
        for rate, p in INTENDED.items():
            out[rates == rate] = p
        return out
    out = rates.copy()
    for rate in sorted(INTENDED, reverse=True):
        out[out == rate] = INTENDED[rate]
    return out


@dataclass(frozen=True)
class Form:
    """One form of the benchmark: ``propensity`` rule, ``labels`` drawn ``once`` (seed
    ``label_seed``) or per repetition (the repetition's seed), and the conversion's ``cuts``."""

    name: str
    propensity: str
    labels: str
    cuts: tuple[float, ...]
    label_seed: int = 0

    def __post_init__(self) -> None:
        if self.propensity not in PROPENSITY_RULES:
            raise ValueError(f"propensity must be one of {PROPENSITY_RULES}, got "
                             f"{self.propensity!r}")
        if self.labels not in LABEL_DRAWS:
            raise ValueError(f"labels must be one of {LABEL_DRAWS}, got {self.labels!r}")
        object.__setattr__(self, "cuts", check_cuts(self.cuts))
        if int(self.label_seed) != self.label_seed or self.label_seed < 0:
            raise ValueError(f"label_seed must be a non-negative integer, got "
                             f"{self.label_seed!r}")

    def as_dict(self) -> dict:
        return {**asdict(self), "cuts": list(self.cuts)}

    def labels_for(self, rates: np.ndarray, seed: int) -> np.ndarray:
        """The labels ``y ~ Bernoulli(rates)`` (bool) of repetition ``seed``."""
        stream = self.label_seed if self.labels == "once" else seed
        rng = np.random.default_rng([LABEL_STREAM, int(stream)])
        return rng.random(np.shape(rates)) < rates

    @staticmethod
    def observations(p: np.ndarray, seed: int) -> np.ndarray:
        """The observed cells ``o ~ Bernoulli(p)`` (bool) of repetition ``seed``."""
        return np.random.default_rng([OBSERVATION_STREAM, int(seed)]).random(np.shape(p)) < p


FORMS = {f.name: f for f in (
    Form("reference", "cascade", "once", CODE_CUTS),
    Form("corrected", "intended", "per-repetition", MARGINAL_CUTS),
    Form("intended-propensity", "intended", "once", CODE_CUTS),
    Form("fresh-labels", "cascade", "per-repetition", CODE_CUTS),
    Form("marginal-cuts", "cascade", "once", MARGINAL_CUTS),
)}
DEFAULT_FORMS = ("reference", "corrected")
