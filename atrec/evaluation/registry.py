"""The registry of metrics: what a record's ``metrics`` block may hold, each metric's label, its
direction and how it is computed.

A :class:`Metric` is a named, validated object. Its ``kind`` says where its value comes from:

- ``selected``: an error measured on the evaluated test set at the step the protocol selects
  (MSE, MAE); the compiled training loops compute it, :attr:`Metric.compute` is the same
  definition on plain arrays (tests, plug-ins);
- ``ranking``: a per-user ranking metric computed after training from the model's ranking
  scores (final parameters) on the test part the protocol names;
- ``scored``: a metric over all test rows pooled, computed after training from the same scores
  (the binary protocols' AUC and log loss, on predicted probabilities).

:data:`BINARY_REFERENCE_METRICS` and :data:`BINARY_CLEAN_METRICS` (their home is
:mod:`atrec.protocols.binary`, re-exported here) name the binary protocols' metrics
(:mod:`atrec.evaluation.binary_metrics`).

A protocol (:mod:`atrec.protocols`) names its metrics; reports, the benchmark table, the paired
tests and the export show whatever registered metrics the records carry, in registry order.
Installed packages add metrics through the entry-point group ``atrec.metrics`` (a
:class:`Metric` or a list of them; :mod:`atrec.registry`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from atrec.evaluation import binary_metrics as bm
from atrec.evaluation import metrics as m
from atrec.evaluation import truth_metrics as tm
from atrec.names import LOWER_IS_BETTER, METRIC_LABELS
from atrec.protocols.binary import (  # noqa: F401  (re-exported)
    BINARY_CLEAN_METRICS,
    BINARY_REFERENCE_METRICS,
)
from atrec.registry import Registry

KINDS = ("selected", "ranking", "scored")
AFTER_TRAINING = ("ranking", "scored")   # the kinds ranking_values computes from final scores
METRIC_NAME = re.compile(r"[a-z][a-z0-9_]*")   # record keys: ndcg3_paper


@dataclass(frozen=True)
class Metric:
    """One metric: ``name`` (its key in records), ``label`` (its column), ``lower_is_better``,
    ``kind`` (module doc), ``digits`` shown in tables and ``compute(users, ratings, values)``
    with arrays ``(n,)`` (``values``: predictions for ``selected``, ranking scores for
    ``ranking`` and ``scored``) returning a float."""

    name: str
    label: str
    lower_is_better: bool
    kind: str
    compute: Callable
    digits: int = 4
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"metric {self.name!r}: kind must be one of {', '.join(KINDS)}, "
                             f"got {self.kind!r}")
        if not callable(self.compute):
            raise TypeError(f"metric {self.name!r}: compute must be callable")
        if not isinstance(self.label, str) or not self.label:
            raise ValueError(f"metric {self.name!r} needs a non-empty label")


def _validate(obj) -> None:
    if not isinstance(obj, Metric):
        raise TypeError(f"{obj!r} is not an atrec.evaluation.registry.Metric")


def _mse(users, ratings, predictions) -> float:
    return m.weighted_mean(m.squared_errors(ratings, predictions))


def _mae(users, ratings, predictions) -> float:
    return m.weighted_mean(m.absolute_errors(ratings, predictions))


def _saito(name: str, kind: str, compute: Callable, digits: int, description: str) -> Metric:
    """A metric of saito2020's records, labelled and directed as :mod:`atrec.names` says."""
    return Metric(name, METRIC_LABELS[name], LOWER_IS_BETTER[name], kind, compute, digits,
                  description)


BUILT_IN = (
    _saito("mae", "selected", _mae, 3,
           "mean absolute error on the evaluated test set at the selected step"),
    _saito("mse", "selected", _mse, 3,
           "mean squared error on the evaluated test set at the selected step"),
    _saito("ndcg3_paper", "ranking", functools.partial(m.ndcg_at_k, k=3, variant="paper"), 4,
           "the Saito 2020 code's nDCG@3 (mixed gains)"),
    _saito("ndcg3_standard", "ranking", functools.partial(m.ndcg_at_k, k=3, variant="standard"),
           4, "nDCG@3 with gain 2^r - 1 and discount 1/log2(rank + 1)"),
    Metric("ndcg5_ijcai", "nDCG@5", False, "ranking",
           functools.partial(m.ndcg_exp_at_k, k=5), 4,
           "the IJCAI 2022 code's nDCG@5: gain 2^(r-1), k = min(5, #items)"),
    Metric("recall5_ijcai", "Recall@5", False, "ranking",
           functools.partial(m.rating_recall_at_k, k=5), 4,
           "the IJCAI 2022 code's rating-weighted Recall@5"),
)

# the binary protocols' top-K metrics: {record key: (top_k_values key, label, formula, who counts)}
_ALL = "mean over all test users (the ICDE 2024 code's convention)"
_POS = "mean over the users with a positive test item only"
_F1 = "F1@5 = 2 / (1/P + 1/R) from the means P of {} and R of {} (0 when either is 0)"
BINARY_TOP_K = {
    "ndcg5_ref": ("ndcg_ref", "nDCG@5 (ref)", "nDCG@5 on 0/1 labels",
                  "a user without a positive test item counts as 1; " + _ALL),
    "recall5_ref": ("recall_ref", "Recall@5 (ref)", "Recall@5 = hits / max(1, #positives)",
                    "a user without a positive test item counts 0; " + _ALL),
    "precision5": ("precision", "Precision@5 (ref)", "Precision@5 = hits / 5", _ALL),
    "f1_5_ref": ("f1_ref", "F1@5 (ref)", _F1.format("precision5", "recall5_ref"), _ALL),
    "ndcg5": ("ndcg", "nDCG@5", "nDCG@5 on 0/1 labels", _POS),
    "recall5": ("recall", "Recall@5", "Recall@5 = hits / #positives", _POS),
    "precision5_std": ("precision_std", "Precision@5", "Precision@5 = hits / 5", _POS),
    "f1_5": ("f1", "F1@5", _F1.format("precision5_std", "recall5"), _POS),
}

BINARY = (
    Metric("logloss", "Log loss", True, "scored", bm.log_loss, 4,
           "mean binary cross-entropy of the predicted probability, clipped to"
           f" [{bm.LOG_LOSS_CLIP:g}, 1 - {bm.LOG_LOSS_CLIP:g}]"),
    Metric("auc", "AUC", False, "scored", bm.global_auc, 4,
           "global AUC over all test rows pooled, ties counting 1/2 (scikit-learn's"
           " roc_auc_score); NaN when the test labels are all one class"),
    Metric("auc_user", "AUC (per user)", False, "ranking", bm.user_auc, 4,
           "mean over the test users with a positive and a negative of each user's own AUC,"
           " ties counting 1/2; no user main effect can raise it"),
    *(Metric(name, label, False, "ranking",
             functools.partial(bm.top_k_metric, key=key, k=bm.BINARY_K), 4,
             f"{formula}, top {bm.BINARY_K} by probability with ties in test-row order; {who}")
      for name, (key, label, formula, who) in BINARY_TOP_K.items()),
)

# the binary-truth protocols' metrics (atrec.protocols.truth): against every cell's true rate
_TRUTH = "over all users x items, against the true rates c (the semi-synthetic truth)"
TRUTH = (
    Metric("truth_logloss", "Log loss (truth)", True, "scored", tm.expected_log_loss, 4,
           "cross-entropy expected under y ~ Bernoulli(c), " + _TRUTH),
    Metric("truth_auc", "AUC (truth)", False, "scored", tm.weighted_auc, 4,
           "AUC with each (positive, negative) pair weighted c_i (1 - c_j), ties 1/2, "
           + _TRUTH),
    Metric("truth_ndcg5", "nDCG@5 (truth)", False, "ranking",
           functools.partial(tm.truth_top_k_metric, key="ndcg", k=bm.BINARY_K), 4,
           "per-user nDCG@5 with gains c, " + _TRUTH),
    Metric("truth_recall5", "Recall@5 (truth)", False, "ranking",
           functools.partial(tm.truth_top_k_metric, key="recall", k=bm.BINARY_K), 4,
           "per-user sum of c in the top 5 / sum of c, " + _TRUTH),
    Metric("truth_user_auc", "User AUC (truth)", False, "ranking", tm.user_auc, 4,
           "the weighted AUC within each user, averaged, " + _TRUTH),
)

METRICS = Registry("metric", "atrec.metrics", _validate, pattern=METRIC_NAME)


def _builtins() -> None:
    for metric in BUILT_IN + BINARY + TRUTH:
        METRICS.register(metric)


METRICS.builtins(_builtins)


def get_metric(name: str) -> Metric:
    """The metric called ``name``; an unknown name is a one-line AtrecError."""
    return METRICS.get(name)


def metric_names() -> tuple[str, ...]:
    return METRICS.names()


def metric_order(name: str) -> tuple:
    """Sort key: registry order, then unknown names by name."""
    names = METRICS.names()
    return (names.index(name) if name in names else len(names), name)


def metrics_in(records: Iterable[dict]) -> tuple[str, ...]:
    """The registered metrics that at least one of ``records`` carries, in registry order."""
    seen: set[str] = set()
    names = set(METRICS.names())
    for record in records:
        block = record.get("metrics") if isinstance(record, dict) else None
        if isinstance(block, dict):
            seen.update(k for k in block if k in names)
    return tuple(sorted(seen, key=metric_order))


def ranking_values(names: Iterable[str], users: np.ndarray, ratings: np.ndarray,
                   scores: np.ndarray) -> dict[str, float]:
    """``{name: value}`` of the ``ranking`` and ``scored`` metrics ``names`` for one model's
    ``scores`` ``(n,)``, in the order of ``names``.

    The Saito 2020 nDCG@3 pair is computed together (one sort for both, bit for bit what the
    records held before metrics were registered), so are the binary top-K metrics (one sort);
    any other metric by its ``compute``.
    """
    names = list(names)
    out: dict[str, float] = {}
    pair = [n for n in ("ndcg3_paper", "ndcg3_standard") if n in names]
    if pair:
        both = m.ndcg_variants(users, ratings, scores, 3, tuple(n.split("_")[1] for n in pair))
        out.update({n: both[n.split("_")[1]] for n in pair})
    top = [n for n in names if n in BINARY_TOP_K]
    if top:
        values = bm.top_k_values(users, ratings, scores, bm.BINARY_K)
        out.update({n: values[BINARY_TOP_K[n][0]] for n in top})
    for name in names:
        if name not in out:
            metric = get_metric(name)
            if metric.kind not in AFTER_TRAINING:
                raise ValueError(f"metric {name!r} is not computed from the final scores")
            out[name] = float(metric.compute(users, ratings, scores))
    return {name: out[name] for name in names}   # in the order asked


class MetricField(Mapping):
    """A read-only ``{metric name: field}`` view of the registry (``label``,
    ``lower_is_better``, ``digits``), so tables read plug-in metrics as they read atrec's."""

    def __init__(self, field: str) -> None:
        self._field = field

    def _table(self) -> dict:
        return {e.name: getattr(e.cls, self._field) for e in METRICS.entries()}

    def __getitem__(self, name: str):
        return self._table()[name]

    def __iter__(self):
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


LABELS = MetricField("label")
DIRECTIONS = MetricField("lower_is_better")   # True: lower is better
DIGITS = MetricField("digits")
