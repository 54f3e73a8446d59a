"""``atrec report --table tuning-spread``: how much tuning depends on the validation split.

Reads what ``atrec tune --splits N`` left (:mod:`atrec.results.tuning_spread`): per
configuration, one row per split (its seed, its study's best value and best values, those
values' objective averaged over every split) and, marked ``*``, the winner that was exported
(lowest mean: :data:`atrec.tuning.splits.SPLIT_RULE`), with the min, max and sd of the splits'
best values.
"""

from __future__ import annotations

from dataclasses import dataclass

from atrec.propensity.registry import propensity_label
from atrec.protocols import get_protocol
from atrec.reporting.latex import latex_escape
from atrec.reporting.tables import render
from atrec.results.tuning_spread import read_spreads, spread_path


@dataclass(frozen=True)
class SpreadReport:
    text: str
    notices: list[str]


def spread_rows(table: dict, datasets: list[str] | None = None,
                numeric: bool = False) -> list[dict]:
    """One row per split of every record of ``table`` (``study -> record``), in study order;
    ``datasets`` keeps only theirs. ``numeric``: raw numbers (csv/json), else display strings."""
    def show(value, spec: str):
        return value if numeric or value is None else format(value, spec)

    rows = []
    for study in sorted(table):
        rec = table[study]
        if datasets and rec.get("dataset") not in datasets:
            continue
        for split in rec.get("splits", []):
            params = split.get("params") or {}
            rows.append({
                "dataset": rec.get("dataset"), "method": rec.get("method"),
                "propensity": propensity_label(str(rec.get("propensity"))),
                "AT": "with" if rec.get("with_at") else "without",
                "split seed": split.get("seed"),
                "exported": "*" if split.get("seed") == rec.get("chosen_seed") else "",
                "best value": show(split.get("best_value"), ".4f"),
                "mean over splits": show(split.get("mean"), ".4f"),
                "params": ", ".join(f"{k}={show(v, '.3g') if isinstance(v, float) else v}"
                                    for k, v in sorted(params.items())),
                "min": show(rec.get("min"), ".4f"), "max": show(rec.get("max"), ".4f"),
                "sd": show(rec.get("sd"), ".4f"), "trials": rec.get("trials"),
                "failed": split.get("failed") or ("" if numeric else "-"),
            })
    return rows


def spread_report(protocol: str | None = None, datasets: list[str] | None = None,
                  fmt: str = "table") -> SpreadReport:
    """The tuning-spread table of ``protocol`` (its results folder's spread file)."""
    path = spread_path(get_protocol(protocol))
    rows = spread_rows(read_spreads(path), datasets, numeric=fmt in ("csv", "json"))
    if not rows:
        return SpreadReport("", [f"no tuning on several splits in {path}: run 'atrec tune "
                                 f"--splits 3{get_protocol(protocol).flag}' first"])
    if fmt == "latex":    # string cells are LaTeX there (batch_size, propensity labels)
        rows = [{k: latex_escape(v) if isinstance(v, str) else v for k, v in r.items()}
                for r in rows]
    return SpreadReport(render(rows, fmt, numparse=False), [])
