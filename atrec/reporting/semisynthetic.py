"""The semi-synthetic benchmark's relative-error table and figure (``atrec semisynthetic``).

The field's layout (Schnabel et al. 2016, Wang et al. 2019, Guo et al. 2021): one row per
prediction matrix, one column per estimator, each cell the mean ± sd of the relative error over
repetitions; here blocks of rows per form, inverse propensity (``noisy``: the reference's
``0.5 / p + 0.5 / p_O``; ``true``: ``1 / p``) and truth (``realised`` labels, or ``expected``
with the rates in their place). The 1-5 star version (Schnabel et al. 2016) has its own table:
rows per loss (MAE, MSE) and matrix, Naive, IPS and SNIPS with the true propensity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from atrec.reporting.figures import _new_figure
from atrec.reporting.tables import render
from atrec.semisynthetic.benchmark import PROPENSITY_KINDS, TRUTHS
from atrec.semisynthetic.estimators import ESTIMATORS
from atrec.semisynthetic.stars import LOSSES, STAR_ESTIMATORS
from atrec.semisynthetic.summary import FormSummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

KEYS = ("form", "w", "truth", "matrix")
STAR_KEYS = ("loss", "matrix")


def _cells(row: dict, means: dict, sds: dict, estimators, fmt: str, digits: int) -> dict:
    """``row`` with one cell per estimator: numbers for csv/json (``<estimator>`` the mean,
    ``<estimator> sd`` the sd), ``"mean ± sd"`` otherwise (``$\\pm$`` in LaTeX)."""
    pm = r" $\pm$ " if fmt == "latex" else " ± "
    for e in estimators:
        if fmt in ("csv", "json"):
            row[e], row[f"{e} sd"] = means[e], sds[e]
        else:
            row[e] = f"{means[e]:.{digits}f}{pm}{sds[e]:.{digits}f}"
    return row


def relative_error_rows(summaries: Sequence[FormSummary], fmt: str = "table",
                        digits: int = 4, truths: Sequence[str] = TRUTHS) -> list[dict]:
    """Rows of the binary table: ``form, w, truth, matrix`` and one cell per estimator
    (:func:`_cells`)."""
    rows = []
    for s in summaries:
        for kind in PROPENSITY_KINDS:
            for truth in truths:
                for m in s.matrices:
                    rows.append(_cells(dict(zip(KEYS, (s.form, kind, truth, m))),
                                       s.mean[kind][truth][m], s.sd[kind][truth][m],
                                       ESTIMATORS, fmt, digits))
    return rows


def star_rows(summary: FormSummary, fmt: str = "table", digits: int = 4) -> list[dict]:
    """Rows of the 1-5 star table: ``loss, matrix`` and one cell per estimator of
    :data:`~atrec.semisynthetic.stars.STAR_ESTIMATORS` (true propensity), as
    :func:`relative_error_rows` formats them."""
    return [_cells(dict(zip(STAR_KEYS, (loss, m))), summary.mean[loss][m], summary.sd[loss][m],
                   STAR_ESTIMATORS, fmt, digits)
            for loss in LOSSES for m in summary.matrices]


def render_stars(summary: FormSummary, fmt: str = "table") -> str:
    """The 1-5 star table in ``fmt``."""
    return render(star_rows(summary, fmt), fmt, numparse=False,
                  block="loss" if fmt == "latex" else None)


def render_relative_error(summaries: Sequence[FormSummary], fmt: str = "table",
                          truths: Sequence[str] = TRUTHS) -> str:
    """The table in ``fmt`` (``table``, ``markdown``, ``latex``, ``csv``, ``json``)."""
    rows = relative_error_rows(summaries, fmt, truths=truths)
    return render(rows, fmt, numparse=False, block="form" if fmt == "latex" else None)


def relative_error_figure(summaries: Sequence[FormSummary], stars: FormSummary | None = None,
                          truth: str = "realised") -> Figure:
    """One panel per (binary form, inverse propensity) and per loss of the star version: the
    mean relative error (log scale) of every estimator on every prediction matrix, with sd bars
    (clipped at the axis)."""
    panels = [(s, kind, ESTIMATORS, lambda s, kind, m, e: (s.mean[kind][truth][m][e],
                                                          s.sd[kind][truth][m][e]),
               f"{s.form}, {kind} propensity") for s in summaries for kind in PROPENSITY_KINDS]
    if stars is not None:
        panels += [(stars, loss, STAR_ESTIMATORS,
                    lambda s, loss, m, e: (s.mean[loss][m][e], s.sd[loss][m][e]),
                    f"1-5 stars, {loss}, true propensity") for loss in LOSSES]
    if not panels:
        raise ValueError("the figure needs at least one form's results")
    fig, axes = _new_figure(len(panels), ncols=2, panel_size=(6.4, 3.4))
    fig.suptitle(f"Semi-synthetic ML-100K: relative error of the loss estimators "
                 f"(mean ± sd, {truth} truth)")
    for ax, (s, part, estimators, cell, title) in zip(axes, panels):
        x = np.arange(len(s.matrices))
        width = 0.8 / len(estimators)
        for k, e in enumerate(estimators):
            mean, sd = np.array([cell(s, part, m, e) for m in s.matrices]).T
            ax.bar(x + (k - (len(estimators) - 1) / 2) * width, mean, width, label=e,
                   color=f"C{ESTIMATORS.index(e)}",
                   yerr=np.minimum(sd, mean * 0.999), capsize=1, error_kw={"linewidth": 0.6})
        ax.set_yscale("log")
        ax.set_xticks(x, s.matrices, fontsize=8)
        ax.set_title(f"{title} ({len(s.seeds)} repetitions)", fontsize=10)
        ax.set_ylabel("relative error")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8)
    return fig
