"""A method defined by its learner alone, trained on MF-IPS's schedule (docs/protocol.md, "MF-IPS"):
batches of 1,024 observed ratings drawn as the authors drew them, Adam, ``steps`` updates, the
validation loss after every step and the test metrics at its lowest. A new method that only changes
the model or the loss subclasses :class:`LearnerMethod` and writes :meth:`Method.learner`; its
:meth:`~LearnerMethod.fit` (and AT's A1/A2) then come for free. The loop is
:func:`atrec.learners.mf.fit` with the learner in place of MF-IPS.
"""

from __future__ import annotations

import numpy as np

from atrec.learners import mf
from atrec.learners.base import initial_params
from atrec.methods.base import FitProblem, Method, MethodResult
from atrec.run_settings import TrainSettings


def stream_seeds(batch_seed: int | None, seeds) -> np.ndarray:
    """Per-replica seeds of a learner's random draws.

    Parameters
    ----------
    batch_seed : int or None
        The protocol's fixed batch seed (every seed then sees the same draws, as every seed
        sees the same batch positions), or None for per-seed streams.
    seeds : sequence of int
        The split seeds of the ``R`` replicas.

    Returns
    -------
    numpy.ndarray
        int64 ``[R]``.
    """
    if batch_seed is not None:
        return np.full(len(seeds), batch_seed, np.int64)
    return np.asarray(list(seeds), np.int64)


class LearnerMethod(Method):
    """Base class of methods given by :meth:`Method.learner` (module doc); the learner also
    serves as A1 and A2 of asymmetric tri-training."""

    serves_in_at = True

    def fit(self, problem: FitProblem, params: dict, settings: TrainSettings) -> MethodResult:
        """Train the learner on MF-IPS's schedule (:func:`atrec.learners.mf.fit`).

        Parameters
        ----------
        problem : FitProblem
            The stacked inputs of ``R`` seeds.
        params : dict
            Hyperparameter name -> value (``dim`` and ``lam`` at least).
        settings : atrec.run_settings.TrainSettings
            The protocol's schedule.

        Returns
        -------
        MethodResult
            Per-seed metrics at the step of lowest validation loss, and the final scores.

        Raises
        ------
        ValueError
            When :meth:`~atrec.methods.base.Method.learner` gives no learner with ``init``
            and ``scores``.
        """
        learner = self.learner(params, problem)
        if learner is None or learner.init is None or learner.scores is None:
            raise ValueError(f"method {self.name}: learner() must return a Learner with init "
                             f"and scores")
        seeds = list(problem.seeds)
        init = initial_params(learner, problem.num_users, problem.num_items, params["dim"],
                              seeds, settings.bias_init)
        pos = mf.batch_positions(settings, problem.train["user"].shape[1], seeds)
        res = mf.fit(init, problem.train, problem.val, problem.test, params["lam"], settings,
                     pos, learner=learner, streams=stream_seeds(settings.batch_seed, seeds),
                     cells=(problem.num_users, problem.num_items))
        full = problem.test_full
        return MethodResult(res.mae, res.mse, res.best_step, res.best_val_loss, res.val_trace,
                            learner.scores(res.params, full["user"], full["item"]))
