"""The truth against the mechanism's strength (``atrec report --table truth-alpha``): each binary
method's truth metrics under every binary-truth protocol (:data:`atrec.protocols.truth.
TRUTH_PROTOCOLS`: observation probability ``p^alpha`` with alpha 0.5, 1 and 1.5), one row per
method and alpha with the mean over seeds and its t-based 95% interval, and the figure
``truth_alpha`` (truth AUC and nDCG@5 against alpha, one line per method, the intervals as
bars).

A larger alpha makes the mechanism stronger (``p(0.1) / p(0.9)`` is ``8^-alpha``) and the
observations fewer (29%, 9.5% and 3.6% of the cells are kept), so a method's curve mixes both; MF's
curve is the reference the debiasing methods are read against.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from atrec.errors import AtrecError
from atrec.names import NO_PROPENSITY
from atrec.paths import results_dir
from atrec.protocols.truth import TRUTH_PROTOCOLS
from atrec.reporting.benchmark import BINARY_BASELINE, label_of, load_benchmark
from atrec.reporting.common import heading, json_safe, metric_label
from atrec.reporting.figures import _new_figure, _suptitle, save_figure
from atrec.reporting.report import ReportOutput
from atrec.reporting.tables import FORMATS, render
from atrec.semisynthetic.truth import DATASET

ALPHA_METRICS = ("truth_auc", "truth_ndcg5")
FIGURE = "truth_alpha"


@dataclass(frozen=True)
class AlphaPoint:
    """One method's ``metric`` under the protocol of ``alpha``: ``n`` seeds, their ``mean`` and
    95% interval ``[low, high]`` (NaN with one seed)."""

    method: str
    label: str
    alpha: float
    metric: str
    n: int
    mean: float
    low: float
    high: float


def truth_by_alpha(root: Path | None = None) -> tuple[list[AlphaPoint], list[str]]:
    """Every method's :data:`ALPHA_METRICS` under each binary-truth protocol with results under
    ``root`` (default atrec's results folder); returns the points and notices. Raises
    :class:`AtrecError` (exit code 3) when no protocol has any."""
    base = results_dir() if root is None else Path(root)
    points, notices = [], []
    for cls in TRUTH_PROTOCOLS:
        proto = cls()
        try:
            bench = load_benchmark(proto.results_root(base), [DATASET],
                                   ",".join(proto.param_sets), 1, protocol=proto.name)
        except AtrecError as exc:
            if exc.exit_code != 3:
                raise
            notices.append(f"no {proto.name} results (alpha {proto.alpha:g}): run 'atrec "
                           f"train --protocol {proto.name} --dataset {DATASET}'")
            continue
        names = [i.name for i in bench.methods]
        if BINARY_BASELINE not in names and BINARY_BASELINE in bench.summaries:
            names.insert(0, BINARY_BASELINE)
        for method in names:
            for metric in ALPHA_METRICS:
                cell = bench.summaries[method].cell(DATASET, NO_PROPENSITY, False, metric)
                if cell is None or not cell.n:
                    continue
                low, high = cell.ci95
                points.append(AlphaPoint(method, label_of(bench, method), proto.alpha, metric,
                                         cell.n, cell.mean, low, high))
    if not points:
        raise AtrecError(f"no results of the binary-truth protocols under {base}: run 'make "
                         f"truth' or 'atrec train --protocol binary-truth --dataset {DATASET}'",
                         exit_code=3)
    return points, notices


def _cell(p: AlphaPoint | None) -> str:
    if p is None:
        return "-"
    if math.isnan(p.low):
        return f"{p.mean:.4f}"
    return f"{p.mean:.4f} [{p.low:.4f}, {p.high:.4f}]"


def alpha_rows(points: list[AlphaPoint]) -> list[dict]:
    """One row per method and alpha: seeds, then each metric's mean [95% interval]."""
    at = {(p.method, p.alpha, p.metric): p for p in points}
    rows = []
    for method in dict.fromkeys(p.method for p in points):
        label = next(p.label for p in points if p.method == method)
        for alpha in sorted({p.alpha for p in points if p.method == method}):
            found = [at.get((method, alpha, m)) for m in ALPHA_METRICS]
            row = {"method": label, "alpha": f"{alpha:g}",
                   "seeds": str(max(p.n for p in found if p is not None))}
            row.update({metric_label(m, "standard"): _cell(p)
                        for m, p in zip(ALPHA_METRICS, found)})
            rows.append(row)
    return rows


def alpha_figure(points: list[AlphaPoint]):
    """Each of :data:`ALPHA_METRICS` against alpha, one line per method (MF dashed), the 95%
    intervals as error bars."""
    fig, axes = _new_figure(len(ALPHA_METRICS), ncols=len(ALPHA_METRICS),
                            panel_size=(5.0, 4.0))
    _suptitle(fig, "Methods on the semi-synthetic ML-100K truth against the strength alpha "
                   "of the MNAR mechanism (p^alpha)")
    methods = list(dict.fromkeys(p.method for p in points))
    for ax, metric in zip(axes, ALPHA_METRICS):
        for k, method in enumerate(methods):
            mine = sorted((p for p in points if p.method == method and p.metric == metric),
                          key=lambda p: p.alpha)
            if not mine:
                continue
            x = [p.alpha + 0.012 * (k - len(methods) / 2) for p in mine]   # apart, not hidden
            y = [p.mean for p in mine]
            err = [[0.0 if math.isnan(p.low) else p.mean - p.low for p in mine],
                   [0.0 if math.isnan(p.high) else p.high - p.mean for p in mine]]
            ax.errorbar(x, y, yerr=err, marker="o", capsize=2, label=mine[0].label,
                        linestyle="--" if method == BINARY_BASELINE else "-",
                        color="black" if method == BINARY_BASELINE else None)
        ax.set_xlabel("alpha (observation probability p^alpha)")
        ax.set_ylabel(metric_label(metric, "standard"))
        ax.set_xticks(sorted({p.alpha for p in points}))
    axes[0].legend(fontsize=7)
    return fig


def alpha_report(root: Path | None = None, fmt: str = "table", figures: bool = True,
                 figures_dir: Path | None = None) -> ReportOutput:
    """The table of :func:`alpha_rows` in ``fmt`` and (``figures``) the figure
    ``truth_alpha`` (PNG, PDF) under ``figures_dir`` (default ``<results>/figures``)."""
    if fmt not in FORMATS:
        raise AtrecError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")
    points, notices = truth_by_alpha(root)
    paths: list[Path] = []
    if figures:
        out = figures_dir or (results_dir() if root is None else Path(root)) / "figures"
        paths = save_figure(alpha_figure(points), FIGURE, out)
    if fmt == "json":
        doc = {"table": "truth-alpha", "dataset": DATASET,
               "points": [asdict(p) for p in points]}
        return ReportOutput(json.dumps(json_safe(doc), indent=1), tuple(paths), tuple(notices))
    rows = alpha_rows(points)
    body = render(rows, fmt, list(rows[0]), numparse=False)
    title = "Binary methods on the semi-synthetic truth against alpha (mean [95% CI])"
    return ReportOutput(f"{heading(title, fmt)}\n{body}", tuple(paths), tuple(notices))
