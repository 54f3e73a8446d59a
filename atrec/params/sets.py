"""The names of the parameter sets and what each holds: one home for every module that names
them (:mod:`atrec.params.lookup` reads them, :mod:`atrec.params.hints` names them in its
messages)."""

from __future__ import annotations

from atrec.names import PUBLISHED, REFERENCE, TUNED, TUNED_ATREC  # noqa: F401  (re-exported)
from atrec.protocols import get_protocol

SHIPPED_FILES = {PUBLISHED: "published_params.yaml", TUNED_ATREC: "tuned_atrec_params.yaml"}
NAMED_SETS = (PUBLISHED, TUNED, TUNED_ATREC, REFERENCE)
# The sets every command tries, in this order, when --params is not given: the default protocol's
# (saito2020: the paper's authors' MF-IPS values, then the baselines tuned by atrec, then their
# own authors' values, then the user's tuning). Each configuration takes its values from the
# first set that has them. A protocol's sets have one home: its ``param_sets``.
DEFAULT_CHAIN = get_protocol().param_sets
DEFAULT_PARAMS = ",".join(DEFAULT_CHAIN)


def default_params(protocol=None) -> str:
    """The ``--params`` value that train and run read under ``protocol`` (a protocol or its
    name) when none is given: :attr:`~atrec.protocols.Protocol.default_params`."""
    return get_protocol(protocol).default_params


def start_params(protocol=None) -> str:
    """The sets a new study's first trial is taken from under ``protocol`` when ``atrec tune``
    is given no ``--params`` (:attr:`~atrec.protocols.Protocol.start_params`): the chain
    without ``tuned``, so a new study never depends on what an earlier one left behind."""
    return get_protocol(protocol).start_params
# What each named set holds, in a few words (``--params``'s help and its error messages).
SET_HELP = {
    PUBLISHED: "the paper's authors' tuned values; for another method, those it ships",
    TUNED: "yours, from 'atrec tune'",
    TUNED_ATREC: "the baselines tuned by atrec's own protocol",
    REFERENCE: "the values each method's authors published under their own protocol",
}

