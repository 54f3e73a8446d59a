"""Render a list of rows in one of the shared output formats.

``--format table|markdown|latex|csv|json`` means the same on every command: ``table`` is for a
terminal, ``markdown`` and ``latex`` for papers and notes, ``csv`` and ``json`` for programs.
LaTeX tables are booktabs tabulars (:mod:`atrec.reporting.latex`).
"""

from __future__ import annotations

import csv
import io
import json

from tabulate import tabulate

from atrec.reporting.latex import Group, booktabs

FORMATS = ("table", "markdown", "latex", "csv", "json")
_TABULATE = {"table": "simple", "markdown": "pipe"}


def render(rows: list[dict], fmt: str = "table", columns: list[str] | None = None,
           floatfmt: str = ".3f", numparse: bool = True, groups: list[Group] = (),
           block: str | None = None) -> str:
    """Render ``rows`` (dicts sharing keys) with ``columns`` in order (default: first row's keys).

    ``json`` keeps raw values; the other formats format floats with ``floatfmt``.
    ``numparse=False`` prints pre-formatted strings as given (table/markdown/latex), instead of
    re-reading number-like strings as numbers and re-formatting them with ``floatfmt``.
    ``latex`` takes string cells as LaTeX (escape plain text with
    :func:`atrec.reporting.latex.latex_escape`); ``groups`` (column groups under a shared
    label) and ``block`` (a column shown once per run of equal values) shape its header and
    rules, and are ignored by the other formats.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")
    columns = list(columns or (rows[0].keys() if rows else []))
    if fmt == "json":
        return json.dumps([{c: r.get(c) for c in columns} for r in rows], indent=1, default=str)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({c: r.get(c) for c in columns})
        return buf.getvalue().rstrip("\n")
    if fmt == "latex":
        return booktabs(rows, columns, groups, block, cell=lambda v: _latex_cell(v, floatfmt))
    body = [[r.get(c) for c in columns] for r in rows]
    return tabulate(body, headers=columns, tablefmt=_TABULATE[fmt], floatfmt=floatfmt,
                    disable_numparse=not numparse)


def _latex_cell(value, floatfmt: str) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return format(value, floatfmt)
    return str(value)
