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
from atrec.protocols import Protocol
from atrec.params.lookup import REFERENCE, read_tuned_file, tuned_params_path
from atrec.tuning.storage import file_lock
from atrec.tuning.study import StudyOutcome

EXPORT_HEADER = """\
# Hyperparameters tuned by 'atrec tune' (Optuna TPE; docs/protocol.md, "Tuning").
# Read by '--params tuned'. Per entry: dim, lam[, epsilon] are the parameters; study, trials,
# best_value (lowest validation loss), best_trial, storage and updated record where they
# come from; reference_value, where present, is the loss of the first trial, run at the
# method's reference values; start_value, that of a first trial run at the values of the set
# named by start (published, tuned-atrec). Tuned on several validation splits (--splits N), an
# entry's best_value is its values' objective averaged over the splits, and splits records them:
# n, seeds, rule, chosen_seed, each split's best value (best_values), these values' value on
# each split (values), and min, max, sd of the best values. Entries are merged, one per study,
# under a file lock; edit with care.
"""


def export_best(outcomes: list[StudyOutcome], path: Path | None = None,
                protocol: Protocol | str | None = None) -> Path:
    """Merge the best parameters of ``outcomes`` into the tuned parameter file; return its path.

    The file (default :func:`atrec.params.lookup.tuned_params_path`) maps
    ``dataset -> config key -> {dim, lam[, epsilon], study, trials, best_value, best_trial,
    storage, updated}``.
    Concurrent exports are serialised by an ``flock`` on ``<file>.lock`` and each writes the
    whole file atomically, so none loses another's entries. Outcomes without a best trial, and
    failed studies (``failed``: atrec.tuning.configs.failed_study), are skipped. An entry of
    another study (another ``--study-prefix``) with a lower best value is kept, and the
    outcome's ``kept`` names it: the tuned values only ever get better on the objective (the
    study that lost keeps its values in its storage). ``protocol``: whose methods the file's entries name (a binary protocol's are
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
            if o.spread is not None:
                entry["splits"] = o.spread.entry()
            section = table.setdefault(o.dataset, {})
            if not isinstance(section, dict):
                raise AtrecError(f"tuned parameter file {path}: '{o.dataset}' is not a mapping; "
                                 f"fix or delete the file")
            key = config_key(o.propensity, o.with_at, o.method)
            kept = _better_entry(section.get(key), o)
            if kept is not None:
                o.kept = kept
                continue
            section[key] = entry
        atomic_write_text(path, EXPORT_HEADER + yaml.safe_dump(table, sort_keys=True))
    return path


def _better_entry(old, outcome: StudyOutcome) -> tuple[str, float] | None:
    """``(study, best value)`` of ``old`` when it is another study's entry with a lower best
    value than ``outcome``'s, measured on as many splits, else ``None`` (the outcome's entry
    replaces it: a value averaged over several splits and one split's best are not compared)."""
    if not isinstance(old, dict) or old.get("study") in (None, outcome.study):
        return None
    if _split_count(old) != (1 if outcome.spread is None else len(outcome.spread.seeds)):
        return None
    value = old.get("best_value")
    if isinstance(value, (int, float)) and value < outcome.best_value:
        return str(old["study"]), float(value)
    return None


def _split_count(entry: dict) -> int:
    splits = entry.get("splits")
    return int(splits.get("n", 1)) if isinstance(splits, dict) else 1


def kept_notes(outcomes: list[StudyOutcome], path: Path) -> list[str]:
    """One line per outcome whose entry the tuned file did not take (:func:`export_best`)."""
    return [f"{o.dataset}/{config_key(o.propensity, o.with_at, o.method)}: {path} keeps study "
            f"{o.kept[0]}'s values (best {o.kept[1]:.4f}); study {o.study}'s best "
            f"{o.best_value:.4f} is worse and stays in its study only"
            for o in outcomes if o.kept is not None]


def outcome_rows(outcomes: list[StudyOutcome], numeric: bool = False,
                 objective: str = "best val loss") -> list[dict]:
    """One summary row per study: its best parameters and value, trials, time; with a tune on
    several splits (``--splits``), the value is the exported values' mean over the splits and
    a ``splits`` column gives their number and the sd of the splits' best values.

    ``numeric``: raw numbers (for csv/json); otherwise display strings (4-decimal loss, lam and
    epsilon to 3 significant digits). ``objective``: the heading of the best value's column
    (``best train loss`` under a protocol without a validation split).
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
            objective: show(o.best_value, ".4f"),
            "dim": show(p.dim if p else None, "d"), "lam": show(p.lam if p else None, ".3g"),
            "epsilon": show(p.epsilon if p else None, ".3g"),
            **{k: show(v, ".3g") for k, v in (p.extra if p else ())},
            **({"splits": _spread_cell(o, numeric)}
               if any(x.spread is not None for x in outcomes) else {}),
            "seconds": round(o.seconds, 1),
            **({"failed": o.failed or ("" if numeric else "-")}
               if any(x.failed for x in outcomes) else {}),
        })
    return rows


def _spread_cell(o: StudyOutcome, numeric: bool):
    if o.spread is None:
        return 1 if numeric else "1"
    n, sd = len(o.spread.seeds), o.spread.summary()["sd"]
    return n if numeric else f"{n} (sd {sd:.4f})"
