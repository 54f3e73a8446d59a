"""Propensity estimators: the contract (:mod:`.base`), atrec's own (:mod:`.builtin`) and the
registry that names them (:mod:`.registry`). No TensorFlow is imported here."""

from atrec.propensity.base import PairPropensities, Propensity
from atrec.propensity.registry import (
                                       get_estimator,
                                       propensity_label,
                                       propensity_names,
                                       register_propensity,
                                       table1_propensities,
)

__all__ = ["PairPropensities", "Propensity", "get_estimator", "propensity_label",
           "propensity_names", "register_propensity", "table1_propensities"]
