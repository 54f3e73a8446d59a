"""Diagnostics of a binary method's nuisance models, stored in every record of a method that
has them (``record["nuisance"]``), and the rule that flags a degenerate fit (issue 60).

- a learned propensity ``p_hat`` of the pair (the NCF model of
  :mod:`atrec.methods.binary.propensity`, TDR's logistic model on MF features, a model trained
  with the predictor): its mean and standard deviation over all pairs, its AUC at telling the
  training pairs from the unobserved ones (the validation pairs left out), and the mean weight
  ``sum_O w / N`` (``w = 1 / clip(p_hat, gamma, 1)`` as the method weights, ``O`` the
  training pairs, ``N`` the pairs of the training data's grid): about 1 for a calibrated
  propensity (``mean_weight_unclipped``: the same without the clip, which tells a clip
  ``gamma`` above the observation rate from a miscalibrated model). ``propensity_model``
  names the model where it is not the NCF one (``logistic``);
- a naive-Bayes propensity on the label (DR-BIAS, DR-MSE, Stable-DR:
  :mod:`atrec.methods.binary.naive_bayes`), ``propensity_model`` ``naive-bayes``: it gives a
  pair one of two values, ``P(o = 1 | y = 1)`` and ``P(o = 1 | y = 0)``
  (``propensity_y1``, ``propensity_y0``, and their ratio ``propensity_ratio``: how much more
  often a positive is observed than a negative, as the model says), and the mean weight
  ``sum_O 1 / p_hat(y) / N`` over the training pairs and their labels. What this can show:
  the weight scale (with ``mu = 0`` it is ``max_user_id x max_item_id / N`` by construction,
  about 1; Stable-DR's learned ``mu`` moves it) and a probability above 1 (flagged). What it
  cannot: whether the model tells observed from unobserved pairs. That AUC needs each
  unobserved pair's label, which MNAR data does not have (the method imputes ``y = 0`` there,
  so an AUC over it would measure that convention, not the model), so none is reported, and
  the model's premise (that observation depends on the label alone) is not checked;
- an imputation MF ``q_hat``: its AUC on the validation pairs' labels.

A fit is flagged (``flags``, a list of reasons; empty when none) when its propensity's AUC is
at most :data:`MIN_PROPENSITY_AUC`, its mean weight outside :data:`WEIGHT_RANGE`, a
naive-Bayes probability above 1, or its imputation's AUC below :data:`MIN_IMPUTATION_AUC`:
such a run is no evidence about the method. A flag on a propensity other than the NCF model
names it (``(logistic)``, ``(naive-bayes)``).
"""

from __future__ import annotations

import numpy as np

from atrec.runtime import tf

MIN_PROPENSITY_AUC = 0.6
WEIGHT_RANGE = (0.8, 1.2)
MIN_IMPUTATION_AUC = 0.55   # "near 0.5": an imputation that ranks no better than this is noise


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """The probability that a positive outscores a negative (ties count half); NaN when one
    class is missing."""
    scores, labels = np.asarray(scores, np.float64), np.asarray(labels) > 0
    pos, n = int(labels.sum()), labels.size
    if pos == 0 or pos == n:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]     # average 1-based ranks of ties
    return float((ranks[labels].sum() - pos * (pos + 1) / 2.0) / (pos * (n - pos)))


def propensity_grid(prop: dict, k: int) -> np.ndarray:
    """``[nu, ni]`` probabilities of replica ``k``'s frozen NCF propensity ``prop``."""
    W, H = np.asarray(prop["prop_W"][k], np.float64), np.asarray(prop["prop_H"][k], np.float64)
    a, b = np.asarray(prop["prop_a"][k], np.float64), float(np.asarray(prop["prop_b"][k]))
    dim = W.shape[-1]
    logit = (W @ a[:dim])[:, None] + (H @ a[dim:])[None, :] + b
    return 1.0 / (1.0 + np.exp(-logit))


def propensity_diagnostics(p: np.ndarray, observed: np.ndarray, keep: np.ndarray, k: int,
                           gamma: float) -> dict:
    """Replica ``k``'s propensity diagnostics (module doc) from ``p``, its probabilities at
    every pair ``[nu * ni]``. ``observed``, ``keep``: ``[R, nu * ni]``, 1 at the training
    pairs, 0 at the pairs left out of the fit."""
    p = np.asarray(p, np.float64)
    o, use = observed[k].astype(bool), keep[k].astype(bool)
    w = 1.0 / np.clip(p, gamma, 1.0)
    return {"propensity_mean": float(p[use].mean()), "propensity_sd": float(p[use].std()),
            "propensity_auc": auc(p[use], o[use]),
            "mean_weight": float(w[o].sum() / p.size),
            "mean_weight_unclipped": float((1.0 / p[o]).sum() / p.size)}


def label_propensity_diagnostics(p1: float, p0: float, positives: int, negatives: int,
                                 cells: int) -> dict:
    """A naive-Bayes propensity's diagnostics (module doc) from ``p1 = P(o = 1 | y = 1)``,
    ``p0 = P(o = 1 | y = 0)`` and the training pairs' label counts, over a grid of ``cells``
    pairs."""
    p1, p0 = float(p1), float(p0)
    return {"propensity_model": "naive-bayes", "propensity_y1": p1, "propensity_y0": p0,
            "propensity_ratio": p1 / p0 if p0 > 0 else float("inf"),
            "mean_weight": (positives / p1 + negatives / p0) / cells}


def imputation_auc(params: dict, users, items, labels, k: int, prefix: str = "imp") -> float:
    """Replica ``k``'s imputation MF ``prefix`` scored at the pairs against ``labels``."""
    W, H = np.asarray(params[f"{prefix}_W"][k]), np.asarray(params[f"{prefix}_H"][k])
    u, i = np.asarray(users)[k], np.asarray(items)[k]
    return auc(np.sum(W[u] * H[i], axis=-1), np.asarray(labels)[k])


def held_out_mask(run) -> np.ndarray:
    """``[R, nu * ni]`` uint8: 0 at each replica's validation pairs (observed, held out from
    training: neither observed nor unobserved for a model of the training pairs), 1
    elsewhere."""
    cells = run.num_users * run.num_items
    keep = np.ones((run.replicas, cells), np.uint8)
    val = run.problem.val
    users, items = np.asarray(val["user"]), np.asarray(val["item"])
    if users.size:
        users = np.broadcast_to(users, (run.replicas, users.shape[-1]))
        items = np.broadcast_to(items, (run.replicas, items.shape[-1]))
        for k in range(run.replicas):
            keep[k, users[k].astype(np.int64) * run.num_items + items[k]] = 0
    return keep


def flags(diag: dict) -> list[str]:
    """The reasons a fit's diagnostics say a nuisance model is degenerate (module doc)."""
    out = []
    model = f" ({diag['propensity_model']})" if "propensity_model" in diag else ""
    if "propensity_auc" in diag and not diag["propensity_auc"] > MIN_PROPENSITY_AUC:
        out.append(f"propensity AUC {diag['propensity_auc']:.3f} <= {MIN_PROPENSITY_AUC}"
                   f"{model}")
    low, high = WEIGHT_RANGE
    if "mean_weight" in diag and not low <= diag["mean_weight"] <= high:
        out.append(f"mean weight {diag['mean_weight']:.3f} outside [{low}, {high}]{model}")
    for key in ("propensity_y1", "propensity_y0"):
        if key in diag and not 0 < diag[key] <= 1:
            out.append(f"{key} {diag[key]:.3f} outside (0, 1]{model}")
    if "imputation_auc" in diag and not diag["imputation_auc"] >= MIN_IMPUTATION_AUC:
        out.append(f"imputation AUC {diag['imputation_auc']:.3f} < {MIN_IMPUTATION_AUC}")
    return out


def model_grid(run, probability, params: dict, chunk: int = 1 << 20) -> np.ndarray:
    """``[R, nu * ni]``: ``probability(params, users, items)`` (a method's propensity on its
    trained parameters, TensorFlow) at every pair, ``chunk`` pairs at a time."""
    cells = run.num_users * run.num_items
    out = np.empty((run.replicas, cells), np.float32)
    for start in range(0, cells, chunk):
        pos = np.arange(start, min(cells, start + chunk))
        shape = (run.replicas, len(pos))
        users = tf.constant(np.broadcast_to(pos // run.num_items, shape), tf.int32)
        items = tf.constant(np.broadcast_to(pos % run.num_items, shape), tf.int32)
        out[:, start:start + len(pos)] = np.asarray(probability(params, users, items))
    return out


def diagnose(run, prop: dict | None = None, imputation: dict | None = None,
             grid: np.ndarray | None = None, model: str | None = None,
             by_label: tuple | None = None) -> list[dict]:
    """Per replica, the diagnostics of the propensity (``prop``: frozen NCF parameters; or
    ``grid``: its probabilities at every pair, ``[R, nu * ni]``, for another model, named by
    ``model``; or ``by_label``: ``(p1, p0)``, ``[R]`` each, a naive-Bayes propensity on the
    label) and of the imputation MF in ``imputation`` (parameters holding ``imp_W``,
    ``imp_H``), with their ``flags``; an empty list when there is none."""
    if prop:
        grid = np.stack([propensity_grid(prop, k).ravel() for k in range(run.replicas)])
    prop = grid is not None
    imputation = imputation if imputation and "imp_W" in imputation else None
    if not prop and not imputation and by_label is None:
        return []
    observed = run.observed() if prop else None
    keep = held_out_mask(run) if prop else None
    val = run.problem.val
    shape = (run.replicas, np.asarray(val["user"]).shape[-1])
    users, items = (np.broadcast_to(np.asarray(val[c]), shape) for c in ("user", "item"))
    labels = np.broadcast_to(np.asarray(val["rating"]), shape)
    out = []
    for k in range(run.replicas):
        diag = {}
        if prop:
            diag.update(propensity_diagnostics(grid[k], observed, keep, k,
                                               float(run.values["gamma"])))
            if model:
                diag["propensity_model"] = model
        if by_label is not None:
            labels_k = np.asarray(run.problem.train["rating"])[k] > 0
            diag.update(label_propensity_diagnostics(
                np.asarray(by_label[0])[k], np.asarray(by_label[1])[k], int(labels_k.sum()),
                int((~labels_k).sum()), run.num_users * run.num_items))
        if imputation and shape[1]:
            diag["imputation_auc"] = imputation_auc(imputation, users, items, labels, k)
        diag["flags"] = flags(diag)
        out.append(diag)
    return out
