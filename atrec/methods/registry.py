"""The registry of methods: the built-ins (MF-IPS, the doubly robust baselines of
:mod:`atrec.methods.dr`, CausE, DAMF) and any installed package's (entry-point group
``atrec.methods``; see :mod:`atrec.registry`). ``--method`` choices, ``atrec methods`` and the
benchmark table's rows come from here.
"""

from __future__ import annotations

from atrec.errors import AtrecError
from atrec.methods import dr
from atrec.methods.base import Method, validate_method_class
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.methods.cause import CausE
from atrec.methods.damf import DAMF
from atrec.methods.ijcai_dr import IJCAIDR
from atrec.methods.mf_ips import MFIPS
from atrec.names import DEFAULT_METHOD, DEFAULT_PROTOCOL, NO_PROPENSITY
from atrec.propensity.registry import applies_to
from atrec.protocols import PROTOCOLS, get_protocol
from atrec.registry import Registry

AT_SUFFIX = "+at"

METHODS = Registry("method", "atrec.methods", validate_method_class)


def _builtins() -> None:
    METHODS.register(MFIPS)
    for cls in dr.BUILT_IN:
        METHODS.register(cls)
    METHODS.register(CausE)
    METHODS.register(DAMF)
    METHODS.register(IJCAIDR)


METHODS.builtins(_builtins)


def register_method(cls: type) -> type:
    """Register a method class, a :class:`~atrec.methods.base.Method` subclass (usable as a class
    decorator): :meth:`atrec.registry.Registry.register` says what it returns and raises."""
    return METHODS.register(cls)


def registry_for(protocol: str | None = None) -> Registry:
    """The methods a protocol runs: :data:`METHODS` for the 1-5 star protocols,
    :data:`~atrec.methods.binary.registry.BINARY_METHODS` for the binary ones (their view)."""
    if protocol in (None, DEFAULT_PROTOCOL):
        return METHODS
    return BINARY_METHODS if get_protocol(protocol).view == "binary" else METHODS


def method_class(name: str, protocol: str | None = None) -> type:
    """The class registered as ``name`` for ``protocol`` (:func:`registry_for`); a name that
    only the other view's protocols run is one line saying which."""
    _refuse_other_view([name], protocol)
    return registry_for(protocol).get(name)


def expand_methods(values, protocol: str | None = None) -> list[str]:
    """``--method`` values as the registered names of the methods ``protocol`` runs (``all``:
    every one); a name that only the other view's protocols run is one line saying which."""
    _refuse_other_view([p.strip().lower() for v in values for p in str(v).split(",")],
                       protocol)
    return registry_for(protocol).expand(values)


def _refuse_other_view(names, protocol: str | None) -> None:
    """One-line :class:`AtrecError` for the first of ``names`` that is not a method of
    ``protocol`` but is one of the protocols of the other view (``dt-ips`` under
    ``saito2020``: a binary method)."""
    own = registry_for(protocol)
    other = METHODS if own is BINARY_METHODS else BINARY_METHODS
    for name in names:
        if name and name != "all" and name not in own.names() and name in other.names():
            where = [p for p in PROTOCOLS.names() if registry_for(p) is other]
            kind = ("a binary method" if other is BINARY_METHODS
                    else "a method of the 1-5 star protocols")
            raise AtrecError(f"unknown {own.kind} '{name}' under protocol "
                             f"'{protocol or DEFAULT_PROTOCOL}': it is {kind}; give --protocol "
                             f"{' or '.join(where)} ('atrec methods' lists each protocol's)")


def get_method(name: str, protocol: str | None = None) -> Method:
    """An instance of a registered method.

    Parameters
    ----------
    name : str
        The ``--method`` value (``mf-ips``).
    protocol : str, optional
        The protocol it runs under: a binary protocol's methods are their own
        (:func:`registry_for`).

    Returns
    -------
    Method

    Raises
    ------
    AtrecError
        For an unknown name, in one line listing the choices.
    """
    return registry_for(protocol).get(name)()


def method_names(protocol: str | None = None) -> tuple[str, ...]:
    """Every registered method's name for ``protocol``, built-in first."""
    return registry_for(protocol).names()


def record_method(method: str, with_at: bool) -> str:
    """The ``method`` field of a record: ``mf-ips`` or ``mf-ips+at``."""
    return method + AT_SUFFIX if with_at else method


def base_method(record: dict) -> str:
    """The base method of a record; records made before methods were named say ``mf-ips``,
    ``mf-ips+at`` or nothing (then MF-IPS, the only method there was)."""
    value = record.get("method") or DEFAULT_METHOD
    return value[:-len(AT_SUFFIX)] if value.endswith(AT_SUFFIX) else value


def configurations(methods, propensities, at_options, dataset: str | None = None,
                   protocol: str | None = None) -> list[tuple[str, str, bool]]:
    """``(method, propensity, with_at)`` in run order: per method, the selected propensities
    (one slot, :data:`~atrec.names.NO_PROPENSITY`, for a method that uses none), each with the
    selected AT options. Shared by ``atrec train`` and ``atrec tune``.

    A method that cannot serve in AT (:func:`at_skipped`) gets its configurations without AT
    only. With ``dataset``, estimators that do not apply to it (``coat-shipped`` outside Coat, say)
    are left out, so ``--propensity all`` means every one that applies; when none of those
    asked for applies, a one-line :class:`AtrecError` says which datasets they support.
    """
    usable = [p for p in propensities
              if p == NO_PROPENSITY or dataset is None or applies_to(p, dataset)]
    if propensities and not usable:
        raise AtrecError(f"no selected propensity applies to dataset '{dataset}' "
                         f"({', '.join(propensities)}): choose others ('atrec methods' says "
                         f"which datasets each supports)")
    out = []
    alone = at_skipped(methods, at_options, protocol)
    if alone and len(alone) == len(methods) and list(at_options) == [True]:
        raise AtrecError(f"{', '.join(alone)} cannot serve in AT (as A1 and A2) under "
                         f"protocol '{protocol or DEFAULT_PROTOCOL}': run "
                         f"{'it' if len(alone) == 1 else 'them'} with --without-at "
                         f"('atrec methods' says which methods can)")
    for name in methods:
        uses = method_class(name, protocol).uses_propensity
        options = [a for a in at_options if not (a and name in alone)]
        for propensity in (usable if uses else [NO_PROPENSITY]):
            out.extend((name, propensity, a) for a in options)
    return out


def at_skipped(methods, at_options, protocol: str | None = None) -> list[str]:
    """The selected methods that cannot serve in AT under ``protocol`` when AT is asked for:
    :func:`configurations` runs them without AT only (or not at all when only AT was asked
    for), and the commands say so in a note; only when every selected method is one of them
    and only AT was asked for is the selection refused."""
    if True not in at_options:
        return []
    return [m for m in methods if not method_class(m, protocol).serves_in_at]
