"""DAMF, domain-adversarial matrix factorisation (Saito and Nomura, IJCAI 2022), as
docs/methods.md, "DAMF", states it.

An adversary ``h(u,i) = G_u . H_i`` measures how differently the predictor ``f`` (MF with
biases) behaves on uniformly drawn cells and on observed ones; ``f`` is trained on the MNAR
batches plus ``pen`` times that discrepancy, the adversary to maximise it, in alternating blocks
of 20 steps (predictor first). Formulas, schedule and the parameter layout:
:mod:`atrec.learners.damf`. The step of lowest plain MSE of ``f`` on the MNAR validation set
gives MAE and MSE (the method uses no propensity and no MCAR label).

This module imports no TensorFlow; the learner is imported when a fit asks for it.
"""

from __future__ import annotations

from atrec.learners.damf import make_learner
from atrec.methods.base import DIM, LAM, FitProblem, Hyperparameter
from atrec.methods.learner_method import LearnerMethod

PEN = Hyperparameter("pen", "float", 1e-2, 1.0, log=True, maximum=100.0,
                     help="DAMF: weight of the adversarial discrepancy in f's loss")


class DAMF(LearnerMethod):
    """DAMF (module doc); a :class:`~atrec.methods.learner_method.LearnerMethod`, so it trains
    on MF-IPS's schedule of observed batches (plus its own uniform cells) and serves as A1/A2
    of asymmetric tri-training.

    ``reference_params``: the values tuned by Saito and Nomura in
    ``usaito/ijcai2022-adversarial-mf``, under THEIR protocol (batch 2,048, 2,500 steps, zero bias
    initialisation), not atrec's; they run here as given. No values were published for DAMF inside
    AT (no ``epsilon``), so ``damf/none-at`` has none: ``--with-at --params published`` stops with a
    one-line error asking for ``atrec tune --method damf --with-at``.
    """

    name = "damf"
    label = "DAMF"
    description = "MF with a domain-adversarial discrepancy penalty (Saito & Nomura 2022)"
    reference = "Saito and Nomura, IJCAI 2022"
    hyperparameters = (DIM, LAM, PEN)
    uses_propensity = False
    reference_params = {
        "coat": {"damf/none": {"dim": 30, "lam": 1.96e-3, "pen": 5.29e-2}},
        "yahoo": {"damf/none": {"dim": 40, "lam": 5.54e-5, "pen": 3.80e-2}},
    }

    def learner(self, params: dict, problem: FitProblem | None = None):
        """The DAMF learner; it needs nothing from ``problem``."""
        return make_learner(params["pen"])
