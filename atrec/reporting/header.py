"""The header of the markdown report (``results/report.md``): what a reader needs to trust it.

A report file outlives the run that made it, so it says, before any table: a title, when it was
written, which atrec (version, and git commit when atrec runs from a git checkout), which
parameter sets and seeds the numbers come from, which data (file checksums, from the records'
provenance or else the processed data's manifest), and links to every figure and to
``variance.md`` (Figure 2's table) when they exist. Links are relative to the results folder,
where ``report.md`` is written (``atrec report --format markdown > results/report.md`` gives the
same file).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from atrec._version import __version__
from atrec.data.preprocess import MANIFEST, processed_dir
from atrec.errors import AtrecError
from atrec.evaluation.summary import Summary
from atrec.methods.registry import base_method
from atrec.names import DATASET_LABELS
from atrec.results.records import iter_records, record_label

TITLE = ("Asymmetric tri-training for MNAR explicit feedback (Saito, SIGIR 2020): "
         "reproduction report")
VARIANCE_FILE = "variance.md"
FIGURE2_DATASET = "ml-100k"   # the variance experiment's data (atrec.experiments.variance)


def git_commit() -> str | None:
    """``git rev-parse HEAD`` in atrec's own folder; ``None`` (silently) when atrec is not run
    from a git checkout, git is missing or slow."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and len(commit) >= 7 else None


def seed_ranges(seeds: Sequence[int]) -> str:
    """``0-19`` or ``0-4, 7, 9``: sorted seeds with runs collapsed."""
    values = sorted(set(seeds))
    parts: list[str] = []
    start = prev = None
    for s in values + [None]:
        if start is not None and s == prev + 1:
            prev = s
            continue
        if start is not None:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = s
    return ", ".join(parts) or "-"


def _records(summary: Summary, root: Path | None) -> list[dict]:
    """The records behind ``summary``: its datasets, parameter set and method."""
    return [r for d in summary.datasets for r in iter_records(root, d)
            if record_label(r) == summary.params and base_method(r) == summary.method]


def _param_values(records: list[dict], dataset: str) -> str:
    """``dim 5, 10; lam 0.001; epsilon 0.1``: each hyperparameter's values on ``dataset``."""
    values: dict[str, set] = {}
    for r in records:
        if r["dataset"] == dataset:
            for key, value in r["params"].items():
                values.setdefault(key, set()).add(value)
    return "; ".join(f"{k} {', '.join(_number(v) for v in sorted(vs, key=str))}"
                     for k, vs in sorted(values.items())) or "-"


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def data_checksums(records: list[dict], dataset: str) -> dict[str, str]:
    """SHA-256 of each source file of ``dataset``: from the records' provenance (the data the
    numbers were computed on), else from the processed data's manifest; ``{}`` if neither."""
    found: dict[str, str] = {}
    for r in records:
        if r["dataset"] == dataset:
            found.update(r.get("provenance", {}).get("data_checksums") or {})
    if found:
        return found
    try:
        manifest = json.loads((processed_dir(dataset) / MANIFEST).read_text())
        return dict(manifest.get("source_files") or {})
    except (OSError, ValueError, AtrecError):
        return {}


def _files(sums: dict[str, str]) -> str:
    return ", ".join(f"`{name}` `{sha}`" for name, sha in sorted(sums.items())) or "unknown"


def _link(path: Path, base: Path) -> str:
    try:
        rel = path.resolve().relative_to(base.resolve())
    except ValueError:
        rel = path
    return f"[{path.name}]({rel.as_posix()})"


def report_header(summary: Summary, figures: Sequence[Path], base: Path,
                  root: Path | None = None, now: datetime | None = None) -> str:
    """The markdown header (module doc). ``figures``: the figure files written; ``base``: the
    folder the report lives in (links are relative to it; ``variance.md`` is looked for there);
    ``root``: where the records are (default: the results folder)."""
    records = _records(summary, root)
    now = now or datetime.now(UTC)
    commit = git_commit()
    version = f"{__version__}" + (f" (git commit `{commit}`)" if commit else "")
    lines = [f"# {TITLE}", "",
             f"- Date: {now.strftime('%Y-%m-%d %H:%M UTC')}",
             f"- atrec: {version}",
             f"- Method: {summary.method}",
             (f"- Parameter set: {summary.params} (each hyperparameter's values over the "
              f"configurations)")]
    lines += [f"  - {DATASET_LABELS.get(d, d)}: {_param_values(records, d)}"
              for d in summary.datasets]
    seeds = [r["seed"] for r in records]
    lines.append(f"- Seeds: {seed_ranges(seeds)} ({len(records)} runs; "
                 f"{summary.expected_seeds} expected per cell)")
    lines.append("- Datasets (SHA-256 of the source files):")
    for d in summary.datasets:
        lines.append(f"  - {DATASET_LABELS.get(d, d)}: {_files(data_checksums(records, d))}")
    # Figure 2's data: from its records (datasets ml-100k-min<N>), else the processed manifest
    figure2 = [r for r in iter_records(root) if r["dataset"].startswith(FIGURE2_DATASET + "-")]
    sums = data_checksums([{**r, "dataset": FIGURE2_DATASET} for r in figure2], FIGURE2_DATASET)
    if sums and FIGURE2_DATASET not in summary.datasets:
        lines.append(f"  - {DATASET_LABELS[FIGURE2_DATASET]} (Figure 2): {_files(sums)}")
    if figures:
        lines.append("- Figures: " + ", ".join(_link(p, base) for p in figures))
    variance = base / VARIANCE_FILE
    if variance.is_file():
        lines.append(f"- Figure 2 (MovieLens 100K): [{VARIANCE_FILE}]({VARIANCE_FILE})"
                     + "".join(f", [{p.name}](figures/{p.name})"
                               for p in sorted((base / "figures").glob("figure2_*"))))
    return "\n".join(lines)
