"""The semi-synthetic benchmark's relative-error table and figure (``atrec semisynthetic``).

The field's layout (Schnabel et al. 2016, Wang et al. 2019, Guo et al. 2021): one row per
prediction matrix, one column per estimator, each cell the mean ± sd of the relative error over
repetitions; here blocks of rows per form, inverse propensity (``noisy``: the reference's
``0.5 / p + 0.5 / p_O``; ``true``: ``1 / p``) and truth (``realised`` labels, or ``expected``
with the rates in their place).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from atrec.reporting.figures import _new_figure
from atrec.reporting.tables import render
from atrec.semisynthetic.benchmark import PROPENSITY_KINDS, TRUTHS
from atrec.semisynthetic.estimators import ESTIMATORS
from atrec.semisynthetic.summary import FormSummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

KEYS = ("form", "w", "truth", "matrix")


def relative_error_rows(summaries: Sequence[FormSummary], fmt: str = "table",
                        digits: int = 4, truths: Sequence[str] = TRUTHS) -> list[dict]:
    """Rows of the table: ``form, w, truth, matrix`` and one cell per estimator. ``csv`` and
    ``json`` get numbers (``<estimator>`` the mean, ``<estimator> sd`` the sd); the other
    formats ``"mean ± sd"`` (``$\\pm$`` in LaTeX)."""
    numeric = fmt in ("csv", "json")
    pm = r" $\pm$ " if fmt == "latex" else " ± "
    rows = []
    for s in summaries:
        for kind in PROPENSITY_KINDS:
            for truth in truths:
                for m in s.matrices:
                    row = dict(zip(KEYS, (s.form, kind, truth, m)))
                    for e in ESTIMATORS:
                        mean, sd = s.mean[kind][truth][m][e], s.sd[kind][truth][m][e]
                        if numeric:
                            row[e], row[f"{e} sd"] = mean, sd
                        else:
                            row[e] = f"{mean:.{digits}f}{pm}{sd:.{digits}f}"
                    rows.append(row)
    return rows


def render_relative_error(summaries: Sequence[FormSummary], fmt: str = "table",
                          truths: Sequence[str] = TRUTHS) -> str:
    """The table in ``fmt`` (``table``, ``markdown``, ``latex``, ``csv``, ``json``)."""
    rows = relative_error_rows(summaries, fmt, truths=truths)
    return render(rows, fmt, numparse=False, block="form" if fmt == "latex" else None)


def relative_error_figure(summaries: Sequence[FormSummary], truth: str = "realised") -> Figure:
    """One panel per (form, inverse propensity): the mean relative error (log scale) of every
    estimator on every prediction matrix, with sd bars (clipped at the axis)."""
    if not summaries:
        raise ValueError("the figure needs at least one form's results")
    panels = [(s, kind) for s in summaries for kind in PROPENSITY_KINDS]
    fig, axes = _new_figure(len(panels), ncols=2, panel_size=(6.4, 3.4))
    fig.suptitle(f"Semi-synthetic ML-100K: relative error of the loss estimators "
                 f"(mean ± sd, {truth} truth)")
    width = 0.8 / len(ESTIMATORS)
    for ax, (s, kind) in zip(axes, panels):
        x = np.arange(len(s.matrices))
        for k, e in enumerate(ESTIMATORS):
            mean = np.array([s.mean[kind][truth][m][e] for m in s.matrices])
            sd = np.array([s.sd[kind][truth][m][e] for m in s.matrices])
            ax.bar(x + (k - (len(ESTIMATORS) - 1) / 2) * width, mean, width, label=e,
                   yerr=np.minimum(sd, mean * 0.999), capsize=1, error_kw={"linewidth": 0.6})
        ax.set_yscale("log")
        ax.set_xticks(x, s.matrices)
        ax.set_title(f"{s.form}, {kind} propensity ({len(s.seeds)} repetitions)", fontsize=10)
        ax.set_ylabel("relative error")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(ESTIMATORS), fontsize=8)
    return fig
