"""Asymmetric tri-training as a wrapper over any registered method (Saito 2020, Algorithm 1).

A1 and A2 are the base method's learner (:meth:`atrec.methods.base.Method.learner`, trained with
the chosen propensity and its own initialisations), A3 is plain MF, as in the paper; the loop,
the pseudo-label law and the selection are :func:`atrec.learners.at.fit_at`'s. So ``--with-at``
is orthogonal to ``--method``: MF-IPS with AT is the paper's method, and any other method gets
the same wrapper without code of its own.
"""

from __future__ import annotations

from atrec.errors import AtrecError
from atrec.learners import at
from atrec.learners.base import MF
from atrec.methods.base import FitProblem, Method, MethodResult
from atrec.run_settings import ATSettings


def fit_with_at(method: Method, problem: FitProblem, params: dict,
                settings: ATSettings) -> MethodResult:
    """AT over ``method`` for the ``problem.replicas`` seeds; ``params`` holds ``epsilon``.

    The selection trace is A3's validation loss per pseudo-labelling step; ``traces`` holds
    every AT trace (:data:`atrec.learners.at.TRACE_NAMES`); ``scores`` are A3's final ones.
    """
    learner = method.learner(params, problem) if method.serves_in_at else None
    if learner is None or learner.init is None:
        raise AtrecError(f"method '{method.name}' cannot serve as A1/A2 of asymmetric "
                         f"tri-training: drop --with-at for it")
    learners = (learner, learner, MF)
    seeds = list(problem.seeds)
    inits = at.initial_params(problem.num_users, problem.num_items, params["dim"], seeds,
                              learners, settings.bias_init)
    res = at.fit_at(inits, problem.train, problem.val, problem.test, params["lam"],
                    params["epsilon"], settings, seeds, problem.num_users, problem.num_items,
                    learners=learners)
    full = problem.test_full
    return MethodResult(res.mae, res.mse, res.best_step, res.best_val_loss,
                        res.trace["val_loss"], MF.scores(res.params, full["user"], full["item"]),
                        traces=res.trace)
