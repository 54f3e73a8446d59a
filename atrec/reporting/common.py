"""What the report's tables share: labels, digits, number text, marks, headings, JSON safety.

Table 1 (:mod:`.table1`), the claims (:mod:`.claims`), the report (:mod:`.report`) and the
benchmark table (:mod:`.benchmark`) write datasets, metrics and marked cells the same way
through these helpers.
"""

from __future__ import annotations

import math

from atrec.errors import AtrecError
from atrec.evaluation.registry import DIGITS  # noqa: F401  (re-exported to reports)
from atrec.evaluation.registry import DIRECTIONS as LOWER_IS_BETTER
from atrec.evaluation.registry import LABELS as METRIC_LABELS
from atrec.names import DATASET_LABELS
from atrec.propensity.registry import propensity_label

NDCG_CHOICES = ("paper", "standard", "both")
AT_LABELS = {False: "w/o AT", True: "w/ AT"}  # the two columns of each metric


def dataset_label(dataset: str, synthetic: str | None = None) -> str:
    """``Yahoo! R3`` for ``yahoo``; a dataset without a label keeps its name. ``synthetic``:
    the generator of the data the numbers came from (:func:`atrec.data.synthetic.synthetic_source`
    of their records), said beside the name, so that synthetic data installed under a
    catalogue name is never shown as the real dataset."""
    label = DATASET_LABELS.get(dataset, dataset)
    return label if synthetic is None else f"{label} (synthetic data: {synthetic})"


def config_label(dataset: str, propensity: str, with_at: bool | None = None) -> str:
    """``Coat item with AT``: one configuration in words."""
    at = "" if with_at is None else (" with AT" if with_at else " without AT")
    return f"{dataset_label(dataset)} {propensity_label(propensity)}{at}"


def signed(value: float, digits: int) -> str:
    """``value`` with a sign and ``digits`` decimals, never ``-0.000`` (rounding noise)."""
    return f"{round(value, digits) + 0.0:+.{digits}f}"


def train_hint(dataset: str, propensity: str | None = None, with_at: bool | None = None,
               method: str | None = None, protocol: str | None = None) -> str:
    """The command that produces missing results (``protocol``: a non-default protocol's
    name, given as ``--protocol``)."""
    parts = ["atrec train"] + ([f"--protocol {protocol}"] if protocol else []) + [
        f"--dataset {dataset}"]
    if method is not None:
        parts.append(f"--method {method}")
    if propensity is not None:
        parts.append(f"--propensity {propensity}")
    if with_at is not None:
        parts.append("--with-at" if with_at else "--without-at")
    return " ".join(parts)


def ndcg_metrics(ndcg: str) -> tuple[str, ...]:
    """The nDCG@3 metrics of the ``--ndcg`` choice ``ndcg``."""
    if ndcg not in NDCG_CHOICES:
        raise AtrecError(f"unknown nDCG variant '{ndcg}': choose from {', '.join(NDCG_CHOICES)}")
    return {"paper": ("ndcg3_paper",), "standard": ("ndcg3_standard",),
            "both": ("ndcg3_paper", "ndcg3_standard")}[ndcg]


def metric_label(metric: str, ndcg: str) -> str:
    """``MAE``, ``nDCG@3``; ``nDCG@3 (paper)`` when both nDCG variants show."""
    if ndcg == "both" and metric == "ndcg3_paper":
        return "nDCG@3 (paper)"
    return METRIC_LABELS[metric]


def column_name(metric: str, with_at: bool, ndcg: str) -> str:
    """``MAE w/o AT``, ``nDCG@3 (paper) w/ AT`` (``(paper)`` only when both variants show)."""
    return f"{metric_label(metric, ndcg)} {AT_LABELS[with_at]}"


def at_column_groups(metrics, ndcg: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The paper's column groups: each metric over its ``w/o AT | w/ AT`` pair of columns (for
    :func:`atrec.reporting.latex.booktabs`)."""
    return [(metric_label(m, ndcg), [(column_name(m, at, ndcg), AT_LABELS[at])
                                     for at in (False, True)]) for m in metrics]


def better_pair(metric: str, without: float | None, with_at: float | None) -> tuple[bool, bool]:
    """Which of (without, with AT) is better; neither on a tie or a missing value."""
    if without is None or with_at is None or without == with_at:
        return (False, False)
    at_wins = (with_at < without) == LOWER_IS_BETTER[metric]
    return (not at_wins, at_wins)


def mark(text: str, fmt: str) -> str:
    """A marked cell: bold in markdown and LaTeX, a trailing ``*`` in table and csv."""
    if fmt == "markdown":
        return f"**{text}**"
    if fmt == "latex":
        return f"\\textbf{{{text}}}"
    return f"{text}*"


def marker_name(fmt: str) -> str:
    """How :func:`mark` shows in ``fmt``, for legends."""
    return {"markdown": "bold", "latex": "bold"}.get(fmt, "*")


def heading(title: str, fmt: str) -> str:
    """A section title in a text format (csv: a comment line)."""
    return {"table": f"{title}\n{'=' * len(title)}", "markdown": f"## {title}",
            "latex": f"% {title}", "csv": f"# {title}"}[fmt]


def json_safe(value):
    """``value`` with every non-finite float replaced by ``None`` (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
