import dataclasses
import subprocess
import sys

import matplotlib.image
import pytest
from synthetic_records import write_records

from atrec.evaluation.summary import load_summary
from atrec.reporting.figures import (
    PANEL_TITLE_WIDTH,
    figure1,
    figure2,
    figure3,
    figure4,
    save_figure,
    write_figures,
)

# Shares and KL as docs/data.md gives them ("Rating shift between the parts").
STATS = [
    {"dataset": "yahoo", "kl": 0.4689, "train_shares": [.3139, .1272, .1576, .1555, .2457],
     "test_shares": [.5262, .2419, .1439, .0624, .0255]},
    {"dataset": "coat", "kl": 0.0490, "train_shares": [.2731, .2065, .2467, .1832, .0905],
     "test_shares": [.4050, .1938, .2159, .1381, .0472]},
]


@pytest.fixture(scope="session")
def summary(tmp_path_factory):
    root = write_records(tmp_path_factory.mktemp("records"))
    return load_summary(root, expected_seeds=5)


@pytest.fixture(scope="session")
def coat_only(tmp_path_factory):
    root = write_records(tmp_path_factory.mktemp("coat"), datasets=("coat",))
    return load_summary(root, expected_seeds=5)


def test_figure1_has_one_panel_per_dataset_with_kl_in_the_title():
    fig = figure1(STATS)
    assert len(fig.axes) == 2
    assert [ax.get_title() for ax in fig.axes] == ["Yahoo! R3 (KL = 0.469)", "Coat (KL = 0.049)"]
    heights = [p.get_height() for p in fig.axes[1].patches]
    assert heights == pytest.approx(STATS[1]["train_shares"] + STATS[1]["test_shares"])


def test_figure1_needs_statistics():
    with pytest.raises(ValueError, match="at least one dataset"):
        figure1([])


def test_figure3_and_4_have_one_panel_per_at_configuration(summary, coat_only):
    fig3, fig4 = figure3(summary), figure4(summary)
    assert len(fig3.axes) == 12 and len(fig4.axes) == 12
    assert fig3.axes[0].get_title() == "Yahoo! R3, uniform (5 seeds)"
    assert fig3.axes[-1].get_title() == "Coat, NB (true) (5 seeds)"
    assert len(fig3.axes[0].get_lines()) == 3 and len(fig4.axes[0].get_lines()) == 1
    assert len(figure3(coat_only).axes) == 6


def test_panels_of_synthetic_data_say_so(summary):
    """Where Yahoo's records (Figures 3 and 4) or its store (Figure 1) came from synthetic
    data, its panels are titled so (wrapped to the panel's width); Coat's are not."""
    stats = [{**STATS[0], "synthetic": "YAHOO_SIZE, seed 0"}, STATS[1]]
    titles = [ax.get_title() for ax in figure1(stats).axes]
    assert [t.replace("\n", " ") for t in titles] == [
        "Yahoo! R3 (synthetic data: YAHOO_SIZE, seed 0) (KL = 0.469)", "Coat (KL = 0.049)"]
    made = dataclasses.replace(summary, synthetic={"yahoo": "YAHOO_SIZE, seed 0"})
    titles = [ax.get_title() for ax in figure3(made).axes]
    assert titles[0].replace("\n", " ") == \
        "Yahoo! R3 (synthetic data: YAHOO_SIZE, seed 0), uniform (5 seeds)"
    assert all(len(line) <= PANEL_TITLE_WIDTH for t in titles for line in t.splitlines())
    assert titles[-1] == "Coat, NB (true) (5 seeds)"


def test_figure3_plots_the_mean_over_seeds(coat_only):
    ax = figure3(coat_only).axes[0]
    a_plus_b = ax.get_lines()[2].get_ydata()
    # mean over seeds of pseudo_loss + discrepancy (offsets average to 0): 1.2 at step 1, 0.6 at 100
    assert a_plus_b[0] == pytest.approx(1.2) and a_plus_b[-1] == pytest.approx(0.6)


def test_figure3_y_axis_names_what_is_plotted(coat_only):
    label = figure3(coat_only).axes[0].get_ylabel()
    assert "MSE" in label and "A1 - A2" in label and label != "value"


def test_saved_files_exist_and_decode(tmp_path):
    paths = save_figure(figure1(STATS), "fig1", tmp_path)
    assert [p.name for p in paths] == ["fig1.png", "fig1.pdf"]
    assert all(p.stat().st_size > 0 for p in paths)
    image = matplotlib.image.imread(paths[0])
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert paths[1].read_bytes().startswith(b"%PDF")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_write_figures_skips_what_it_cannot_draw(tmp_path, coat_only):
    paths, notices = write_figures(coat_only, None, tmp_path)
    assert sorted(p.name for p in paths) == ["figure3_pseudo_labelling.pdf",
                                             "figure3_pseudo_labelling.png",
                                             "figure4_test_mse.pdf", "figure4_test_mse.png"]
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
    assert len(notices) == 1 and notices[0].startswith("figure 1 skipped")


def test_write_figures_without_traces_or_statistics_writes_nothing(tmp_path):
    from atrec.evaluation.summary import summarize

    paths, notices = write_figures(summarize([]), [], tmp_path)
    assert paths == [] and len(notices) == 3
    assert "figure3 skipped: no AT traces" in notices[1]


def test_figure2_plots_ratios_and_mse_with_standard_errors(tmp_path):
    from atrec.workflows.variance import summarize_point

    def rec(seed, with_at, mse):
        return {"seed": seed, "with_at": with_at, "metrics": {"mse": mse, "mae": mse / 2}}

    # min_items 1: per-seed MSE ratios 0.5 and 0.7 -> mean 0.6; min_items 50: 0.9 and 1.1 -> 1.0
    points = [summarize_point(1, 1 / 583, 943, 1682,
                              [rec(0, False, 2.0), rec(1, False, 1.0), rec(0, True, 1.0),
                               rec(1, True, 0.7)]),
              summarize_point(50, 50 / 583, 943, 603,
                              [rec(0, False, 1.0), rec(1, False, 1.0), rec(0, True, 0.9),
                               rec(1, True, 1.1)])]
    fig = figure2(points, "default", note="settings: MF-IPS 500 steps")
    assert fig.get_supxlabel() == "settings: MF-IPS 500 steps"
    ratio_ax, mse_ax = fig.axes
    mse_ratio = ratio_ax.get_lines()[0].get_ydata()
    assert list(mse_ratio) == pytest.approx([0.6, 1.0])
    assert [t.get_text() for t in ratio_ax.get_xticklabels()] == ["1\n(0.0017)", "50\n(0.0858)"]
    # error bar of the first ratio point: mean +/- se, se = sd(0.5, 0.7) / sqrt(2) = 0.1
    caps = ratio_ax.containers[0].lines[1][0].get_ydata()
    assert sorted(caps)[:2] == pytest.approx([0.5, 0.9])
    assert list(mse_ax.get_lines()[0].get_ydata()) == pytest.approx([1.5, 1.0])
    paths = save_figure(fig, "fig2", tmp_path)
    assert matplotlib.image.imread(paths[0]).shape[0] > 100


def test_figure2_needs_points():
    with pytest.raises(ValueError, match="at least one min_items"):
        figure2([])


# --- layout: no text runs into other text or out of the figure ---------------------------------

def _text_boxes(fig) -> list[tuple[str, object]]:
    """``(what, window extent)`` of every text a reader reads: the title, and per panel its title,
    axis labels and the tick labels drawn (inside the axis' view interval), after an Agg draw."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = []

    def add(what, text):
        if text.get_visible() and text.get_text().strip():
            boxes.append((what, text.get_window_extent(renderer)))

    if fig._suptitle is not None:
        add("suptitle", fig._suptitle)
    for legend in fig.legends:
        for text in legend.get_texts():
            add(f"legend {text.get_text()}", text)
    for k, ax in enumerate(fig.axes):
        add(f"panel {k} title", ax.title)
        add(f"panel {k} xlabel", ax.xaxis.label)
        add(f"panel {k} ylabel", ax.yaxis.label)
        for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                if low <= tick.get_loc() <= high:
                    add(f"panel {k} {name} tick {tick.label1.get_text()}", tick.label1)
    return boxes


def _layout_problems(fig) -> list[str]:
    boxes = _text_boxes(fig)
    whole = fig.bbox
    problems = [f"{what} leaves the figure" for what, box in boxes
                if box.x0 < whole.x0 - 0.5 or box.y0 < whole.y0 - 0.5
                or box.x1 > whole.x1 + 0.5 or box.y1 > whole.y1 + 0.5]
    for i, (what, box) in enumerate(boxes):
        for other, obox in boxes[i + 1:]:
            if box.overlaps(obox):
                problems.append(f"{what} overlaps {other}")
        # a panel's texts stay clear of the other panels' drawing areas
        panel = what.split()[1] if what.startswith("panel") else None
        for k, ax in enumerate(fig.axes):
            if panel != str(k) and box.overlaps(ax.bbox):
                problems.append(f"{what} runs into panel {k}")
    return problems


def test_the_layout_check_sees_overlapping_labels(coat_only):
    # the check itself: a label longer than a panel on every panel, as Figure 3 once had
    fig = figure3(coat_only)
    for ax in fig.axes:
        ax.set_ylabel("(a) MSE on pseudo-labels, (b) mean |A1 - A2|, and a few more words")
    assert any("ylabel" in p for p in _layout_problems(fig))


@pytest.mark.parametrize("draw", [figure3, figure4], ids=["figure3", "figure4"])
@pytest.mark.parametrize("which", ["both-datasets", "coat", "one-panel"])
def test_trace_figures_have_no_text_overlaps_at_the_default_size(draw, which, summary, coat_only):
    chosen = {"both-datasets": summary, "coat": coat_only, "one-panel": coat_only}[which]
    if which == "one-panel":   # one AT configuration: the narrowest figure, the title wraps
        import dataclasses

        first = next(iter(chosen.traces))
        chosen = dataclasses.replace(chosen, traces={first: chosen.traces[first]})
    fig = draw(chosen)
    assert len(fig.axes) == {"both-datasets": 12, "coat": 6, "one-panel": 1}[which]
    assert _layout_problems(fig) == []


def test_figure1_has_no_text_overlaps_at_the_default_size():
    assert _layout_problems(figure1(STATS)) == []
    # one dataset: the narrowest figure, whose title once ran off both sides
    assert _layout_problems(figure1(STATS[:1])) == []


def test_the_cli_starts_without_matplotlib_and_a_figure_loads_it():
    """matplotlib costs every command about 0.3 s of CPU at start: only drawing loads it."""
    code = ("import sys, atrec.cli.app; assert 'matplotlib' not in sys.modules, 'at start'; "
            "from atrec.reporting.figures import _new_figure, _suptitle; "
            "fig, _ = _new_figure(1, 1); _suptitle(fig, 'x'); "
            "assert 'matplotlib.font_manager' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
