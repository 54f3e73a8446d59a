"""An example atrec plug-in: MF with user-mean imputation of unobserved pairs (``mf-umi``).

atrec finds :class:`MFUMI` through the entry point ``mf-umi`` of the group ``atrec.methods``
(``pyproject.toml``), and :class:`MFUMIAutodiff` through ``mf-umi-autodiff``: the same method
written as its loss alone, differentiated by TensorFlow. This module declares the methods; the
model is
:mod:`atrec_example_umi.learner`, which takes TensorFlow from atrec (``from atrec.runtime import
tf``): TensorFlow is then imported by the first fit, not by listing methods.
"""

from __future__ import annotations

from atrec.methods.base import DIM, LAM, FitProblem, Hyperparameter
from atrec.methods.learner_method import LearnerMethod
from atrec_example_umi.learner import make_autodiff_learner, make_learner, user_means

__version__ = "0.1.0"

GAMMA = Hyperparameter("gamma", "float", 1e-3, 1.0, log=True, maximum=100.0,
                       help="weight of the user-mean imputation term")

# Illustrative values, NOT tuned for mf-umi: MF-IPS's published Coat values (the authors'
# hyper_params.yaml, as in atrec/resources/published_params.yaml) with gamma 0.1, so that
# `atrec train --method mf-umi --params published` runs out of the box. Tune them
# (`atrec tune --method mf-umi`) before drawing conclusions.
_MF_IPS_COAT = {
    "uniform": {"dim": 15, "lam": 0.0020318358298265986},
    "user": {"dim": 15, "lam": 0.0020318358298265986},
    "item": {"dim": 15, "lam": 0.001971959151305676},
    "user-item": {"dim": 15, "lam": 0.001971959151305676},
    "nb-uniform": {"dim": 50, "lam": 0.0030830628433828537},
    "nb-true": {"dim": 5, "lam": 0.001971959151305676},
    "uniform-at": {"dim": 5, "lam": 1.1472419084164979e-05, "epsilon": 0.4497077480658323},
    "user-at": {"dim": 20, "lam": 0.0010069424705032128, "epsilon": 0.16376442797241736},
    "item-at": {"dim": 20, "lam": 0.0010069424705032128, "epsilon": 0.16376442797241736},
    "user-item-at": {"dim": 20, "lam": 0.0010069424705032128, "epsilon": 0.16376442797241736},
    "nb-uniform-at": {"dim": 5, "lam": 5.0816855783313745e-06, "epsilon": 0.3652389909987681},
    "nb-true-at": {"dim": 20, "lam": 0.0010069424705032128, "epsilon": 0.16376442797241736},
}
ILLUSTRATIVE_GAMMA = 0.1


class MFUMI(LearnerMethod):
    """MF-IPS plus ``gamma * mean_{U_B} (f(u,i) - m_u)^2`` over uniform cells ``U_B``, ``m_u``
    user ``u``'s mean training rating (formulas: :mod:`atrec_example_umi.learner`).

    A :class:`~atrec.methods.learner_method.LearnerMethod`: it writes :meth:`learner` only, and
    trains on MF-IPS's schedule alone or as A1/A2 of asymmetric tri-training.
    """

    name = "mf-umi"
    label = "MF-UMI"
    description = "MF-IPS plus imputation of uniform unobserved pairs by the user's mean rating"
    reference = "atrec example plug-in; per-user variant of Steck (KDD 2010)'s imputation"
    hyperparameters = (DIM, LAM, GAMMA)
    reference_params = {"coat": {f"mf-umi/{key}": {**values, "gamma": ILLUSTRATIVE_GAMMA}
                                 for key, values in _MF_IPS_COAT.items()}}

    def learner(self, params: dict, problem: FitProblem | None = None):
        """The mf-umi learner; its ``init`` carries the user means of ``problem.train``.

        Without ``problem`` the learner is returned for inspection, and its ``init`` raises
        ``ValueError``: the initial parameters need each replica's training split.
        """
        means = None if problem is None else user_means(
            problem.train["user"], problem.train["rating"], problem.num_users)
        return make_learner(means, params["gamma"])


class MFUMIAutodiff(MFUMI):
    """:class:`MFUMI` defined by its loss alone (:func:`atrec_example_umi.learner.loss`):
    TensorFlow's ``GradientTape`` gives its gradients inside the compiled loop, so no gradient
    is derived by hand. Same numbers as ``mf-umi`` up to float rounding; somewhat slower."""

    name = "mf-umi-autodiff"
    label = "MF-UMI (autodiff)"
    description = "mf-umi written as its loss alone, differentiated by TensorFlow"
    reference_params = {"coat": {k.replace("mf-umi/", "mf-umi-autodiff/"): v
                                 for k, v in MFUMI.reference_params["coat"].items()}}

    def learner(self, params: dict, problem: FitProblem | None = None):
        """The autodiff learner of :meth:`MFUMI.learner`'s model (same ``init``)."""
        means = None if problem is None else user_means(
            problem.train["user"], problem.train["rating"], problem.num_users)
        return make_autodiff_learner(means, params["gamma"])


__all__ = ["GAMMA", "MFUMI", "MFUMIAutodiff"]
