"""The protocol gap decomposed into its parts: which difference between ``binary-icde24`` and
``binary-clean`` moves a method against MF.

A method's standing is measured against MF: per seed, its metric less MF's on the same seed
(AUC, and nDCG@5 in each protocol's convention). Between the two protocols that difference
moves; a chain of runs (:data:`~atrec.reporting.protocol_gap.STEPS`), each changing one factor,
splits the move into parts that add up to it:

1. **test set**: ``binary-icde24`` -> ``binary-icde24-cleantest`` (the same training scored on
   ``binary-clean``'s test set, the 5% MCAR slice removed from it and read instead of a
   per-seed slice by the leaking methods), both in the ``(ref)`` convention;
2. **nDCG convention**: the same runs, the ``(ref)`` metric -> the standard one (a test user
   without a positive left out; zero for AUC by construction);
3. **data**: -> ``binary-clean-icde24rule`` (``binary-clean``'s split, 90/10 with a
   validation part, and its 0-based ids, still under ``binary-icde24``'s stopping rule and the
   code's forms);
4. **selection**: -> ``binary-clean`` at ``reference`` in the code's form (its selection rule,
   whatever that rule is: it is ``binary-clean``'s own run);
5. **form**: -> ``binary-clean`` at ``reference`` in its default form (zero for a method
   without forms, or a row that names its form);
6. **parameters**: -> ``binary-clean`` at its set in the gap (``tuned-atrec`` ...; zero where
   that set is ``reference``);
7. **seeds**: the two protocols' means over all their seeds less their means over the seeds
   the chain shares (``binary-clean`` runs 20, the chain 10): no interval, sampling alone.

Parts 1 to 6 are means over the seeds every point of the chain has (method and MF alike) of
the per-seed change, with a 95% t-interval and a paired t-test's p over those seeds. A method
whose standing changes (its rank, or whether it beats MF, on that metric) is given a *cause*:
the part with the largest absolute change, marked ``(within noise)`` when its interval holds
zero (then no part stands out from the seeds' noise: the standing changed with the Holm family,
the seed count or chance, not with one factor). A chain with a point missing gives no parts; the
gap's notices name the command that trains the runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from atrec.errors import AtrecError
from atrec.methods.options import method_key
from atrec.methods.registry import default_form, resolve
from atrec.names import NO_PROPENSITY
from atrec.reporting.benchmark import BINARY_BASELINE
from atrec.reporting.common import signed
from atrec.reporting.protocol_gap import (
    CLEAN_PROTOCOL,
    CLEAN_REFERENCE,
    RANKED,
    REFERENCE_PROTOCOL,
    RULE_PROTOCOL,
    STEP_PROTOCOL,
    Gap,
    bench_key,
)

PARTS = ("test set", "nDCG convention", "data", "selection", "form", "parameters", "seeds")
HOLDS = "holds"          # the cause column of a method whose standing does not change
WITHIN_NOISE = "(within noise)"   # a cause whose interval holds zero: named, not established


@dataclass(frozen=True)
class Part:
    """One part of a method's move against MF on one metric: ``diff`` (the change of the
    method's mean difference from MF), its 95% interval ``low``, ``high`` and paired t-test
    ``p`` over ``n`` seeds (``None`` for the seeds part)."""

    name: str
    n: int
    diff: float
    low: float | None = None
    high: float | None = None
    p: float | None = None

    def text(self) -> str:
        """``form +0.0120 [+0.0040, +0.0200]`` (no interval for the seeds part)."""
        band = "" if self.low is None else f" [{signed(self.low, 4)}, {signed(self.high, 4)}]"
        return f"{self.name} {signed(self.diff, 4)}{band}"

    @property
    def clear(self) -> bool:
        """Whether its interval excludes zero (the seeds part, without one, never is)."""
        return self.low is not None and (self.low > 0 or self.high < 0)

    def as_dict(self) -> dict:
        return {"part": self.name, "n": self.n, "diff": self.diff, "low": self.low,
                "high": self.high, "p": self.p, "clear": self.clear}


@dataclass(frozen=True)
class Decomposition:
    """A method's parts on one ranked metric (index ``k`` of
    :data:`~atrec.reporting.protocol_gap.RANKED`): ``parts`` (empty when the chain misses a
    point), ``total`` (the move itself: the sum of the parts), ``changes`` (whether its
    standing changes between the protocols; ``None`` where either has no result of it) and
    ``missing`` (the points without results)."""

    method: str
    k: int
    parts: tuple[Part, ...]
    total: float | None
    changes: bool | None
    missing: tuple[str, ...] = ()

    @property
    def cause(self) -> Part | None:
        """The part with the largest absolute change (``None`` without parts)."""
        return max(self.parts, key=lambda p: abs(p.diff)) if self.parts else None

    def cause_text(self) -> str:
        """The table's cause cell: ``(baseline)``, ``holds``, ``-`` (a protocol has no result
        of it, or a point of the chain is missing) or the cause with its change and interval."""
        if self.method == BINARY_BASELINE:
            return "(baseline)"
        if self.changes is False:
            return HOLDS
        if self.changes is None or self.cause is None:
            return "-"
        return self.cause.text() + ("" if self.cause.clear else f" {WITHIN_NOISE}")

    def as_dict(self) -> dict:
        cause = self.cause     # MF, the baseline, moves by nothing against itself: no cause
        named = cause is not None and self.changes and self.method != BINARY_BASELINE
        return {"standing_changes": self.changes, "total": self.total,
                "cause": cause.name if named else None,
                "parts": [p.as_dict() for p in self.parts], "missing": list(self.missing)}


def coded_key(method: str) -> str | None:
    """The row ``method`` under ``binary-clean`` in the form it has under ``binary-icde24``
    (``dr`` -> ``dr+form=coded``; a method without forms: itself)."""
    try:
        cls, options = resolve(method, REFERENCE_PROTOCOL)
    except AtrecError:
        return None
    return method_key(cls, options, default_form(CLEAN_PROTOCOL))


def _versus_mf(bench, dataset: str, key: str | None, metric: str) -> dict[int, float]:
    """``{seed: method - MF}`` over the seeds both have (their failed fits left out)."""
    if bench is None or key is None:
        return {}
    cells = [bench.summaries[k].cell(dataset, NO_PROPENSITY, False, metric)
             if k in bench.summaries else None for k in (key, BINARY_BASELINE)]
    if any(c is None for c in cells):
        return {}
    mine, mf = (dict(zip(c.seeds, c.values)) for c in cells)
    return {s: mine[s] - mf[s] for s in sorted(set(mine) & set(mf))
            if _finite(mine[s]) and _finite(mf[s])}


def _finite(value) -> bool:
    return value is not None and math.isfinite(value)


def _points(gap: Gap, method: str, k: int) -> list[tuple[str, dict[int, float]]]:
    """The chain's points of a row on ranked metric ``k``: (name, ``{seed: method - MF}``)."""
    ref, clean = RANKED[REFERENCE_PROTOCOL][k], RANKED[CLEAN_PROTOCOL][k]
    icde, final = gap.benches.get(REFERENCE_PROTOCOL), gap.benches.get(CLEAN_PROTOCOL)
    step, clean_ref = gap.steps.get(STEP_PROTOCOL), gap.steps.get(CLEAN_REFERENCE)
    rule = gap.steps.get(RULE_PROTOCOL)
    step_key, coded, d = bench_key(step, STEP_PROTOCOL, method), coded_key(method), gap.dataset
    return [
        (REFERENCE_PROTOCOL, _versus_mf(icde, d, gap.key(REFERENCE_PROTOCOL, method), ref)),
        (f"{STEP_PROTOCOL} (ref)", _versus_mf(step, d, step_key, ref)),
        (STEP_PROTOCOL, _versus_mf(step, d, step_key, clean)),
        (RULE_PROTOCOL, _versus_mf(rule, d, bench_key(rule, RULE_PROTOCOL, method), clean)),
        (f"{CLEAN_PROTOCOL} reference, code's form", _versus_mf(clean_ref, d, coded, clean)),
        (f"{CLEAN_PROTOCOL} reference",
         _versus_mf(clean_ref, d, bench_key(clean_ref, CLEAN_PROTOCOL, method), clean)),
        (CLEAN_PROTOCOL, _versus_mf(final, d, gap.key(CLEAN_PROTOCOL, method), clean)),
    ]


def _part(name: str, before: np.ndarray, after: np.ndarray) -> Part:
    """The change from ``before`` to ``after`` (paired by seed): mean, t-interval, p."""
    change = after - before
    n, mean = len(change), float(np.mean(change))
    if n < 2:
        return Part(name, n, mean)
    sd = float(np.std(change, ddof=1))
    if sd == 0.0:     # identical moves on every seed: no evidence of noise around them
        return Part(name, n, mean, mean, mean, 1.0 if mean == 0.0 else 0.0)
    from scipy import stats  # 1.5 s to import: only where an interval is asked for

    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    p = float(2 * stats.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))
    return Part(name, n, mean, mean - half, mean + half, p)


def standing_changes(gap: Gap, method: str, k: int) -> bool | None:
    """Whether ``method``'s rank or its verdict against MF on ranked metric ``k`` differs
    between the two protocols (``None`` where either has no result)."""
    ref, clean = RANKED[REFERENCE_PROTOCOL][k], RANKED[CLEAN_PROTOCOL][k]
    ranks = gap.rank(REFERENCE_PROTOCOL, method, ref), gap.rank(CLEAN_PROTOCOL, method, clean)
    if None in ranks:
        return None
    return (ranks[0] != ranks[1] or gap.beats_mf(REFERENCE_PROTOCOL, method, ref)
            != gap.beats_mf(CLEAN_PROTOCOL, method, clean))


def decompose(gap: Gap, method: str, k: int) -> Decomposition:
    """``method``'s move against MF on ranked metric ``k`` split into :data:`PARTS`."""
    points = _points(gap, method, k)
    changes = standing_changes(gap, method, k)
    ends = points[0][1], points[-1][1]
    total = (float(np.mean(list(ends[1].values()))) - float(np.mean(list(ends[0].values())))
             if all(ends) else None)
    missing = tuple(name for name, values in points if not values)
    shared = sorted(set.intersection(*(set(v) for _, v in points)))
    if missing or not shared:
        return Decomposition(method, k, (), total, changes, missing)
    chain = [np.array([values[s] for s in shared]) for _, values in points]
    parts = [_part(name, chain[j], chain[j + 1]) for j, name in enumerate(PARTS[:-1])]
    # the seeds part: what the seeds outside the chain's add to each end's mean
    outside = ((np.mean(list(ends[1].values())) - np.mean(chain[-1]))
               - (np.mean(list(ends[0].values())) - np.mean(chain[0])))
    parts.append(Part(PARTS[-1], len(shared), float(outside)))
    return Decomposition(method, k, tuple(parts), total, changes)


def decompositions(gap: Gap) -> dict[tuple[str, int], Decomposition]:
    """Every row's :func:`decompose` on each ranked metric: ``(method, k) -> Decomposition``."""
    return {(m, k): decompose(gap, m, k) for m in gap.methods
            for k in range(len(RANKED[CLEAN_PROTOCOL]))}
