"""Aggregate per-run result records into cells: one cell per configuration and metric.

A *cell* is (dataset, propensity, with/without AT, parameter set, metric) together with the
per-seed values of that metric (ordered by seed), their mean, sample standard deviation
(``ddof=1``) and a t-based 95% confidence interval of the mean::

    mean +/- t_{0.975, n-1} * sd / sqrt(n)

Records made with different parameter sets (``published``, ``tuned``, a parameter file) are never
averaged together: a summary holds one parameter set, chosen by its label (see
:func:`resolve_params_label`). A cell with fewer seeds than requested is kept and reported with a
warning in :attr:`Summary.warnings`; it is not an error.

The records come from :func:`atrec.results.records.iter_records`; their format is described in
:mod:`atrec.results.records`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from atrec.data.synthetic import synthetic_source
from atrec.errors import AtrecError
from atrec.evaluation.fits import failed_fits, is_binary_record, record_failure
from atrec.evaluation.registry import METRICS as METRIC_REGISTRY
from atrec.evaluation.registry import metric_order, metrics_in
from atrec.methods.registry import base_method
from atrec.names import (  # noqa: F401
    DEFAULT_METHOD,
    DEFAULT_PROTOCOL,
    LOWER_IS_BETTER,
    METRICS,
    TABLE_DATASETS,
    TRACE_NAMES,
)
from atrec.propensity.registry import propensity_order
from atrec.evaluation.record_checks import check_record, describe_record
from atrec.params.lookup import NAMED_SETS, PUBLISHED
from atrec.results.records import iter_records, params_label, record_label

TRACE_KEYS = TRACE_NAMES   # the AT traces a summary stacks (atrec.names)
EXPECTED_SEEDS = 20


def resolve_params_label(params: str) -> str:
    """The folder label of a ``--params`` value: ``published``, ``tuned``, or a file's label.

    A file path is labelled as :func:`atrec.params.lookup.load_param_table` labels it when training
    (``file:<absolute path>`` hashed by :func:`atrec.results.records.params_label`); an already formed
    ``file-<hash>`` label is returned unchanged. A protocol variant suffix (``published+ips``,
    ``tuned+per-seed``, see :func:`atrec.results.records.variant_suffix`) is kept.
    """
    if "+" in params and not Path(params).exists():
        base, _, variant = params.partition("+")
        return resolve_params_label(base) + "+" + variant
    if params in NAMED_SETS or params.startswith("file-"):
        return params
    if not params or not Path(params).is_file():
        what = "empty --params value" if not params else f"unknown parameter set '{params}'"
        raise AtrecError(f"{what}: give one of {', '.join(NAMED_SETS)}, a parameter file that "
                         f"exists, or a file-<hash> label (the folder name under runs/)")
    return params_label(f"file:{Path(params).resolve()}")


@dataclass(frozen=True)
class Cell:
    """The values of one metric for one configuration, over seeds.

    ``seeds`` and ``values`` are parallel tuples of length ``n``, ordered by seed.
    """

    dataset: str
    propensity: str
    with_at: bool
    params: str
    metric: str
    seeds: tuple[int, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.seeds) != len(self.values):
            raise ValueError(
                f"seeds and values must have equal lengths, got {len(self.seeds)} and "
                f"{len(self.values)}"
            )
        if list(self.seeds) != sorted(set(self.seeds)):
            raise ValueError(f"seeds must be unique and increasing, got {self.seeds}")
        if self.metric not in METRIC_REGISTRY.names():
            raise ValueError(f"unknown metric {self.metric!r}: choose from "
                             f"{', '.join(METRIC_REGISTRY.names())}")

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else math.nan

    @property
    def sd(self) -> float:
        """Sample standard deviation (ddof=1); NaN with fewer than two seeds."""
        return float(np.std(self.values, ddof=1)) if self.n >= 2 else math.nan

    @property
    def se(self) -> float:
        """Standard error of the mean, ``sd / sqrt(n)``; NaN with fewer than two seeds."""
        return self.sd / math.sqrt(self.n) if self.n >= 2 else math.nan

    @property
    def ci95(self) -> tuple[float, float]:
        """t-based 95% confidence interval of the mean; ``(nan, nan)`` with fewer than two seeds."""
        if self.n < 2:
            return (math.nan, math.nan)
        from scipy import stats  # 1.5 s to import: only where an interval is asked for

        half = float(stats.t.ppf(0.975, self.n - 1)) * self.se
        return (self.mean - half, self.mean + half)

    def as_row(self) -> dict:
        low, high = self.ci95
        return {
            "dataset": self.dataset, "propensity": self.propensity, "with_at": self.with_at,
            "params": self.params, "metric": self.metric, "n": self.n, "mean": self.mean,
            "sd": self.sd, "ci95_low": low, "ci95_high": high,
        }


@dataclass(frozen=True)
class Trace:
    """AT pseudo-labelling traces of one (dataset, propensity) over seeds.

    ``values[key]`` has shape ``(n_seeds, n_steps)`` for each key of :data:`TRACE_KEYS` present
    in the records; row ``j`` belongs to ``seeds[j]``. Seeds whose traces are shorter than the
    longest are cut to the common length (with a warning in the summary).
    """

    dataset: str
    propensity: str
    seeds: tuple[int, ...]
    values: dict

    @property
    def n_steps(self) -> int:
        return next(iter(self.values.values())).shape[1] if self.values else 0

    def series(self, key: str) -> np.ndarray:
        """Shape ``(n_seeds, n_steps)``. ``key`` may be ``a+b`` (pseudo_loss + discrepancy)."""
        if key == "a+b":
            return self.values["pseudo_loss"] + self.values["discrepancy"]
        return self.values[key]


@dataclass(frozen=True)
class Summary:
    """All cells (and AT traces) of one parameter set and one base method.

    ``cells`` maps ``(dataset, propensity, with_at, metric)`` to a :class:`Cell`;
    ``traces`` maps ``(dataset, propensity)`` to a :class:`Trace`; ``datasets`` lists the
    datasets that were asked for (in the paper's order); ``warnings`` holds one line per
    incomplete cell or odd record; ``synthetic`` maps a dataset whose records came from
    generated data to the generator they name (:func:`atrec.data.synthetic.synthetic_source`),
    so that a report never shows synthetic numbers under the real dataset's name.
    """

    params: str
    datasets: tuple[str, ...]
    expected_seeds: int
    cells: dict = field(default_factory=dict)
    traces: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    method: str = DEFAULT_METHOD
    synthetic: dict = field(default_factory=dict)
    # (dataset, propensity, with_at) -> {seed: why its fit failed}: left out of every cell
    failed: dict = field(default_factory=dict)
    # (dataset, propensity, with_at, metric) -> {seed: [resamples] values over test users}
    bootstrap: dict = field(default_factory=dict)

    def failed_seeds(self, dataset: str, propensity: str, with_at: bool) -> dict:
        """``{seed: reason}`` of a configuration's failed fits (atrec.evaluation.fits)."""
        return self.failed.get((dataset, propensity, bool(with_at)), {})

    def cell(self, dataset: str, propensity: str, with_at: bool, metric: str) -> Cell | None:
        """The cell, or ``None`` when there are no results for it."""
        return self.cells.get((dataset, propensity, bool(with_at), metric))

    def mean(self, dataset: str, propensity: str, with_at: bool, metric: str) -> float | None:
        """The cell's mean, or ``None`` when there are no results for it."""
        c = self.cell(dataset, propensity, with_at, metric)
        return c.mean if c is not None and c.n else None

    def ordered_traces(self) -> list[Trace]:
        """The AT traces with at least one step, in table order (dataset, then propensity)."""
        keys = sorted(self.traces, key=lambda k: _cell_order((*k, True, "mae")))
        return [self.traces[k] for k in keys if self.traces[k].n_steps > 0]

    def has_results(self, dataset: str | None = None) -> bool:
        return any(dataset is None or key[0] == dataset for key in self.cells)

    def rows(self) -> list[dict]:
        """One row per cell (for ``--format``), in table order."""
        return [self.cells[k].as_row() for k in sorted(self.cells, key=_cell_order)]


def dataset_order(dataset: str) -> tuple:
    """Yahoo, then Coat (the paper's order), then any other dataset by name."""
    rank = TABLE_DATASETS.index(dataset) if dataset in TABLE_DATASETS else len(TABLE_DATASETS)
    return (rank, dataset)


def _cell_order(key: tuple) -> tuple:
    dataset, propensity, with_at, metric = key
    p = propensity_order(propensity)
    return (*dataset_order(dataset), p, propensity, with_at, metric_order(metric))


def summarize(records: Iterable[dict], params: str = PUBLISHED,
              datasets: Iterable[str] | None = None,
              expected_seeds: int = EXPECTED_SEEDS, method: str = DEFAULT_METHOD) -> Summary:
    """Aggregate ``records`` of the parameter set labelled ``params`` and of the base method
    ``method`` (with and without AT; records made before methods were named are MF-IPS's)
    into a :class:`Summary`.

    Records of other parameter sets and of datasets outside ``datasets`` (default: all) are
    ignored. A metric that is missing or not finite in a record leaves that seed out of that
    cell (with a warning). Cells with fewer than ``expected_seeds`` seeds get a warning.
    """
    if expected_seeds < 1:
        raise ValueError(f"expected_seeds must be >= 1, got {expected_seeds}")
    wanted = None if datasets is None else tuple(datasets)
    values: dict[tuple, dict[int, float]] = {}
    traces: dict[tuple, dict[int, dict]] = {}
    notes: list[str] = []
    synthetic: dict[str, str] = {}
    binary: set[tuple] = set()           # configurations of a binary protocol's records
    boot: dict[tuple, dict[int, np.ndarray]] = {}
    failures: dict[tuple, dict[int, str]] = {}
    for record in records:
        check_record(record)
        if wanted is not None and record["dataset"] not in wanted:
            continue
        if record_label(record) != params or base_method(record) != method:
            continue
        dataset, propensity = record["dataset"], record["propensity"]
        source = synthetic_source((record.get("provenance") or {}).get("data_checksums"))
        if source is not None:
            synthetic.setdefault(dataset, source)
        with_at, seed = bool(record["with_at"]), int(record["seed"])
        if is_binary_record(record):
            binary.add((dataset, propensity, with_at))
            block = (record.get("bootstrap") or {}).get("metrics") or {}
            for metric, draws in block.items():
                boot.setdefault((dataset, propensity, with_at, metric), {}).setdefault(
                    seed, np.asarray(draws, np.float64))
            reason = record_failure(record)
            if reason:
                failures.setdefault((dataset, propensity, with_at), {})[seed] = reason
        for metric in metrics_in([record]):
            value = record["metrics"].get(metric)
            if value is None:
                continue
            if not math.isfinite(float(value)):
                notes.append(f"{describe_record(record)}: {metric} is {value}; left out of the mean")
                continue
            slot = values.setdefault((dataset, propensity, with_at, metric), {})
            if seed in slot:
                notes.append(f"{describe_record(record)}: duplicate record; the first one is used")
                continue
            slot[seed] = float(value)
        if with_at and record.get("trace"):
            traces.setdefault((dataset, propensity), {}).setdefault(seed, record["trace"])
    failed = failed_fits(values, failures, binary)
    for config, seeds in sorted(failed.items(), key=lambda kv: _cell_order((*kv[0], "mae"))):
        for seed, reason in sorted(seeds.items()):
            notes.append(f"{config[0]}/{config[1]}{' with AT' if config[2] else ''} seed "
                         f"{seed}: failed fit ({reason}); counted apart, left out of the means "
                         f"and tests")
        for table in (values, boot):
            for key in [k for k in table if k[:3] == config]:
                table[key] = {s: v for s, v in table[key].items() if s not in seeds}
                if not table[key]:
                    del table[key]
    cells = {}
    for key, by_seed in values.items():
        seeds = tuple(sorted(by_seed))
        cells[key] = Cell(*key[:3], params=params, metric=key[3], seeds=seeds,
                          values=tuple(by_seed[s] for s in seeds))
    seen_configs = set()
    for key in sorted(cells, key=_cell_order):
        config = key[:3]
        if config in seen_configs:
            continue
        seen_configs.add(config)
        n = max(c.n for k, c in cells.items() if k[:3] == config)
        if n < expected_seeds:
            notes.append(
                f"{config[0]}/{config[1]}{' with AT' if config[2] else ''}: {n} of "
                f"{expected_seeds} seeds; run the missing seeds for a full table"
            )
    trace_objs = {key: _stack_traces(key, by_seed, notes) for key, by_seed in traces.items()}
    chosen = wanted if wanted is not None else tuple(sorted({k[0] for k in cells},
                                                             key=dataset_order))
    return Summary(params=params, datasets=chosen, expected_seeds=expected_seeds,
                   cells=cells, traces=trace_objs, warnings=tuple(notes), method=method,
                   synthetic=synthetic, failed=failed, bootstrap=boot)


def merge_summaries(summaries: list[Summary]) -> Summary:
    """One method's summaries of several parameter sets merged in chain order: each
    configuration ``(dataset, propensity, with_at)`` takes all its cells (and its trace) from
    the first summary that has it, so each :class:`Cell` still names its set (``params``).
    The merged ``params`` lists the sets used; warnings come from the summaries used."""
    first = summaries[0]
    cells, traces, used, failed, boot = {}, {}, [], {}, {}
    for s in summaries:
        # a configuration whose every seed failed has no cell but is this set's result
        configs = ({k[:3] for k in s.cells} | set(s.failed)) - {k[:3] for k in cells} \
            - set(failed)
        if not configs:
            continue
        used.append(s)
        cells.update({k: c for k, c in s.cells.items() if k[:3] in configs})
        failed.update({k: v for k, v in s.failed.items() if k in configs})
        boot.update({k: v for k, v in s.bootstrap.items() if k[:3] in configs})
        traces.update({k: t for k, t in s.traces.items() if (*k, True) in configs})
    datasets = tuple(dict.fromkeys(d for s in summaries for d in s.datasets))
    synthetic: dict[str, str] = {}
    for s in used:
        for dataset, source in s.synthetic.items():
            synthetic.setdefault(dataset, source)
    return Summary(params=", ".join(s.params for s in (used or summaries)), datasets=datasets,
                   expected_seeds=first.expected_seeds, cells=cells, traces=traces,
                   warnings=tuple(w for s in used for w in s.warnings), method=first.method,
                   synthetic=synthetic, failed=failed, bootstrap=boot)


def _stack_traces(key: tuple, by_seed: dict[int, dict], notes: list[str]) -> Trace:
    seeds = tuple(sorted(by_seed))
    keys = [k for k in TRACE_KEYS if all(k in by_seed[s] for s in seeds)]
    lengths = {len(by_seed[s][k]) for s in seeds for k in keys}
    n_steps = min(lengths) if lengths else 0
    if len(lengths) > 1:
        notes.append(f"{key[0]}/{key[1]} with AT: traces have {sorted(lengths)} steps; "
                     f"the first {n_steps} are used")
    arrays = {k: np.array([np.asarray(by_seed[s][k], dtype=float)[:n_steps] for s in seeds])
              for k in keys}
    return Trace(dataset=key[0], propensity=key[1], seeds=seeds, values=arrays)


def load_summary(root: Path | None = None, datasets: Iterable[str] | None = None,
                 params: str = PUBLISHED, expected_seeds: int = EXPECTED_SEEDS,
                 method: str = DEFAULT_METHOD) -> Summary:
    """Read the records under ``root`` (default: the results folder) and summarize them.

    ``params`` is a ``--params`` value (``published``, ``tuned`` or a parameter file path), or
    several comma-separated: each configuration then from the first set that has its results
    (:func:`merge_summaries`). ``datasets`` default: every dataset that has records of them.
    """
    labels = [resolve_params_label(p.strip()) for p in str(params).split(",") if p.strip()]
    if not labels:
        raise AtrecError("empty --params value: give a parameter set, or several comma-separated")
    wanted = None if datasets is None else tuple(datasets)
    if wanted is None:
        records = list(iter_records(root))
    else:
        records = [r for d in wanted for r in iter_records(root, d)]
    return merge_summaries([summarize(records, params=label, datasets=wanted,
                                      expected_seeds=expected_seeds, method=method)
                            for label in labels])
