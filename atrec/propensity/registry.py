"""The registry of propensity estimators: the paper's six, Figure 2's data-level ``P(i)``, the
field's baselines (coat-shipped, logistic, 1bit-mc: :mod:`atrec.propensity.models`), and
any installed package's (entry-point group ``atrec.propensities``; see :mod:`atrec.registry`).

The ``--propensity`` choices, their help, the name lists and the rows of Table 1 all come from
here, so a new estimator appears everywhere once it is registered.
"""

from __future__ import annotations

from atrec.errors import AtrecError
from atrec.propensity import builtin, models
from atrec.propensity.base import Propensity, validate_propensity_class
from atrec.registry import Registry

PROPENSITIES = Registry("propensity", "atrec.propensities", validate_propensity_class)


def _builtin_classes() -> tuple[type, ...]:
    """The classes atrec itself registers, in registration order (the paper's six first)."""
    return (*builtin.BUILT_IN, *models.BASELINES)


def _builtins() -> None:
    for cls in _builtin_classes():
        PROPENSITIES.register(cls)


def builtin_propensity_names() -> list[str]:
    """The ``--propensity`` values atrec itself registers, without loading any plug-in (so that
    ``--help`` lists them cheaply and imports no installed package)."""
    return [cls.name for cls in _builtin_classes() if cls.selectable]


PROPENSITIES.builtins(_builtins)


def register_propensity(cls: type) -> type:
    """Register an estimator class, a :class:`~atrec.propensity.base.Propensity` subclass (usable as a class
    decorator): :meth:`atrec.registry.Registry.register` says what it returns and raises."""
    return PROPENSITIES.register(cls)


def get_estimator(name: str) -> Propensity:
    """An instance of a registered, selectable estimator.

    Parameters
    ----------
    name : str
        The ``--propensity`` value (``item``).

    Returns
    -------
    Propensity

    Raises
    ------
    AtrecError
        For an unknown name, or one only its own experiment builds (``data-item``).
    """
    cls = PROPENSITIES.get(name)
    if not cls.selectable:
        raise AtrecError(f"propensity '{name}' is built by its own experiment only: choose from "
                         f"{', '.join(propensity_names())}")
    return cls()


def propensity_names() -> tuple[str, ...]:
    """The ``--propensity`` choices, in registration order (the paper's six first)."""
    return tuple(e.name for e in PROPENSITIES.entries() if e.cls.selectable)


def table1_propensities() -> tuple[str, ...]:
    """The rows of the paper's Table 1, in its order."""
    return tuple(e.name for e in PROPENSITIES.entries() if e.cls.paper_row)


def propensity_label(name: str) -> str:
    """The table label of ``name`` (``NB (true)``); an unregistered name is returned as it is."""
    try:
        return PROPENSITIES.get(name).label
    except AtrecError:
        return name


def propensity_order(name: str) -> int:
    """Sort key: registration order, unknown names last."""
    names = PROPENSITIES.names()
    return names.index(name) if name in names else len(names)


def applies_to(name: str, dataset: str) -> bool:
    """Whether estimator ``name`` can run on ``dataset`` (its ``datasets``, None = every one)."""
    cls = PROPENSITIES.get(name)
    return cls.datasets is None or dataset in cls.datasets
