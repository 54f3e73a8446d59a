"""The binary tables' intervals over test users and seeds (:mod:`atrec.evaluation.bootstrap`):
each row's 95% interval of its mean, and of its difference against the baseline paired by seed
and by test-user resample, for the metrics the records' ``bootstrap`` blocks hold. Shown under
the benchmark table (:mod:`atrec.reporting.benchmark_render`) and the protocol-gap report
(:mod:`atrec.reporting.protocol_gap`).
"""

from __future__ import annotations

from atrec.evaluation.bootstrap import BOOTSTRAP_METRICS, paired_interval, seed_user_interval
from atrec.reporting.common import metric_label

TITLE = ("95% intervals over test users and seeds (paired bootstrap: test users resampled, "
         "then seeds; * = the difference's interval excludes 0)")


def boot_metrics(bench) -> tuple[str, ...]:
    """The bootstrapped metrics a benchmark's records carry, in table order."""
    held = {k[3] for m in bench.summaries.values() for k in m.bootstrap}
    return tuple(m for m in bench.metrics if m in BOOTSTRAP_METRICS and m in held)


def interval_text(bounds, mean: float | None = None, signed: bool = False) -> str:
    """``0.7312 [0.7201, 0.7420]`` (``-`` without an interval)."""
    if bounds is None:
        return "-"
    spec = "+.4f" if signed else ".4f"
    head = "" if mean is None else f"{format(mean, spec)} "
    star = "*" if signed and (bounds[0] > 0 or bounds[1] < 0) else ""
    return f"{head}[{format(bounds[0], spec)}, {format(bounds[1], spec)}]{star}"


def row_intervals(bench, dataset: str, method: str, propensity: str, with_at: bool,
                  metric: str) -> dict:
    """``{"mean", "interval", "diff", "diff_interval"}`` of one row and metric (``None`` where
    there is nothing to compute); the difference is against the table's baseline."""
    key = (dataset, propensity, with_at, metric)
    mine = bench.summaries[method].bootstrap.get(key, {})
    base = bench.summaries[bench.baseline].bootstrap.get(key, {})
    mean = bench.mean(dataset, method, propensity, with_at, metric)
    base_mean = bench.mean(dataset, bench.baseline, propensity, with_at, metric)
    paired = method != bench.baseline and bool(base)
    return {"mean": mean, "interval": seed_user_interval(mine) if mine else None,
            "diff": (mean - base_mean) if paired and None not in (mean, base_mean) else None,
            "diff_interval": paired_interval(mine, base) if paired and mine else None}


def interval_rows(bench, label_of, fmt: str = "table") -> list[dict]:
    """One row per table row (and AT option): each bootstrapped metric's mean with its
    interval, and its difference against the baseline with that interval."""
    metrics = boot_metrics(bench)
    base = label_of(bench, bench.baseline)
    rows = []
    for dataset, method, propensity in bench.rows:
        for at in bench.at_options:
            row = {"data": bench.dataset_label(dataset), "method": label_of(bench, method)}
            if len(bench.at_options) > 1:
                row["AT"] = "w/" if at else "w/o"
            for metric in metrics:
                got = row_intervals(bench, dataset, method, propensity, at, metric)
                name = metric_label(metric, "standard")
                row[name] = interval_text(got["interval"], got["mean"])
                row[f"{name} - {base}"] = ("(baseline)" if method == bench.baseline else
                                           interval_text(got["diff_interval"], got["diff"],
                                                         signed=True))
            rows.append(row)
    return rows
