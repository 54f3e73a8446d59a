"""Hyperparameter checks every method contract shares (1-5 star and binary): the smallest
model of a search space, the bad values every hyperparameter must refuse, and the checks that
a refusal is a ``ValueError`` naming the value."""

from __future__ import annotations

import math

from atrec.methods.base import EPSILON, Method
from atrec.params.lookup import HyperParams

AT_EPSILON = 0.5  # wide enough that pseudo-labels pass on the small data
MISSING = object()
"""Stands for a hyperparameter left out, in :func:`bad_hyperparameter_cases`."""


def small_params(cls: type[Method], with_at: bool) -> dict:
    """The smallest model of a method's search space: ``low`` of an integer hyperparameter,
    the geometric middle of a float range (the middle of a linear one); validated by the
    method itself."""
    values = {}
    for h in cls.hyperparameters:
        if h.kind == "int":
            values[h.name] = int(h.low)
        else:
            values[h.name] = math.sqrt(h.low * h.high) if h.log else (h.low + h.high) / 2
    if with_at:
        values[EPSILON.name] = AT_EPSILON
    return HyperParams.from_values(cls.check_params(values, with_at)).as_dict()


def bad_hyperparameter_cases(cls: type[Method]) -> list[tuple]:
    """``(hyperparameter, with_at, bad value or MISSING, fragment of the message)``: for every
    hyperparameter (and AT's ``epsilon``), a negative, NaN, missing (unless it has a default,
    which a missing key takes), text and absurd value."""
    out = []
    for h, with_at in [(h, False) for h in cls.hyperparameters] + [(EPSILON, True)]:
        cases = [(-3, "-3"), (float("nan"), "nan"), ("ten", "'ten'")]
        if getattr(h, "default", None) is None:
            cases.append((MISSING, f"'{h.name}'"))
        if h.kind == "int":
            cases.append((10**9, "1000000000"))
        elif math.isfinite(h.bound):
            cases.append((1e300, "1e+300"))
        out += [(h.name, with_at, value, fragment) for value, fragment in cases]
    return out


def check_hyperparameter_declarations(cls: type[Method]) -> None:
    """No hyperparameter is AT's ``epsilon``, and each accepts its own ``low``."""
    for h in cls.hyperparameters:
        assert h.name != EPSILON.name, "epsilon is AT's"
        assert h.check(h.low) == (int(h.low) if h.kind == "int" else h.low), h.name


class HyperparameterChecks:
    """The hyperparameter checks of :attr:`cls`, shared by the method checks of each
    contract: each bad value of :meth:`bad_cases` is a ``ValueError`` that names it."""

    cls: type[Method]

    def bad_cases(self) -> list[tuple]:
        """The cases :meth:`bad_hyperparameters` runs (:func:`bad_hyperparameter_cases`)."""
        return bad_hyperparameter_cases(self.cls)

    def bad_hyperparameter(self, key: str, with_at: bool, value, fragment: str) -> None:
        """``check_params`` with ``key`` set to ``value`` (or left out: :data:`MISSING`)
        raises ``ValueError`` whose message names ``key`` and ``fragment``."""
        values = small_params(self.cls, with_at)
        if value is MISSING:
            del values[key]
        else:
            values[key] = value
        try:
            self.cls.check_params(values, with_at)
        except ValueError as exc:
            message = str(exc)
            assert key in message and fragment in message, message
        else:
            raise AssertionError(f"{key}={value!r} was accepted")

    def bad_hyperparameters(self) -> None:
        for case in self.bad_cases():
            self.bad_hyperparameter(*case)

    def parameters_must_be_a_mapping(self) -> None:
        try:
            self.cls.check_params([5, 0.001])
        except ValueError as exc:
            assert "[5, 0.001]" in str(exc), str(exc)
        else:
            raise AssertionError("a list of values was accepted as parameters")
