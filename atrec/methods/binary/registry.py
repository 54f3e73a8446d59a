"""The registry of binary methods: the methods the binary protocols run (their ``view`` is
``binary``), built-in and from installed packages (entry-point group ``atrec.binary_methods``).
A name may be a 1-5 star method's too (``mf-ips``, ``dr-jl``): under a binary protocol it means
the binary method (:func:`atrec.methods.registry.registry_for`)."""

from __future__ import annotations

from atrec.methods.base import validate_method_class
from atrec.methods.binary import baselines, cvib, dr, dr_bias, dt, escm2, ips, multi, stable_dr, tdr
from atrec.registry import Registry


def validate_binary_method_class(cls: type) -> None:
    """The method contract's checks (:func:`validate_method_class`), and ``view = "binary"``."""
    validate_method_class(cls)
    if getattr(cls, "view", None) != "binary":
        raise ValueError(f"method class {cls.__name__}: a binary method declares view = "
                         f"'binary' (subclass atrec.methods.binary.base.BinaryMethod)")


BINARY_METHODS = Registry("binary method", "atrec.binary_methods",
                          validate_binary_method_class)

BUILT_IN = (ips.BinaryMF, ips.BinaryIPS, ips.BinarySNIPS, dr.BinaryDR, dr.BinaryDRJL,
            dr.BinaryMRDRJL, dr.BinaryDRTextbook, dr.BinaryDRJLTextbook,
            dr.BinaryMRDRJLTextbook, dr.BinaryDRCoded, dr.BinaryDRJLCoded, dr.BinaryMRDRJLCoded,
            cvib.BinaryCVIB, cvib.BinaryDIB, tdr.BinaryTDR, tdr.BinaryTDRJL,
            tdr.BinaryTDRTextbook, tdr.BinaryTDRJLTextbook, tdr.BinaryTDRCoded,
            tdr.BinaryTDRJLCoded,
            dt.BinaryDTIPS, dt.BinaryDTDR, escm2.BinaryESCM2IPS, escm2.BinaryESCM2IPSCorrected,
            escm2.BinaryESCM2DR, escm2.BinaryESCM2DRCorrected, escm2.BinaryESMM,
            multi.BinaryMultiIPS, multi.BinaryMultiIPSCorrected, multi.BinaryMultiDR,
            multi.BinaryMultiDRCorrected,
            dr_bias.DRBias, dr_bias.DRMSE, dr_bias.DRBiasCorrected, dr_bias.DRMSECorrected,
            dr_bias.DRBiasCoded, dr_bias.DRMSECoded,
            stable_dr.StableDR, stable_dr.StableDRCorrected, stable_dr.StableDRCoded,
            baselines.BinaryBiasedMF, baselines.Popularity)


def _builtins() -> None:
    for cls in BUILT_IN:
        BINARY_METHODS.register(cls)


BINARY_METHODS.builtins(_builtins)
