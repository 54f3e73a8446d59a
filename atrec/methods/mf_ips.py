"""MF-IPS, the paper's base method and atrec's first registered one (docs/protocol.md,
"MF-IPS"): matrix factorisation with biases, trained on the self-normalised IPS mean of the
squared errors (``--loss ips``: the paper's Eq. 3) with the L2 term over whole tables; the step
of lowest validation loss gives MAE and MSE. The training loop is :func:`atrec.learners.mf.fit`.
"""

from __future__ import annotations

from atrec.learners import mf
from atrec.learners.base import MF
from atrec.methods.base import FitProblem, Method, MethodResult
from atrec.run_settings import TrainSettings


class MFIPS(Method):
    name = "mf-ips"
    label = "MF-IPS"
    description = "matrix factorisation, inverse-propensity-weighted squared error (Saito 2020)"
    reference = "Schnabel et al., ICML 2016; the paper's base learner"
    serves_in_at = True

    def fit(self, problem: FitProblem, params: dict, settings: TrainSettings) -> MethodResult:
        seeds = list(problem.seeds)
        init = mf.init_params(problem.num_users, problem.num_items, params["dim"], seeds,
                              settings.bias_init)
        pos = mf.batch_positions(settings, problem.train["user"].shape[1], seeds)
        res = mf.fit(init, problem.train, problem.val, problem.test, params["lam"], settings, pos)
        full = problem.test_full
        return MethodResult(res.mae, res.mse, res.best_step, res.best_val_loss, res.val_trace,
                            MF.scores(res.params, full["user"], full["item"]))

    def learner(self, params: dict, problem: FitProblem | None = None):
        """MF (:data:`atrec.learners.base.MF`); it needs nothing from ``problem``."""
        return MF
