"""The tuned parameter file: the best values of every finished study, merged under a file lock
into the file that ``--params tuned`` reads, and the summary rows of ``atrec tune``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import yaml

from atrec.errors import AtrecError
from atrec.fileio import atomic_write_text
from atrec.names import config_key
from atrec.propensity.registry import propensity_label
from atrec.results.params import REFERENCE, read_tuned_file, tuned_params_path
from atrec.tuning.storage import file_lock
from atrec.tuning.study import StudyOutcome

EXPORT_HEADER = """\
# Hyperparameters tuned by 'atrec tune' (Optuna TPE; docs/protocol.md, "Tuning").
# Read by '--params tuned'. Per entry: dim, lam[, epsilon] are the parameters; study, trials,
# best_value (lowest validation loss), best_trial, storage and updated record where they
# come from; reference_value, where present, is the loss of the first trial, run at the
# method's reference values; start_value, that of a first trial run at the values of the set
# named by start (published, tuned-atrec). Entries are merged, one per study, under a file lock;
# edit with care.
"""


def export_best(outcomes: list[StudyOutcome], path: Path | None = None,
                protocol: str | None = None) -> Path:
    """Merge the best parameters of ``outcomes`` into the tuned parameter file; return its path.

    The file (default :func:`atrec.results.params.tuned_params_path`) maps
    ``dataset -> config key -> {dim, lam[, epsilon], study, trials, best_value, best_trial,
    storage, updated}``.
    Concurrent exports are serialised by an ``flock`` on ``<file>.lock`` and each writes the
    whole file atomically, so none loses another's entries. Outcomes without a best trial, and
    failed studies (``failed``: atrec.tuning.configs.failed_study), are skipped. ``protocol``: whose methods the file's entries name (a binary protocol's are
    its own).
    """
    path = Path(path) if path is not None else tuned_params_path()
    with file_lock(path.with_name(path.name + ".lock")):
        table = read_tuned_file(path, protocol) if path.exists() else {}
        for o in outcomes:
            if o.best_params is None or o.failed:   # a failed study ships nothing
                continue
            entry = o.best_params.as_dict()
            entry.update(study=o.study, trials=o.complete, best_value=o.best_value,
                         best_trial=o.best_trial, storage=o.storage,
                         updated=datetime.now(UTC).isoformat(timespec="seconds"))
            if o.start_value is not None and o.start in (None, REFERENCE):
                entry["reference_value"] = o.start_value   # the first trial's, at the authors'
            elif o.start_value is not None:
                entry.update(start=o.start, start_value=o.start_value)
            section = table.setdefault(o.dataset, {})
            if not isinstance(section, dict):
                raise AtrecError(f"tuned parameter file {path}: '{o.dataset}' is not a mapping; "
                                 f"fix or delete the file")
            section[config_key(o.propensity, o.with_at, o.method)] = entry
        atomic_write_text(path, EXPORT_HEADER + yaml.safe_dump(table, sort_keys=True))
    return path


def outcome_rows(outcomes: list[StudyOutcome], numeric: bool = False) -> list[dict]:
    """One summary row per study: its best parameters and value, trials, time.

    ``numeric``: raw numbers (for csv/json); otherwise display strings (4-decimal loss, lam and
    epsilon to 3 significant digits).
    """
    def show(value, spec: str):
        if value is None:
            return None if numeric else "-"
        return value if numeric else format(value, spec)

    rows = []
    for o in outcomes:
        p = o.best_params
        rows.append({
            "dataset": o.dataset, "method": o.method,
            "propensity": propensity_label(o.propensity),
            "AT": "with" if o.with_at else "without", "study": o.study,
            "trials": o.complete if numeric else f"{o.complete}/{o.target}", "ran": o.ran,
            "best val loss": show(o.best_value, ".4f"),
            "dim": show(p.dim if p else None, "d"), "lam": show(p.lam if p else None, ".3g"),
            "epsilon": show(p.epsilon if p else None, ".3g"),
            **{k: show(v, ".3g") for k, v in (p.extra if p else ())},
            "seconds": round(o.seconds, 1),
            **({"failed": o.failed or ("" if numeric else "-")}
               if any(x.failed for x in outcomes) else {}),
        })
    return rows
