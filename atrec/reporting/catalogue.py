"""``atrec methods`` for a person: compact tables that fit a terminal, and a method's details on
request.

The summary (:func:`summary_text`) lists each method once, per family of protocols (1-5 star,
binary), with its options, what it reads and whether it serves in AT; then the propensity
estimators and the protocols, each line at most :data:`WIDTH` columns (long cells wrap).
:func:`details_text` gives every field of one method (``atrec methods --method NAME``: its
description, reference, options with their values and meanings, hyperparameters with their
search spaces, the names it had), or of every method (``-v``). ``--format json`` keeps the
full rows of :mod:`atrec.methods.catalogue` for machines.
"""

from __future__ import annotations

import textwrap

from tabulate import tabulate

from atrec.errors import AtrecError
from atrec.methods.base import EPSILON
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.methods.options import parse_method
from atrec.methods.registry import METHODS, aliases_for, resolve
from atrec.propensity.registry import PROPENSITIES
from atrec.run_settings import TUNING_BUDGET
from atrec.protocols import PROTOCOLS

WIDTH = 100          # the widest line the summary and the details print
STAR, BINARY = "saito2020", "binary-icde24"     # a protocol of each family, for lookups
FAMILIES = ((STAR, METHODS, "Methods of the 1-5 star protocols (saito2020, ijcai2022)"),
            (BINARY, BINARY_METHODS, "Methods of the binary protocols (binary-icde24, "
                                     "binary-clean; same name, another method)"))
HINT = ("Details of one method: atrec methods --method NAME (every method: -v); "
        "all fields: --format json.")


def _uses(cls) -> str:
    return "+".join(w for w, flag in (("propensity", cls.uses_propensity),
                                      ("MCAR", cls.uses_mcar)) if flag) or "-"


def _options(cls) -> str:
    return " ".join(f"{o.name}={'|'.join(o.choices)}" for o in cls.options) or "-"


def _table(rows: list[dict], width: int = WIDTH) -> str:
    """``rows`` as a plain table whose lines fit ``width``: the widest text column is wrapped
    until they do (tabulate's multi-line cells)."""
    if not rows:
        return ""
    columns = list(rows[0])
    limits = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns}
    while True:
        body = [[textwrap.fill(str(r[c]), limits[c], break_on_hyphens=False) for c in columns]
                for r in rows]
        text = tabulate(body, headers=columns, tablefmt="simple", disable_numparse=True)
        if max(len(line) for line in text.splitlines()) <= width:
            return text
        widest = max(columns, key=lambda c: limits[c])
        if limits[widest] <= 12:
            return text
        limits[widest] -= 2


def method_rows(registry) -> list[dict]:
    """One short row per registered method of ``registry``."""
    return [{"method": e.name, "label": e.cls.label, "options": _options(e.cls),
             "uses": _uses(e.cls), "AT": "yes" if e.cls.serves_in_at else "no",
             "origin": "" if e.origin == "built-in" else e.origin}
            for e in registry.entries()]


def summary_text() -> str:
    """The summary of ``atrec methods`` (module doc)."""
    parts = []
    for _protocol, registry, title in FAMILIES:
        rows = method_rows(registry)
        if not any(r["origin"] for r in rows):
            rows = [{k: v for k, v in r.items() if k != "origin"} for r in rows]
        parts += [title + ":", _table(rows), ""]
    propensities = [{"propensity": e.name, "label": e.cls.label,
                     "notes": ", ".join(n for n, flag in (("MCAR labels", e.cls.uses_mcar),
                                                          ("Table 1 row", e.cls.paper_row),
                                                          ("experiment only",
                                                           not e.cls.selectable)) if flag)
                     or "-"} for e in PROPENSITIES.entries()]
    parts += ["Propensity estimators (--propensity; 1-5 star protocols):", _table(propensities),
              ""]
    protocols = [{"protocol": e.name, "label": e.cls.label, "view": e.cls.view,
                  "seeds": e.cls.seeds, "parameter sets": ", ".join(e.cls.param_sets)}
                 for e in PROTOCOLS.entries()]
    parts += ["Protocols (--protocol):", _table(protocols), "", HINT]
    return "\n".join(parts)


def _fields(cls, origin: str, protocol: str) -> list[tuple[str, str]]:
    """``(field, text)`` of every detail of one method class under ``protocol``'s family."""
    out = [("method", f"{cls.name} ({cls.label})"), ("description", cls.description),
           ("reference", cls.reference or "-"), ("origin", origin)]
    for o in cls.options:
        default = "the protocol's" if o.default is None else o.default
        out.append((f"option {o.name}", f"{o.help} (default: {default})"))
        out += [(f"  {o.name}={value}", meaning) for value, meaning in o.values]
    if getattr(cls, "reference_forms", ""):
        out.append(("the code's form", cls.reference_forms))
    out += [(f"hyperparameter {h.name}", f"{h.describe()}" + (f"; {h.help}" if h.help else ""))
            for h in cls.hyperparameters]
    out += [(f"hyperparameter {h.name} (corrected form only)",
             f"{h.describe()}; {h.help}; default {h.default}")
            for h in getattr(cls, "corrected_hyperparameters", ())]
    out.append(("with AT", f"adds {EPSILON.name}: {EPSILON.describe()}" if cls.serves_in_at
                else "cannot serve in AT"))
    out.append(("uses", _uses(cls)))
    out.append(("tuning", f"{TUNING_BUDGET} trials; the first is what 'atrec train' would use"))
    names = [a for a, (base, _) in aliases_for(protocol).items() if base == cls.name]
    if names:
        out.append(("old names (aliases)", ", ".join(
            f"{a} = {cls.name}[" + ",".join(f"{k}={v}" for k, v in
                                            aliases_for(protocol)[a][1].items()) + "]"
            for a in names)))
    return out


def _render_fields(fields: list[tuple[str, str]], width: int = WIDTH) -> str:
    pad = max(len(k) for k, _ in fields) + 2
    lines = []
    for key, text in fields:
        lines += textwrap.wrap(str(text), width, initial_indent=key.ljust(pad),
                               break_on_hyphens=False,
                               subsequent_indent=" " * pad) or [key]
    return "\n".join(lines)


def details_text(name: str | None = None) -> str:
    """Every field of method ``name`` (a name, an alias, or ``name[key=value]``), in each family
    that has it; of every method without ``name``. One-line :class:`AtrecError` for a name no
    family has."""
    blocks = []
    for protocol, registry, title in FAMILIES:
        entries = registry.entries()
        if name is not None:
            try:
                cls = resolve(name, protocol)[0]
            except AtrecError:
                continue
            entries = [e for e in entries if e.cls is cls]
        for entry in entries:
            heading = title.split(" (")[0].replace("Methods of", "A method of")
            blocks.append(f"{heading}:\n" + _render_fields(_fields(entry.cls, entry.origin,
                                                                   protocol)))
    if not blocks:
        known = sorted({*METHODS.names(), *BINARY_METHODS.names()})
        raise AtrecError(f"unknown method '{parse_method(name)[0]}': choose from "
                         f"{', '.join(known)} ('atrec methods' lists them)")
    return "\n\n".join(blocks)
