"""``ijcai-dr``: what the IJCAI 2022 code (Saito and Nomura, ``usaito/ijcai2022-adversarial-mf``)
trains and reports as "DR", named for what it is: an IPS predictor trained beside an imputation
model that never reaches it (docs/protocols.md, "ijcai-dr"; formulas, schedule and what is kept from
the code: :mod:`atrec.learners.ijcai_dr`). Not doubly robust; atrec's DR-JL is. Its values
(``reference``) exist under the ``ijcai2022`` protocol, which runs it on the code's schedule
(5,000 loop steps of 2,048: 125 cycles of 20 imputation and 20 predictor steps).

This module loads no TensorFlow (:mod:`atrec.runtime.tf` imports it on first use).
"""

from __future__ import annotations

from atrec.learners.ijcai_dr import make_learner
from atrec.methods.base import FitProblem
from atrec.methods.learner_method import LearnerMethod


class IJCAIDR(LearnerMethod):
    """The IJCAI 2022 code's "DR" (module doc); the step of lowest self-normalised IPS
    validation MSE (the run's propensity) gives MAE and MSE."""

    name = "ijcai-dr"
    label = "IJCAI-DR"
    description = ("the IJCAI 2022 code's 'DR': IPS beside an imputation model that cancels "
                   "out (not doubly robust)")
    reference = "Saito and Nomura, IJCAI 2022 (code's MFDR); values: protocol ijcai2022"

    def learner(self, params: dict, problem: FitProblem | None = None):
        """The ``ijcai-dr`` learner; it needs nothing from ``problem``."""
        return make_learner()
