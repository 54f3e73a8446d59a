"""What ``atrec methods`` lists about protocols: every registered protocol with its metrics
(label and record key, from :mod:`atrec.evaluation.registry`), the rule that selects the
reported step, its schedule, split and parameter sets."""

from __future__ import annotations

from atrec.evaluation.registry import METRICS, get_metric
from atrec.protocols import PROTOCOLS


def protocol_rows() -> tuple[list[dict], list[str]]:
    """``(protocol rows, problems)``: one row per registered protocol, and one line per
    broken protocol or metric plug-in."""
    rows = []
    for entry in PROTOCOLS.entries():
        row = entry.cls.summary()
        row["metrics"] = ", ".join(f"{get_metric(m).label} ({m})" for m in entry.cls.metrics)
        row["origin"] = entry.origin
        rows.append(row)
    return rows, list(PROTOCOLS.problems.values()) + list(METRICS.problems.values())
