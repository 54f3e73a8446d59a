"""CVIB and DIB under the binary protocols (``CVIB.py`` and ``DIB.py`` of the ICDE 2024
collection, classes ``MF_CVIB`` and ``MF_DIB``; docs/protocols.md, "The binary methods").

- ``cvib`` (Wang et al., NeurIPS 2020): one MF; per batch ``mean_O BCE(q, y) + alpha
  [-qbar_O log qbar_D - (1 - qbar_O) log(1 - qbar_D)] + gamma mean_O q log q``, with ``qbar_O``
  and ``qbar_D`` the mean predictions over the observed batch and over ``B`` pairs drawn from
  all ``users x items`` (the epoch's distinct pairs, sliced per batch:
  :mod:`atrec.learners.draws`); the stopping rule
  sums the batch means of the cross-entropy alone;
- ``dib`` (Liu et al., RecSys 2021): an unbiased ``(pred_W, pred_H)`` and a biased
  ``(bias_W, bias_H)`` embedding pair, ``s_u = sigmoid<Wu, Hu>``, ``s_b = sigmoid<Wb, Hb>``,
  ``s_all = sigmoid<Wu + Wb, Hu + Hb>``; per batch ``(1 - alpha) BCE(s_u, y) + gamma BCE(s_b, y)
  + alpha BCE(s_all, y)`` (batch means; no information term), one Adam over the four tables;
  the rule sums the total loss with ``tol = 1e-5``; the prediction is ``s_u``.

Both are kept exactly as their code computes them (PyTorch's clamped cross-entropy, CVIB's
unclamped ``log`` in its information term, DIB's ``k = 4`` class default): no bug of either
is among the reference code's traps (docs/protocols.md, "The reference code's traps"), so they
have no corrected variant. Under ``binary-clean`` the validation criterion is the plain mean
cross-entropy of the prediction (neither method has propensities).
"""

from __future__ import annotations

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, ReferenceRule, Stage
from atrec.methods.base import Hyperparameter
from atrec.methods.binary.base import COMMON, BinaryMethod, Trained
from atrec.methods.binary.ips import PRED, SOURCE, reference_table
from atrec.runtime import tf

DIB_TOL = 1e-5    # DIB.fit's default tolerance (the others use 1e-4)

CVIB_ALPHA = Hyperparameter("alpha", "float", 1e-3, 10.0, log=True, maximum=1e3,
                            help="weight of CVIB's balancing term (observed vs uniform means)")
CVIB_GAMMA = Hyperparameter("gamma", "float", 1e-4, 1.0, log=True, maximum=1e2,
                            help="weight of CVIB's entropy term mean_O q log q")
DIB_ALPHA = Hyperparameter("alpha", "float", 0.0, 1.0, maximum=1.0,
                           help="DIB: weight of the summed embeddings' loss (1 - alpha: the "
                                "unbiased part's)")
DIB_GAMMA = Hyperparameter("gamma", "float", 0.0, 2.0, maximum=1e2,
                           help="DIB: weight of the biased embeddings' loss")


def cvib_loss(p, b, alpha, gamma):
    """CVIB's batch loss ``[R]`` at parameters ``p`` (module doc)."""
    q = bm.mf_prob(p, "pred", b.users, b.items)
    q_obs = tf.reduce_mean(q, -1)
    q_all = tf.reduce_mean(bm.mf_prob(p, "pred", b.all_users, b.all_items), -1)
    balance = -q_obs * tf.math.log(q_all) - (1.0 - q_obs) * tf.math.log(1.0 - q_all)
    return (tf.reduce_mean(losses.bce(q, b.labels), -1) + alpha * balance
            + gamma * tf.reduce_mean(q * tf.math.log(q), -1))


def _cvib_step(state, b):
    q = bm.mf_prob(state.params, "pred", b.users, b.items)
    term = tf.reduce_mean(losses.bce(q, b.labels), -1)      # the rule sums the BCE alone
    state.minimize("pred", lambda p: cvib_loss(p, b, state.hp["alpha"], state.hp["gamma"]))
    return term


def dib_probs(p, users, items):
    """``(s_u, s_b, s_all)`` of DIB's embedding pairs at the pairs, each ``[R, n]``."""
    wu, hu = bm.rows(p["pred_W"], users), bm.rows(p["pred_H"], items)
    wb, hb = bm.rows(p["bias_W"], users), bm.rows(p["bias_H"], items)
    dot = lambda a, c: tf.sigmoid(tf.reduce_sum(a * c, -1))
    return dot(wu, hu), dot(wb, hb), dot(wu + wb, hu + hb)


def dib_loss(p, b, alpha, gamma):
    """DIB's batch loss ``[R]`` at parameters ``p`` (module doc)."""
    s_u, s_b, s_all = dib_probs(p, b.users, b.items)
    mean = lambda s: tf.reduce_mean(losses.bce(s, b.labels), -1)
    return (1.0 - alpha) * mean(s_u) + gamma * mean(s_b) + alpha * mean(s_all)


def _dib_step(state, b):
    return state.minimize("all", lambda p: dib_loss(p, b, state.hp["alpha"], state.hp["gamma"]))


class BinaryCVIB(BinaryMethod):
    """CVIB (``CVIB.py``, ``MF_CVIB``): one MF with the counterfactual variational information
    bottleneck's balancing and entropy terms (module doc). As the code computes it; the
    reference ``alpha`` is ``fit()``'s default 0.1, the script passing only ``gamma``."""

    name = "cvib"
    own_propensity = False     # unweighted
    serves_in_at = True
    label = "CVIB"
    description = "MF with CVIB's balancing and entropy terms (binary protocols)"
    reference = SOURCE + "CVIB.py"
    hyperparameters = COMMON + (CVIB_ALPHA, CVIB_GAMMA)
    reference_params = reference_table(
        "cvib", {"dim": 16, "lam": 1e-4, "lr": 0.01, "batch_size": 128, "alpha": 0.1,
                 "gamma": 0.05},
        {"dim": 32, "lam": 1e-4, "lr": 0.01, "batch_size": 1024, "alpha": 0.1, "gamma": 0.05})

    def train(self, run) -> Trained:
        stage = Stage("cvib", _cvib_step, {"pred": PRED}, int(run.values["batch_size"]),
                      extra=1)
        res = run.main(stage, run.tables("pred"), run.hp(), None, run.criterion(self.predict))
        return Trained(res.params, res, {})


class BinaryDIB(BinaryMethod):
    """DIB (``DIB.py``, ``MF_DIB``): biased and unbiased embedding pairs, the prediction from
    the unbiased pair (module doc). As the code computes it (with the reference ``alpha = gamma
    = 1`` on Coat the unbiased pair's own loss has weight 0: it learns only through ``s_all``);
    the rule's tolerance is DIB's ``1e-5``."""

    name = "dib"
    own_propensity = False     # unweighted
    serves_in_at = True
    label = "DIB"
    description = "MF with disentangled biased and unbiased embeddings (binary protocols)"
    reference = SOURCE + "DIB.py"
    hyperparameters = COMMON + (DIB_ALPHA, DIB_GAMMA)
    reference_params = reference_table(
        "dib", {"dim": 4, "lam": 1e-3, "lr": 0.01, "batch_size": 256, "alpha": 1.0,
                "gamma": 1.0},
        {"dim": 4, "lam": 1e-4, "lr": 0.01, "batch_size": 2048, "alpha": 0.5, "gamma": 0.5})

    def train(self, run) -> Trained:
        init = {**run.tables("pred"), **run.tables("bias")}
        group = Group(("pred_W", "pred_H", "bias_W", "bias_H"), lr="lr", wd="lam")
        stage = Stage("dib", _dib_step, {"all": group}, int(run.values["batch_size"]))
        res = run.main(stage, init, run.hp(), None, run.criterion(self.predict),
                       rule=ReferenceRule(run.replicas, tol=DIB_TOL))
        return Trained(res.params, res, {})
