"""Flagged runs for the tables: degenerate nuisance models, and runs the step cap stopped.

A binary record of a method with a learned propensity or an imputation model carries
``nuisance``: their diagnostics and ``flags``, the reasons a fit is degenerate
(:mod:`atrec.methods.binary.nuisance`); a run that the step cap stopped while still improving
carries ``diagnostics["flags"]`` (:func:`atrec.evaluation.fits.fit_diagnostics`). A table marks the rows that hold such a run with
:data:`FLAG_MARK` and says in a notice how many seeds are flagged and why: a flagged run is no
evidence about its method, so it is never silently averaged in. A reason about a propensity
other than the NCF model names it (``(logistic)``: TDR's; ``(naive-bayes)``: DR-BIAS's, DR-MSE's,
Stable-DR's), so the notice says which model failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from atrec.methods.registry import base_method
from atrec.results.records import record_label

FLAG_MARK = "§"


def flagged_runs(records: Iterable, labels: Iterable[str],
                 shown: Mapping[tuple, str] | None = None) -> dict:
    """``(dataset, method, propensity) -> {"seeds": [...], "of": n, "reasons": [...]}`` for
    each configuration of the parameter sets ``labels`` with a flagged seed (reasons without
    their numbers, each once). ``shown`` maps a configuration to the one set its table row
    shows (:func:`~atrec.evaluation.summary.merge_summaries` picks it): only that set's records
    count there, so a row never carries the flags of runs it does not show."""
    labels = set(labels)
    out: dict = {}
    for r in records:
        if not isinstance(r, dict) or record_label(r) not in labels:
            continue
        key = (r.get("dataset"), base_method(r), str(r.get("propensity")))
        if shown is not None and shown.get(key, record_label(r)) != record_label(r):
            continue
        entry = out.setdefault(key, {"seeds": [], "of": 0, "reasons": []})
        entry["of"] += 1
        flags = [*((r.get("nuisance") or {}).get("flags") or []),
                 *((r.get("diagnostics") or {}).get("flags") or [])]
        if flags:
            entry["seeds"].append(r.get("seed"))
            for f in flags:
                reason = _without_value(f)
                if reason not in entry["reasons"]:
                    entry["reasons"].append(reason)
    return {k: v for k, v in out.items() if v["seeds"]}


def _without_value(flag: str) -> str:
    """A flag's reason without the measured value, its first number, so that seeds' reasons
    coincide (``propensity AUC 0.512 <= 0.6`` -> ``propensity AUC <= 0.6``); the threshold
    stays."""
    words = flag.split()
    first = next((i for i, w in enumerate(words) if _number(w)), None)
    return " ".join(w for i, w in enumerate(words) if i != first)


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def flag_notices(flagged: dict, label_of: Callable[[str], str]) -> list[str]:
    """One notice per flagged configuration: its seeds and reasons."""
    return [f"{FLAG_MARK} {dataset} {label_of(method)}: {len(v['seeds'])} of {v['of']} seeds "
            f"with a degenerate nuisance model ({'; '.join(v['reasons'])}); see each "
            f"record's 'nuisance'"
            for (dataset, method, _), v in sorted(flagged.items(), key=str)]
