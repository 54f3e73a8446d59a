"""The paper's figures, drawn from result summaries and data statistics (matplotlib, Agg).

* Figure 1 (:func:`figure1`): train vs test rating distributions per dataset, KL in the title.
* Figure 2 (:func:`figure2`): the ML-100K variance experiment, ratio with / without AT of MSE
  and MAE, and both methods' MSE, against ``min_items`` (drawn by :mod:`atrec.workflows.variance`).
* Figure 3 (:func:`figure3`): (a) A3's loss on the pseudo-labels, (b) the A1/A2 discrepancy and
  (a)+(b) over the pseudo-labelling steps, mean and sd band over seeds.
* Figure 4 (:func:`figure4`): A3's test MSE over the same steps.

Figures are built as :class:`matplotlib.figure.Figure` objects without pyplot, so no global
figure state is touched and nothing needs closing; :func:`save_figure` writes PNG and PDF
atomically (temporary name, then rename) with the user's umask (:mod:`atrec.fileio`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from atrec.evaluation.summary import Summary
from atrec.fileio import atomic_write
from atrec.paths import results_dir
from atrec.propensity.registry import propensity_label
from atrec.reporting.common import dataset_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = ("png", "pdf")
PANEL_TITLE_WIDTH = 40   # characters on a line of a 4-inch panel's title
# (a) is a mean squared error and (b) a mean absolute difference, both in rating units; on two
# lines, so that the label fits the height of one panel.
FIGURE3_YLABEL = "(a) MSE on pseudo-labels\n(b) mean |A1 - A2|"


def figures_dir() -> Path:
    """Where figures are written: ``<results>/figures``."""
    return results_dir() / "figures"


def _new_figure(n_panels: int, ncols: int, panel_size=(4.0, 3.0)) -> tuple[Figure, list]:
    """A figure with exactly ``n_panels`` axes on a grid of ``ncols`` columns."""
    ncols = max(1, min(ncols, n_panels))
    nrows = -(-n_panels // ncols)
    # matplotlib takes about a second to import: only where a figure is drawn
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(panel_size[0] * ncols, panel_size[1] * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(nrows, ncols, i + 1) for i in range(n_panels)]
    return fig, axes


def _suptitle(fig: Figure, text: str) -> None:
    """``text`` as the figure's title, wrapped to the figure's width (a one-panel figure is
    narrower than a long title)."""
    import matplotlib.font_manager  # where a figure is drawn only (see _new_figure)

    size = matplotlib.rcParams["figure.titlesize"]
    points = matplotlib.font_manager.FontProperties(size=size).get_size_in_points()
    # an average character of the default sans-serif font is about 0.6 em wide
    width = max(20, int(fig.get_figwidth() * 72 / (0.6 * points)) - 4)
    fig.suptitle(textwrap.fill(text, width))


def figure1(stats: Sequence[dict]) -> Figure:
    """Rating distributions (shares of ratings 1..5) of train vs test, one panel per dataset.

    ``stats`` are :func:`atrec.data.datastats.data_stats` dicts (keys ``dataset``, ``train_shares``,
    ``test_shares`` (5 shares each), ``kl``). Paper: Figure 1, KL 0.470 (Yahoo), 0.049 (Coat).
    """
    if not stats:
        raise ValueError("figure1 needs the statistics of at least one dataset")
    fig, axes = _new_figure(len(stats), ncols=len(stats))
    _suptitle(fig, "Figure 1: rating distributions, train (MNAR) vs test (MCAR)")
    ratings = np.arange(1, 6)
    for ax, st in zip(axes, stats):
        ax.bar(ratings - 0.2, st["train_shares"], width=0.4, label="train (MNAR)")
        ax.bar(ratings + 0.2, st["test_shares"], width=0.4, label="test (MCAR)")
        name = dataset_label(st["dataset"], st.get("synthetic"))
        ax.set_title(textwrap.fill(f"{name} (KL = {st['kl']:.3f})", PANEL_TITLE_WIDTH))
        ax.set_xlabel("rating")
        ax.set_ylabel("share of ratings")
        ax.set_xticks(ratings)
        ax.legend()
    return fig


def figure2(points: Sequence, params: str = "", note: str = "") -> Figure:
    """Paper Figure 2: relative accuracy of MF-IPS with / without AT against ``min_items``.

    ``points`` are :class:`atrec.workflows.variance.VariancePoint` objects (one per ``min_items``).
    Panel (a): the per-seed ratio with AT / without AT of MSE and MAE, mean +/- standard error
    (below 1: AT is better); panel (b): MSE of both methods, mean +/- standard error. The x axis
    is logarithmic and labelled with the minimum relative propensity of each ``min_items``.
    ``note`` (e.g. the training settings) is printed small below the panels.
    """
    if not points:
        raise ValueError("figure2 needs at least one min_items point")
    fig, (ax_ratio, ax_mse) = _new_figure(2, ncols=2, panel_size=(5.2, 3.6))
    fig.suptitle("Figure 2: MovieLens 100K, MF-IPS with vs without AT (mean ± se over seeds)"
                 + (f", params: {params}" if params else ""))
    x = np.array([p.min_items for p in points], dtype=float)
    ticks = [f"{p.min_items}\n({p.min_relative_propensity:.4f})" for p in points]

    def errorbar(ax, cells, label, marker, shift):
        have = [k for k, c in enumerate(cells) if c is not None]
        if have:
            ax.errorbar(x[have] * shift, [cells[k].mean for k in have],
                        yerr=[0.0 if np.isnan(cells[k].se) else cells[k].se for k in have],
                        label=label, marker=marker, capsize=3)

    for metric, marker, shift in (("mse", "o", 0.97), ("mae", "s", 1.03)):
        errorbar(ax_ratio, [p.ratio[metric] if p.ratio else None for p in points],
                 f"{metric.upper()} w/ AT / w/o AT", marker, shift)
    if not any(p.ratio for p in points):
        ax_ratio.text(0.5, 0.5, "needs runs with and without AT", ha="center",
                      transform=ax_ratio.transAxes)
    ax_ratio.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax_ratio.set_title("(a) relative error, with / without AT")
    ax_ratio.set_ylabel("ratio (below 1: AT better)")
    errorbar(ax_mse, [p.without["mse"] if p.without else None for p in points],
             "MF-IPS", "o", 0.97)
    errorbar(ax_mse, [p.with_at["mse"] if p.with_at else None for p in points],
             "MF-IPS + AT", "s", 1.03)
    ax_mse.set_title("(b) test MSE")
    ax_mse.set_ylabel("MSE")
    for ax in (ax_ratio, ax_mse):
        ax.set_xscale("log")
        ax.set_xticks(x, ticks, fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("min_items (min relative propensity)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    if note:
        fig.supxlabel(note, fontsize=8)
    return fig


def _band(ax, series: np.ndarray, label: str) -> None:
    """Mean over seeds with a +/- sd band; ``series`` has shape ``(n_seeds, n_steps)``."""
    steps = np.arange(1, series.shape[1] + 1)
    mean = series.mean(axis=0)
    sd = series.std(axis=0, ddof=1) if series.shape[0] > 1 else np.zeros_like(mean)
    ax.plot(steps, mean, label=label)
    ax.fill_between(steps, mean - sd, mean + sd, alpha=0.25)


def _trace_figure(summary: Summary, series: Sequence[tuple[str, str]], ylabel: str,
                  title: str) -> Figure | None:
    needed = {"pseudo_loss", "discrepancy"} if any(k == "a+b" for k, _ in series) else set()
    needed |= {k for k, _ in series if k != "a+b"}
    traces = [t for t in summary.ordered_traces() if needed <= set(t.values)]
    if not traces:
        return None
    ncols = 3
    fig, axes = _new_figure(len(traces), ncols=ncols)
    _suptitle(fig, f"{title} (mean and sd band over seeds)")
    for k, (ax, trace) in enumerate(zip(axes, traces)):
        for key, label in series:
            _band(ax, trace.series(key), label)
        name = dataset_label(trace.dataset, summary.synthetic.get(trace.dataset))
        ax.set_title(textwrap.fill(f"{name}, {propensity_label(trace.propensity)} "
                                   f"({len(trace.seeds)} seeds)", PANEL_TITLE_WIDTH))
        ax.set_xlabel("pseudo-labelling step")
        if k % ncols == 0:   # one label per row: every panel plots the same quantities
            ax.set_ylabel(ylabel)
    if len(series) > 1:      # below the panels, where it covers no line; a row per panel width
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center",
                   ncols=min(len(series), len(traces), ncols))
    return fig


def figure3(summary: Summary) -> Figure | None:
    """(a) pseudo-label loss, (b) discrepancy, (a)+(b) per AT configuration (``None``: no traces).

    One panel per (dataset, propensity) with AT traces; lines are means over seeds, bands +/- sd.
    """
    return _trace_figure(summary, [("pseudo_loss", "(a) loss on pseudo-labels"),
                                   ("discrepancy", "(b) discrepancy |A1 - A2|"),
                                   ("a+b", "(a) + (b)")], FIGURE3_YLABEL,
                         "Figure 3: pseudo-labelling losses of asymmetric tri-training")


def figure4(summary: Summary) -> Figure | None:
    """A3's test MSE over the pseudo-labelling steps per AT configuration (``None``: no traces)."""
    return _trace_figure(summary, [("test_mse", "test MSE of A3")], "test MSE",
                         "Figure 4: test MSE of A3 over pseudo-labelling")


def save_figure(fig: Figure, name: str, out_dir: Path | None = None) -> list[Path]:
    """Write ``fig`` as ``<out_dir>/<name>.png`` and ``.pdf`` atomically; return the paths."""
    out_dir = figures_dir() if out_dir is None else Path(out_dir)
    paths = []
    for ext in FORMATS:
        path = out_dir / f"{name}.{ext}"
        atomic_write(path, lambda tmp, ext=ext: fig.savefig(tmp, format=ext, dpi=150))
        paths.append(path)
    return paths


def write_figures(summary: Summary, stats: Sequence[dict] | None,
                  out_dir: Path | None = None) -> tuple[list[Path], list[str]]:
    """Draw and save every figure the inputs allow; return ``(paths, notices)``.

    A figure whose inputs are absent (no data statistics, no AT traces) is skipped with a notice.
    """
    paths: list[Path] = []
    notices: list[str] = []
    if stats:
        paths += save_figure(figure1(stats), "figure1_rating_distributions", out_dir)
    else:
        notices.append("figure 1 skipped: no data statistics (run 'atrec preprocess' first)")
    # Figure 2 (ML-100K variance experiment) needs its own runs: atrec.workflows.variance.run_variance
    # draws it with figure2() and writes it with save_figure (as 'figure2_variance').
    for name, draw in (("figure3_pseudo_labelling", figure3), ("figure4_test_mse", figure4)):
        fig = draw(summary)
        if fig is None:
            notices.append(f"{name.split('_')[0]} skipped: no AT traces in these results")
        else:
            paths += save_figure(fig, name, out_dir)
    return paths, notices
