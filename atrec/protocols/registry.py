"""The registry of protocols: the built-ins (``saito2020``, the default, ``ijcai2022``,
``binary-icde24``, ``binary-clean``, the protocol gap's steps ``binary-icde24-cleantest`` and
``binary-clean-icde24rule``, and the semi-synthetic ``binary-truth`` family) and any installed
package's (entry-point group ``atrec.protocols``; see :mod:`atrec.registry`). ``--protocol``
choices and ``atrec methods``' protocol table come from here."""

from __future__ import annotations

from pathlib import Path

from atrec.names import DEFAULT_PROTOCOL
from atrec.protocols.base import Protocol, validate_protocol_class
from atrec.protocols.binary import BinaryClean, BinaryICDE24
from atrec.protocols.gap_steps import BinaryCleanICDE24Rule, BinaryICDE24CleanTest
from atrec.protocols.ijcai2022 import IJCAI2022
from atrec.protocols.saito2020 import Saito2020
from atrec.protocols.truth import TRUTH_PROTOCOLS
from atrec.registry import Registry

PROTOCOLS = Registry("protocol", "atrec.protocols", validate_protocol_class)


def _builtins() -> None:
    PROTOCOLS.register(Saito2020)
    PROTOCOLS.register(IJCAI2022)
    PROTOCOLS.register(BinaryICDE24)
    PROTOCOLS.register(BinaryClean)
    PROTOCOLS.register(BinaryICDE24CleanTest)
    PROTOCOLS.register(BinaryCleanICDE24Rule)
    for cls in TRUTH_PROTOCOLS:
        PROTOCOLS.register(cls)


PROTOCOLS.builtins(_builtins)


def get_protocol(name: Protocol | str | None = None) -> Protocol:
    """An instance of the protocol called ``name`` (default: :data:`DEFAULT_PROTOCOL`); an
    unknown name is a one-line AtrecError listing the registered ones. A request resolves its
    protocol once; an already resolved one is returned as it is."""
    if isinstance(name, Protocol):
        return name
    return PROTOCOLS.get(name or DEFAULT_PROTOCOL)()


def protocol_names() -> tuple[str, ...]:
    return PROTOCOLS.names()


def results_root(protocol: Protocol | str | None = None, root: Path | None = None) -> Path:
    """The results folder of ``protocol``'s records (:meth:`Protocol.results_root`)."""
    return get_protocol(protocol).results_root(root)


def record_protocol(record: dict) -> str:
    """The protocol a record was made under; records older than protocols are saito2020's."""
    block = record.get("protocol") if isinstance(record, dict) else None
    name = block.get("name") if isinstance(block, dict) else None
    return name if isinstance(name, str) and name else DEFAULT_PROTOCOL
