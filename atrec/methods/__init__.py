"""Debiasing methods: the contract (:mod:`.base`), MF-IPS (:mod:`.mf_ips`), asymmetric
tri-training over any of them (:mod:`.tri_training`) and the registry (:mod:`.registry`)."""

from atrec.methods.base import DIM, EPSILON, LAM, FitProblem, Hyperparameter, Method, MethodResult
from atrec.methods.registry import DEFAULT_METHOD, get_method, method_names, register_method

__all__ = ["DEFAULT_METHOD", "DIM", "EPSILON", "LAM", "FitProblem", "Hyperparameter", "Method",
           "MethodResult", "get_method", "method_names", "register_method"]
