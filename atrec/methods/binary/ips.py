"""MF, IPS and self-normalised IPS under the binary protocols (``MF.py`` and ``IPS.py`` of the
ICDE 2024 collection; docs/protocols.md, "The binary methods").

- ``mf``: ``mean_O BCE(q, y)``; the stopping rule sums the batch means;
- ``mf-ips``: the learned NCF propensity first (:mod:`atrec.methods.binary.propensity`, with the
  predictor's learning rate), then ``(1/B) sum_O w BCE(q, y)`` (a plain mean), only the
  predictor moving; the rule sums these batch means;
- ``mf-snips``: the same with the self-normalised mean ``sum_O w BCE / sum_O w`` (atrec's
  variant; no reference script).

``BCE`` is PyTorch's clamped form (:func:`atrec.learners.losses.bce`), as the scripts use it.
Under ``binary-clean`` the validation criterion is the plain mean cross-entropy for ``mf`` and
the self-normalised propensity-weighted one for the two weighted methods.
"""

from __future__ import annotations

from typing import ClassVar

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, Stage
from atrec.methods.binary.base import (
    COMMON,
    GAMMA,
    PROP_BATCH,
    PROP_LAM,
    BinaryMethod,
    Trained,
    trained_twice,
)
from atrec.methods.binary.nuisance import diagnose
from atrec.methods.binary.propensity import PROPENSITY_CE, fit_propensity, inverse_propensity
from atrec.names import NO_PROPENSITY, config_key
from atrec.runtime import tf

PRED = Group(("pred_W", "pred_H"), lr="lr", wd="lam")
SOURCE = "haoxuanli-pku/ICDE24-MNAR, real_world/"


def _mf_step(state, b):
    def loss(p):
        return tf.reduce_mean(losses.bce(bm.mf_prob(p, "pred", b.users, b.items), b.labels), -1)
    return state.minimize("pred", loss)


def _ips_terms(state, b):
    w = inverse_propensity(state.consts, b.users, b.items, state.hp["gamma"])
    return w, (lambda p: losses.bce(bm.mf_prob(p, "pred", b.users, b.items), b.labels))


def _ips_step(state, b):
    w, e = _ips_terms(state, b)
    return state.minimize("pred", lambda p: losses.weighted_mean(e(p), w))


def _snips_step(state, b):
    w, e = _ips_terms(state, b)
    return state.minimize("pred", lambda p: losses.self_normalised(e(p), w))


def reference_table(method: str, coat: dict, yahoo: dict) -> dict:
    """A method's ``reference`` values (``dataset -> config key -> values``): the constants of
    its script's ``para(args)`` per dataset."""
    key = config_key(NO_PROPENSITY, False, method)
    return {"coat": {key: coat}, "yahoo": {key: yahoo}}


def _rename(key: str, method: str) -> str:
    """``key`` of mf-ips's table (``none``, ``none-at``) as ``method``'s."""
    return f"{method}/{key}"


class BinaryMF(BinaryMethod):
    """Matrix factorisation on binary labels (``MF.py``): the reference script's model, loss,
    batches and stopping rule; nothing to correct. Serves as A1 and A2 of AT."""

    name = "mf"
    own_propensity = False     # unweighted
    label = "MF"
    description = "matrix factorisation, mean cross-entropy (binary protocols)"
    reference = SOURCE + "MF.py"
    reference_params = reference_table(
        "mf", {"dim": 16, "lam": 1e-4, "lr": 0.01, "batch_size": 128},
        {"dim": 128, "lam": 1e-5, "lr": 0.01, "batch_size": 4096})
    serves_in_at = True
    step = staticmethod(_mf_step)

    def _propensity(self, run):
        return {}, {}

    def _predictor(self, run, prop: dict):
        """Train the predictor (weighted by the frozen propensity ``prop``, if any)."""
        stage = Stage(self.name, type(self).step, {"pred": PRED}, int(run.values["batch_size"]))
        weights = None
        if prop:
            gamma = float(run.values["gamma"])
            weights = lambda u, i: inverse_propensity(prop, u, i, gamma)
        return run.main(stage, run.tables("pred"), run.hp(), prop or None,
                        run.criterion(lambda p, u, i: bm.mf_prob(p, "pred", u, i), weights))

    def train(self, run) -> Trained:
        prop, stages = self._propensity(run)
        res = self._predictor(run, prop)
        return Trained(res.params, res, stages, diagnose(run, prop))

    def predictors(self, run) -> tuple:
        prop, stages = self._propensity(run)
        first, second = trained_twice(run, lambda r: self._predictor(r, prop))
        return first.params, second.params, prop, {**stages, "A1": first, "A2": second}


class BinaryIPS(BinaryMF):
    """IPS with the reference code's learned propensity (``IPS.py``): the NCF model fitted by
    squared error on ``o`` over all pairs, lower-clipped at ``gamma``; the predictor's loss the
    plain (not self-normalised) weighted mean. Kept as the code runs it; ``mf-snips`` is the
    self-normalised form (the collection's ``MF_SNIPS``)."""

    name = "mf-ips"
    own_propensity = True       # BinaryMF's subclass: weighted by the learned propensity
    label = "IPS"
    description = "IPS with the learned NCF propensity (binary protocols)"
    reference = SOURCE + "IPS.py"
    hyperparameters = COMMON + (GAMMA, PROP_BATCH, PROP_LAM)
    corrected_hyperparameters = PROPENSITY_CE
    reference_params = reference_table(
        "mf-ips", {"dim": 16, "lam": 1e-3, "lr": 0.01, "batch_size": 128, "gamma": 0.05,
                   "prop_batch": 1024, "prop_lam": 1e-6},
        {"dim": 32, "lam": 1e-4, "lr": 0.01, "batch_size": 4096, "gamma": 0.05,
         "prop_batch": 32764, "prop_lam": 1e-4})
    step = staticmethod(_ips_step)

    def _propensity(self, run):
        prop, pre = fit_propensity(run)
        return prop, {"propensity": pre}


class BinarySNIPS(BinaryIPS):
    """IPS with the self-normalised mean ``sum w BCE / sum w`` per batch (the collection's
    ``MF_SNIPS`` class, which no script runs; the propensity as ``IPS.py``'s)."""

    name = "mf-snips"
    label = "SNIPS"
    description = "self-normalised IPS with the learned NCF propensity (binary protocols)"
    reference_params: ClassVar[dict] = {
        d: {_rename(k, "mf-snips"): v for k, v in entries.items()}
        for d, entries in BinaryIPS.reference_params.items()}
    step = staticmethod(_snips_step)
