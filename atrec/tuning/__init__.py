"""Hyperparameter tuning with Optuna: the search space (:mod:`.space`), shared studies
(:mod:`.study`), their storage (:mod:`.storage`), the protocol's configurations (:mod:`.configs`),
tuning on several validation splits (:mod:`.splits`) and the tuned parameter file
(:mod:`.export`). No TensorFlow is imported until a trial runs."""

from atrec.tuning.configs import (
                                  OBJECTIVE_NOTE,
                                  TuneRequest,
                                  make_objective,
                                  study_attrs,
                                  study_name,
                                  tune,
                                  tune_all,
                                  tune_config,
                                  tune_config_splits,
)
from atrec.tuning.export import EXPORT_HEADER, export_best, outcome_rows
from atrec.tuning.space import SEARCH_SPACE, SearchSpace
from atrec.tuning.splits import SPLIT_RULE, SplitSpread, split_seeds
from atrec.tuning.storage import default_storage_url, open_storage, storage_label
from atrec.tuning.study import (
                                  DEFAULT_PREFIX,
                                  DEFAULT_TRIALS,
                                  PerTrialTPESampler,
                                  Progress,
                                  StudyOutcome,
                                  WorkerSettings,
                                  quiet_optuna,
                                  run_study,
)

__all__ = ["DEFAULT_PREFIX", "DEFAULT_TRIALS", "EXPORT_HEADER", "OBJECTIVE_NOTE", "SEARCH_SPACE",
           "PerTrialTPESampler", "Progress", "SearchSpace", "StudyOutcome", "TuneRequest",
           "WorkerSettings", "default_storage_url", "export_best", "make_objective",
           "open_storage", "outcome_rows", "quiet_optuna", "run_study", "storage_label",
           "study_attrs", "study_name", "tune", "tune_all", "tune_config", "tune_config_splits",
           "SPLIT_RULE", "SplitSpread", "split_seeds"]
