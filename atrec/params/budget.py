"""How a configuration's values were made, for tables: ``authors`` for values as their authors
published them, ``<n> trials`` for a tuned set whose entry records its study's trials (``<n>
trials x <k> splits`` when tuned on several validation splits), ``-`` when unknown (:func:`params_budget`). Reads the same parameter sets as
:mod:`atrec.params.lookup`."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from atrec.errors import AtrecError
from atrec.params.lookup import _read_yaml, load_param_table, protocol_shipped_file
from atrec.params.sets import PUBLISHED, REFERENCE, TUNED, TUNED_ATREC
from atrec.protocols import Protocol, get_protocol


def _budget_table(name: str, protocol: Protocol) -> tuple[dict, str]:
    """The table behind ``name`` under a protocol with sets of its own: its shipped
    ``tuned-atrec`` file, or a tuned parameter file (the protocol's own, or one named)."""
    if name == TUNED_ATREC:
        ref = resources.files("atrec") / "resources" / protocol_shipped_file(protocol)
        return yaml.safe_load(ref.read_text()) or {}, name
    path = Path(name)
    if not path.is_file():
        raise AtrecError(f"no parameter file at {path}")
    return _read_yaml(path, "parameter") or {}, name



AUTHORS_BUDGET = "authors"   # the budget shown for values as their authors published them


def params_budget(source: str, dataset: str, key: str, tables: dict | None = None,
                  protocol: Protocol | str | None = None) -> str:
    """How the values of one configuration were made, for tables: ``authors`` for the
    ``published`` and ``reference`` sets, ``<n> trials`` (per study) for a tuned set or file
    whose entry records its trials, ``-`` when unknown. ``source``: a set name, a provenance
    label (``tuned:PATH``, ``file:PATH``) or a record's label; ``protocol``: whose
    ``tuned-atrec`` and ``tuned`` files are meant (default: ``saito2020``'s); ``tables``
    caches loaded sets."""
    name = str(source).split("+")[0]
    if name in (PUBLISHED, REFERENCE):
        return AUTHORS_BUDGET
    proto = get_protocol(protocol)
    other = not proto.shared_sets
    if name.startswith("file:"):
        name = name[len("file:"):]
    elif name.startswith("tuned:") or name == TUNED:
        name = str(proto.tuned_params_path()) if other else TUNED
    elif name != TUNED_ATREC:
        return "-"
    cache = {} if tables is None else tables
    slot = (proto.name, name) if other else name
    if slot not in cache:
        try:
            cache[slot] = _budget_table(name, proto) if other else load_param_table(name)
        except AtrecError:
            cache[slot] = ({}, name)
    entry = (cache[slot][0].get(dataset) or {}).get(key)
    trials = entry.get("trials") if isinstance(entry, dict) else None
    if not isinstance(trials, int):
        return "-"
    splits = entry.get("splits")       # atrec tune --splits N: N studies of that many trials
    n = splits.get("n") if isinstance(splits, dict) else None
    return f"{trials} trials x {n} splits" if isinstance(n, int) and n > 1 else f"{trials} trials"
