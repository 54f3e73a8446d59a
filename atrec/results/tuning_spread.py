"""Where ``atrec tune --splits N`` leaves its per-split results: one JSON file per protocol,
``<protocol results>/tuning_spread.json``, mapping each configuration's study name (that of its
first split) to the record :class:`atrec.tuning.splits.SplitSpread` writes. ``atrec tune``
writes it (:func:`atrec.tuning.splits.save_spreads`), ``atrec report --table tuning-spread``
reads it."""

from __future__ import annotations

import json
from pathlib import Path

from atrec.errors import AtrecError
from atrec.protocols import Protocol, get_protocol

SPREAD_FILE = "tuning_spread.json"


def spread_path(protocol: Protocol | str | None = None, root: Path | None = None) -> Path:
    """The per-split tuning results of ``protocol`` (default saito2020), beside its tuned
    parameter file."""
    return get_protocol(protocol).results_root(root) / SPREAD_FILE


def read_spreads(path: Path) -> dict:
    """``study -> record`` from ``path``; ``{}`` when it does not exist (no ``--splits`` run
    yet). A file that is not such a mapping is a one-line error naming it."""
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AtrecError(f"cannot read the tuning spread file {path} ({exc}): delete it and run "
                         f"'atrec tune --splits N' again") from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise AtrecError(f"tuning spread file {path} is not a mapping of study -> record: "
                         f"delete it and run 'atrec tune --splits N' again")
    return table
