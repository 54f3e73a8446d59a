"""Figure 2's numbers per ``min_items``: MAE and MSE of both methods (mean and standard error
over seeds) and the paired ratio with AT / without AT, as rows and one-line descriptions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from atrec.run_settings import settings_dict
from atrec.workflows.variance.request import DATA_SEED, VARIANCE_METRICS, VarianceRequest


@dataclass(frozen=True)
class MeanSE:
    """Mean and standard error (``sd(ddof=1) / sqrt(n)``; NaN for ``n < 2``) over seeds."""

    mean: float
    se: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> MeanSE:
        v = np.asarray(values, dtype=np.float64)
        if not len(v):
            raise ValueError("MeanSE needs at least one value")
        se = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else math.nan
        return cls(float(v.mean()), se, len(v))

    def text(self, digits: int = 4) -> str:
        """``0.8734 ± 0.0021`` (just the mean when the se is undefined)."""
        if math.isnan(self.se):
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {self.se:.{digits}f}"


@dataclass(frozen=True)
class VariancePoint:
    """One ``min_items``: its data check and the summaries of both methods.

    ``without`` / ``with_at``: metric (``mae``, ``mse``) -> :class:`MeanSE` over that method's
    seeds (``None`` when it was not run); ``ratio``: metric -> :class:`MeanSE` of the per-seed
    ratio with AT / without AT over ``paired_seeds`` (``None`` unless both ran).
    """

    min_items: int
    min_relative_propensity: float
    num_users: int
    num_items: int
    without: dict | None
    with_at: dict | None
    ratio: dict | None
    paired_seeds: tuple[int, ...]


def summarize_point(min_items: int, min_relative_propensity: float, num_users: int,
                    num_items: int, records: Sequence[dict]) -> VariancePoint:
    """Summarise the records of one ``min_items`` (both methods, any seeds)."""
    by_method: dict[bool, dict[int, dict]] = {False: {}, True: {}}
    for r in records:
        by_method[bool(r["with_at"])][int(r["seed"])] = r["metrics"]

    def stats(runs: dict[int, dict]) -> dict | None:
        if not runs:
            return None
        return {m: MeanSE.of([runs[s][m] for s in sorted(runs)]) for m in VARIANCE_METRICS}

    paired = tuple(sorted(set(by_method[False]) & set(by_method[True])))
    ratio = None
    if paired:
        ratio = {m: MeanSE.of([by_method[True][s][m] / by_method[False][s][m] for s in paired])
                 for m in VARIANCE_METRICS}
    return VariancePoint(int(min_items), float(min_relative_propensity), int(num_users),
                         int(num_items), stats(by_method[False]), stats(by_method[True]), ratio,
                         paired)


def variance_rows(points: Sequence[VariancePoint], numeric: bool = False) -> list[dict]:
    """One row per ``min_items``: min relative propensity, MAE/MSE without and with AT, ratios.

    ``numeric=False``: cells as ``mean ± se`` strings (terminal, markdown, LaTeX);
    ``numeric=True``: separate ``<column>`` and ``<column> se`` numbers (CSV, JSON).
    """
    rows = []
    for p in points:
        row = {"min_items": p.min_items, "min P(i)": f"{p.min_relative_propensity:.4f}",
               "items": p.num_items, "seeds": len(p.paired_seeds) if p.ratio else None}
        if numeric:
            row["min P(i)"] = p.min_relative_propensity
        for metric in VARIANCE_METRICS:
            name = metric.upper()
            for label, stats in ((f"{name} w/o AT", p.without), (f"{name} w/ AT", p.with_at),
                                 (f"{name} w/ / w/o", p.ratio)):
                cell = stats[metric] if stats else None
                if numeric:
                    row[label] = cell.mean if cell else None
                    row[f"{label} se"] = None if cell is None or math.isnan(cell.se) else cell.se
                else:
                    row[label] = cell.text() if cell else "-"
        if row["seeds"] is None:
            methods = p.without or p.with_at
            row["seeds"] = methods["mse"].n if methods else 0
        rows.append(row)
    return rows


def describe_settings(request: VarianceRequest) -> str:
    """One line with the training lengths used, e.g. for the report and ``variance.md``."""

    parts = []
    if False in request.at_options:
        parts.append(f"MF-IPS {settings_dict(request.settings, None, False)['steps']} steps")
    if True in request.at_options:
        s = settings_dict(None, request.at_settings, True)
        parts.append(f"AT {s['pre_steps']} pre-training + {s['iterations']} x "
                     f"{s['steps_per_iteration']} pseudo-labelling steps")
    default = request.settings is None and request.at_settings is None
    draw = (f"one data draw (seed {DATA_SEED}) for all seeds" if request.data_draw == "fixed"
            else "a data draw per seed")
    paper = " (the paper's protocol)" if default else ""
    return "settings: " + "; ".join(parts) + paper + f"; {draw}"
