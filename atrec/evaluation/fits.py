"""Failed fits of the binary protocols: when a run is marked failed, and how tables count it
(docs/protocols.md, "Failed fits").

A binary method's fit has failed when (rules 1 to 3 read no test label; rule 4 compares a
seed with the other seeds of its configuration):

1. **collapsed scores**: the standard deviation of its predicted probabilities over the
   evaluated test pairs is below :data:`COLLAPSED_SD` (a near-constant predictor ranks by
   noise);
2. **settled at the constant**: under a protocol that selects on validation data, its best
   validation criterion is within the tolerance of the constant predictor's value and its
   scores' sd is below :data:`NEAR_CONSTANT_SD` (:func:`criterion_constant`). A method's own
   criterion (selection ``method``) is a (weighted) mean cross-entropy, on which the constant
   prediction 1/2 scores exactly ``ln 2`` (tolerance :data:`CONSTANT_TOLERANCE`): such a fit
   predicts about 1/2 everywhere. (A criterion above ``ln 2`` with spread scores is an
   overconfident fit, as MF's N(0, 1) tables give, not a failed one: it can rank well.)
   ``binary-clean``'s one rule (selection ``mcar-auc``) is ``1 -`` the AUC on the MCAR slice,
   0.5 for a constant or random ranking (tolerance :data:`CHANCE_TOLERANCE`).
3. **no ranking on validation data**: its pooled AUC on its own validation pairs (MNAR
   pairs held out of training: no test label) is below :data:`VAL_AUC_FLOOR`. On Coat under
   ``binary-clean`` a fit that learned anything scores about 0.7 there (MF tuned 0.71-0.73,
   MF with biases 0.77); DR-JL tuned, whose criterion sits at ``ln 2`` with spread scores,
   0.54;
4. **a seed far off the others**: with at least :data:`OUTLIER_MIN_SEEDS` seeds of one
   configuration (method, propensity, AT, parameter set), a seed whose pooled AUC lies below
   the median of the configuration's seeds by more than ``max(`` :data:`OUTLIER_GAP` ``,``
   :data:`OUTLIER_MADS` ``x 1.4826 x MAD)`` (MAD: the median absolute deviation from that
   median, scaled to a normal sd). On Coat at ``binary-icde24``'s reference values, DT-DR's seed
   6 (AUC 0.535, the other seeds 0.72-0.74) is one.

A tuning study has failed when its best trial's validation criterion is at least the constant
predictor's value less its tolerance: no trial beat the constant prediction
(:func:`at_constant`; a trial keeps no scores, so rules 1 to 4 do not apply to it).

A run that the step cap stopped while still improving is not failed but flagged
(``diagnostics["flags"]``): tables mark it as they mark degenerate nuisance models.

The runner stores rules 1 to 3 in each record's ``diagnostics`` (:func:`fit_diagnostics`);
summaries (:mod:`atrec.evaluation.summary`) add rule 4 where a configuration's seeds meet, leave
a failed seed out of every mean and paired test, and count it apart; every table marks the
row (:data:`FAILED_MARK`).
"""

from __future__ import annotations

import math

import numpy as np

from atrec.errors import AtrecError
from atrec.protocols import get_protocol

COLLAPSED_SD = 0.01
NEAR_CONSTANT_SD = 0.05
CONSTANT_LOSS = math.log(2.0)     # the cross-entropy of the constant prediction 1/2
CONSTANT_TOLERANCE = 0.005
# under selection mcar-auc the criterion is 1 - the AUC on the MCAR slice (232 pairs on Coat:
# a random ranking's AUC has sd about 0.04 there, so "no better than chance" is 0.5 - 0.05)
CHANCE_CRITERION = 0.5
CHANCE_TOLERANCE = 0.05
VAL_AUC_FLOOR = 0.55
OUTLIER_METRIC = "auc"
OUTLIER_MIN_SEEDS = 3
OUTLIER_GAP = 0.05
OUTLIER_MADS = 5.0
MAD_TO_SD = 1.4826
FAILED_MARK = "‡"


def at_constant(best_val_loss: float, selection: str | None = None) -> bool:
    """A study's best criterion no better than the constant predictor's (``ln 2``, or 0.5
    under ``mcar-auc``; module doc)."""
    constant, tolerance, _ = criterion_constant(selection)
    return math.isfinite(best_val_loss) and best_val_loss >= constant - tolerance


def near_constant(best_val_loss: float, score_sd: float, selection: str | None = None) -> bool:
    """Rule 2: a criterion within the tolerance of the constant predictor's and scores of
    small spread."""
    constant, tolerance, _ = criterion_constant(selection)
    return (math.isfinite(best_val_loss) and abs(best_val_loss - constant)
            <= tolerance and score_sd < NEAR_CONSTANT_SD)


def criterion_constant(selection: str | None) -> tuple[float, float, str]:
    """``(value, tolerance, words)`` of the constant predictor under a selection rule
    (:data:`atrec.run_settings.SELECTIONS`): ``ln 2`` for the methods' own cross-entropies,
    ``0.5`` for ``mcar-auc`` (``1 -`` the AUC of a constant or random ranking)."""
    if selection == "mcar-auc":
        return CHANCE_CRITERION, CHANCE_TOLERANCE, "0.5 (1 - a random ranking's AUC)"
    return CONSTANT_LOSS, CONSTANT_TOLERANCE, "ln 2 (the constant 1/2's)"


def fit_diagnostics(scores: np.ndarray, best_val_loss: float, validated: bool,
                    val_auc: float | None = None, selection: str | None = None,
                    capped: bool = False) -> dict:
    """A record's ``diagnostics``: the test scores' sd, the best validation criterion's distance
    to the constant predictor's (:func:`criterion_constant`; ``None`` when the protocol selects
    on no validation data), the validation AUC (``None`` without validation pairs), the
    verdict of rules 1 to 3 (``failed``, ``reasons``) and ``flags``: ``capped`` when the step
    cap, not the stopping rule, ended the run (a flag, not a failure: the run is kept and
    marked)."""
    sd = float(np.std(np.asarray(scores, np.float64)))
    reasons = []
    if sd < COLLAPSED_SD:
        reasons.append(f"collapsed: test scores' sd {sd:.2g} < {COLLAPSED_SD}")
    gap = None
    constant, tolerance, words = criterion_constant(selection)
    if validated:
        gap = float(best_val_loss) - constant
        if near_constant(float(best_val_loss), sd, selection):
            reasons.append(f"at the constant: validation criterion {best_val_loss:.4f} within "
                           f"{tolerance} of {words}, scores' sd {sd:.2g}")
    if val_auc is not None and math.isfinite(val_auc) and val_auc < VAL_AUC_FLOOR:
        reasons.append(f"no ranking on validation: validation AUC {val_auc:.3f} < "
                       f"{VAL_AUC_FLOOR}")
    out = {"score_sd": sd, "val_minus_ln2" if selection != "mcar-auc" else
           "val_minus_chance": gap,
           "val_auc": None if val_auc is None or not math.isfinite(val_auc) else float(val_auc),
           "failed": bool(reasons), "reasons": reasons}
    if capped:
        out["flags"] = ["capped: still improving when the step cap ended training"]
    return out


def record_failure(record: dict) -> str | None:
    """The reason a record's run failed by rules 1 to 3, from its ``diagnostics``; ``None``
    when it did not (or holds none: a record made before they were written)."""
    diag = record.get("diagnostics")
    if isinstance(diag, dict) and diag.get("failed"):
        return "; ".join(diag.get("reasons") or ["failed"])
    return None


def outlier_seeds(values: dict[int, float]) -> dict[int, str]:
    """Rule 4 over one configuration's ``{seed: pooled AUC}``: ``{seed: reason}`` of the seeds
    far below the others (none with fewer than :data:`OUTLIER_MIN_SEEDS` seeds)."""
    finite = {s: v for s, v in values.items() if v is not None and math.isfinite(v)}
    if len(finite) < OUTLIER_MIN_SEEDS:
        return {}
    arr = np.asarray(list(finite.values()))
    median = float(np.median(arr))
    spread = MAD_TO_SD * float(np.median(np.abs(arr - median)))
    limit = median - max(OUTLIER_GAP, OUTLIER_MADS * spread)
    return {s: f"pooled AUC {v:.3f} far below its configuration's median {median:.3f} "
               f"(limit {limit:.3f})" for s, v in finite.items() if v < limit}


def is_binary_record(record: dict) -> bool:
    """Whether a record comes from a binary protocol (whose fits the failed-fit rules judge)."""
    block = record.get("protocol")
    name = block.get("name") if isinstance(block, dict) else None
    if not isinstance(name, str):
        return False
    try:
        return get_protocol(name).view == "binary"
    except AtrecError:        # a plug-in protocol that is not installed here
        return False


def failed_fits(values: dict, failures: dict, binary: set) -> dict:
    """``config -> {seed: reason}`` for a summary: the records' own verdicts ``failures``
    (rules 1 to 3) and, among each configuration of ``binary`` whose pooled AUC by seed is in
    ``values`` (``(*config, metric) -> {seed: value}``), the seeds far off the rest (rule 4)."""
    out = {config: dict(seeds) for config, seeds in failures.items()}
    for config in binary:
        scores = values.get((*config, OUTLIER_METRIC), {})
        kept = {s: v for s, v in scores.items() if s not in out.get(config, {})}
        far = outlier_seeds(kept)
        if far:
            out.setdefault(config, {}).update(far)
    return out
