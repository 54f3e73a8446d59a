"""One repetition of the estimator benchmark: draw the observations (and labels), estimate
every prediction matrix's loss with every estimator, under the noisy and the true propensity,
and compare with the realised and the expected truth.

* Inverse propensities: ``noisy`` is the reference's ``w = 0.5 / p + 0.5 / p_O`` with ``p_O``
  the repetition's observed fraction; ``true`` is ``w = 1 / p``.
* Truths: ``realised`` is the mean cross-entropy over all cells against the labels drawn
  (the reference's); ``expected`` puts the rates ``c`` in place of the labels.
* Relative error ``RE = |L_hat - L| / L``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from atrec.semisynthetic.estimators import ESTIMATORS, Terms, estimate_each, imputation_weights
from atrec.semisynthetic.forms import Form, propensity
from atrec.semisynthetic.predictions import prediction_matrices

PROPENSITY_KINDS = ("noisy", "true")
TRUTHS = ("realised", "expected")


@dataclass(frozen=True)
class Setup:
    """What every repetition of one form shares: the rates, the prediction matrices' terms,
    the propensity, each matrix's expected loss and (labels drawn once) the labels."""

    form: Form
    rates: np.ndarray
    terms: dict[str, Terms]
    p: np.ndarray
    expected: dict[str, float]
    fixed_labels: np.ndarray | None

    @classmethod
    def build(cls, form: Form, rates: np.ndarray,
              predictions: dict[str, np.ndarray]) -> "Setup":
        """The setup of ``form`` on ``rates`` (float64 ``(N,)``) and ``predictions``
        (``{name: (N,)}``, e.g. :func:`~atrec.semisynthetic.predictions.prediction_matrices`)."""
        rates = np.asarray(rates, dtype=np.float64).ravel()
        terms = {name: Terms.of(pred) for name, pred in predictions.items()}
        expected = {name: t.loss(rates) for name, t in terms.items()}
        labels = form.labels_for(rates, 0) if form.labels == "once" else None
        return cls(form, rates, terms, propensity(rates, form.propensity), expected, labels)


def setup_for(form: Form, rates: np.ndarray, prediction_seed: int) -> Setup:
    """:meth:`Setup.build` with the prediction matrices of ``prediction_seed``."""
    return Setup.build(form, rates, prediction_matrices(rates, prediction_seed))


def repetition(setup: Setup, seed: int) -> dict:
    """One repetition (seed ``seed``) as a JSON-ready dict: ``matrices`` (in table order),
    ``observed_fraction``,
    ``truth[matrix][realised|expected]``, ``estimate[noisy|true][matrix][estimator]`` and
    ``relative_error[noisy|true][realised|expected][matrix][estimator]``."""
    observed_mask = setup.form.observations(setup.p, seed)
    observed = np.flatnonzero(observed_mask)
    labels = (setup.fixed_labels if setup.fixed_labels is not None
              else setup.form.labels_for(setup.rates, seed))
    p_o = observed.size / setup.rates.size
    p_obs = setup.p[observed]
    weights = {"noisy": 0.5 / p_obs + 0.5 / p_o, "true": 1.0 / p_obs}
    y_obs = labels[observed].astype(np.float64)
    labels = labels.astype(np.float64)
    given = {kind: (w, imputation_weights(w)) for kind, w in weights.items()}
    truth, est = {}, {kind: {} for kind in PROPENSITY_KINDS}
    for name, terms in setup.terms.items():
        truth[name] = {"realised": terms.loss(labels), "expected": setup.expected[name]}
        for kind, values in estimate_each(terms, observed, y_obs, given).items():
            est[kind][name] = values
    rel = {kind: {t: {name: {e: abs(est[kind][name][e] - truth[name][t]) / truth[name][t]
                             for e in ESTIMATORS}
                      for name in setup.terms}
                  for t in TRUTHS}
           for kind in PROPENSITY_KINDS}
    return {"seed": int(seed), "matrices": list(setup.terms), "observed_fraction": p_o, "observed": int(observed.size),
            "truth": truth, "estimate": est, "relative_error": rel}
