"""Experimental protocols as registered, named objects (a protocol is data, not a branch).

A protocol says how the data are viewed, how each seed splits them, which metrics are computed
and which criterion selects the reported step, what a training schedule is and its defaults,
and which parameter sets exist under it. ``saito2020`` (the paper's, docs/protocol.md) is the
default; ``ijcai2022`` is Saito and Nomura's (docs/protocols.md, "ijcai2022"). Installed packages
add protocols through the entry-point group ``atrec.protocols``.
"""

from atrec.protocols.base import Protocol, Schedule, protocol_flag
from atrec.protocols.registry import PROTOCOLS, get_protocol, protocol_names, results_root

__all__ = ["PROTOCOLS", "Protocol", "Schedule", "get_protocol", "protocol_flag", "protocol_names",
           "results_root"]
