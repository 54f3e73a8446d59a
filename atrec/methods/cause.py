"""CausE, causal embeddings (Bonner and Vasile, RecSys 2018), as docs/methods.md, "CausE", states
it.

A control model ``c(u,i) = Uc_u . Vc_i`` trains on the 5% MCAR slice of the test set (each
split's ``test_prior``, never evaluated); the predictor ``f`` (MF with biases) trains on the MNAR
batches with an extra pull ``cause_pen * (l2(Theta - sg Uc) + l2(Beta - sg Vc))`` towards the
control tables. Formulas, schedule and the parameter layout: :mod:`atrec.learners.cause`.
The step of lowest plain MSE of ``f`` on the MNAR validation set gives MAE and MSE (the method
uses no propensity, so the loop's validation loss is the plain MSE). It reads MCAR labels
(``uses_mcar``), so tables report it apart, as NB (true).

This module imports no TensorFlow; the learner is imported when a fit asks for it.
"""

from __future__ import annotations

from atrec.learners.cause import make_learner, slice_arrays
from atrec.methods.base import DIM, LAM, FitProblem, Hyperparameter
from atrec.methods.learner_method import LearnerMethod

CAUSE_PEN = Hyperparameter("cause_pen", "float", 1e-10, 1.0, log=True, maximum=100.0,
                           help="CausE: weight of the pull of f's embeddings towards the "
                                "control model's")


class CausE(LearnerMethod):
    """CausE (module doc); a :class:`~atrec.methods.learner_method.LearnerMethod`, so it trains
    on MF-IPS's schedule and serves as A1/A2 of asymmetric tri-training.

    ``reference_params``: the values tuned by Saito and Nomura (IJCAI 2022) in their repository
    ``usaito/ijcai2022-adversarial-mf``, tuned under THEIR protocol (batch 2,048,
    2,500 steps, zero bias initialisation), not atrec's; they run here as given, untuned for
    atrec's 500 steps of 1,024. No values were published for CausE inside AT (no ``epsilon``),
    so ``cause/none-at`` has none: ``--with-at --params published`` stops with a one-line error
    asking for ``atrec tune --method cause --with-at``.
    """

    name = "cause"
    label = "CausE"
    description = ("MF pulled towards a control MF trained on the 5% MCAR slice "
                   "(Bonner & Vasile 2018)")
    reference = "Bonner and Vasile, RecSys 2018; tuned values: Saito and Nomura, IJCAI 2022"
    hyperparameters = (DIM, LAM, CAUSE_PEN)
    uses_propensity = False
    uses_mcar = True
    reference_params = {
        "coat": {"cause/none": {"dim": 40, "lam": 5.68e-3, "cause_pen": 2.89e-2}},
        "yahoo": {"cause/none": {"dim": 40, "lam": 6.84e-5, "cause_pen": 8.95e-8}},
    }

    def learner(self, params: dict, problem: FitProblem | None = None):
        """The CausE learner; its ``init`` carries the MCAR slices of ``problem.splits``.

        Without ``problem`` the learner is returned for inspection (AT asks whether the method
        can serve as A1/A2), and its ``init`` raises ``ValueError``.
        """
        slices = None if problem is None else slice_arrays(problem.splits)
        return make_learner(slices, params["cause_pen"])
