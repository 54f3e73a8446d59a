"""The binary methods' shared hyperparameters and forms: what every binary method declares
(:data:`COMMON`), the nuisance models' keys, and the ``form`` option with its two values.

A home of their own so that the base class (:mod:`atrec.methods.binary.base`) and a fit's
inputs (:mod:`atrec.methods.binary.run`) both read them; :mod:`~atrec.methods.binary.base`
re-exports every name, where the methods import them from.
"""

from __future__ import annotations

from atrec.methods.base import Hyperparameter
from atrec.methods.options import Option

# the hyperparameters every binary method shares (the reference code's k, weight decay, lr, B)
BINARY_DIM = Hyperparameter("dim", "int", 2, 64, step=2, maximum=1024,
                            help="embedding size k (N(0, 1) entries)")
BINARY_LAM = Hyperparameter("lam", "float", 1e-7, 1e-1, log=True, maximum=10.0,
                            help="the predictor's weight decay (PyTorch's Adam, coupled L2)")
LR = Hyperparameter("lr", "float", 1e-3, 1e-1, log=True, maximum=10.0, positive=True,
                    help="the predictor's Adam learning rate")
BATCH = Hyperparameter("batch_size", "int", 64, 4096, step=64, maximum=65536,
                       help="observed pairs per batch")
GAMMA = Hyperparameter("gamma", "float", 0.01, 0.3, maximum=1.0, positive=True,
                       help="lower clip of the propensity")
PROP_BATCH = Hyperparameter("prop_batch", "int", 256, 32768, step=256, maximum=1 << 20,
                            help="all-pairs per batch of the propensity model")
PROP_LAM = Hyperparameter("prop_lam", "float", 1e-7, 1.0, log=True, maximum=10.0,
                          help="the propensity model's weight decay")
PROP_LR = Hyperparameter("prop_lr", "float", 1e-3, 1e-1, log=True, maximum=10.0, positive=True,
                         help="the propensity model's Adam learning rate")
COMMON = (BINARY_DIM, BINARY_LAM, LR, BATCH)
# The forms of a method whose reference code computes something other than its paper's
# estimator: the code's (binary-icde24's default) or the corrected one (binary-clean's). The
# protocol supplies the default (EpochSettings.forms); a run may choose the other.
CODED, CORRECTED = "coded", "corrected"
FORM = Option("form", ((CODED, "as the reference code computes it (its deviations kept)"),
                       (CORRECTED, "the corrected form (the paper's estimator)")), None,
              "which form of the method runs: the reference code's or the corrected one")
# the corrected form's imputation MF starts at its N(0, 1) draws times this (entries of sd
# 0.01; issue 60 measured DR-JL's imputation AUC 0.52 from N(0, 1) at k about 50, 0.62 at 0.1,
# 0.65 at 0.01)
IMPUTATION_INIT_SCALE = 0.01
# The corrected form's imputation MF has its own Adam: these two hyperparameters (the code's
# form trains it with the predictor's lr and lam, or the method's imp_lam). Each defaults to
# the predictor's value, so that a parameter set without them (the reference values, a file
# tuned before they existed) runs as the corrected form ran before they were added.
IMP_LR = Hyperparameter("imp_lr", "float", 1e-3, 1e-1, log=True, maximum=10.0, positive=True,
                        default="lr", help="corrected form: the imputation MF's Adam learning "
                                           "rate (default: lr)")
IMP_LAM_OWN = Hyperparameter("imp_lam", "float", 1e-7, 1e-1, log=True, maximum=10.0,
                             default="lam", help="corrected form: the imputation MF's weight "
                                                 "decay (default: lam)")
IMPUTATION_OWN = (IMP_LR, IMP_LAM_OWN)   # corrected_hyperparameters where the code has no imp_lam
