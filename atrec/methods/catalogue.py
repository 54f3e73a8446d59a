"""What ``atrec methods`` lists: every registered method (1-5 star and binary) and propensity
estimator, with its
hyperparameters, search space, tuning budget (one for every method), what it uses and its
origin, plus the broken plug-ins."""

from __future__ import annotations

from atrec.methods.base import EPSILON
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.methods.registry import METHODS
from atrec.propensity.registry import PROPENSITIES
from atrec.run_settings import TUNING_BUDGET


def _method_rows(registry) -> list[dict]:
    methods = []
    for entry in registry.entries():
        cls = entry.cls
        space = "; ".join([f"{h.name}: {h.describe()}" for h in cls.hyperparameters]
                          + [f"{h.name} (corrected form): {h.describe()}"
                             for h in getattr(cls, "corrected_hyperparameters", ())])
        uses = [w for w, flag in (("propensity", cls.uses_propensity), ("MCAR labels",
                                                                        cls.uses_mcar)) if flag]
        options = {o.name: {"values": dict(o.values), "default": o.default, "help": o.help}
                   for o in cls.options}
        methods.append({"method": entry.name, "label": cls.label, "options": options,
                        "hyperparameters (search space)": space,
                        "with AT adds": (f"{EPSILON.name}: {EPSILON.describe()}"
                                         if cls.serves_in_at else "- (cannot serve in AT)"),
                        # the first trial is the values train would use (atrec tune --params)
                        "tuning budget": f"{TUNING_BUDGET} trials, 1st = train's values if any",
                        "uses": ", ".join(uses) or "-", "origin": entry.origin,
                        "description": cls.description})
    return methods


def binary_rows() -> tuple[list[dict], list[str]]:
    """``(rows, problems)`` of the binary methods (the methods the binary protocols run; a
    name shared with a 1-5 star method means this one under a binary protocol)."""
    rows = _method_rows(BINARY_METHODS)
    for row, entry in zip(rows, BINARY_METHODS.entries()):
        # what the reference code does that the corrected form (binary-clean's) does not
        row["code's form"] = getattr(entry.cls, "reference_forms", "") or "-"
    return rows, list(BINARY_METHODS.problems.values())


def catalogue_rows() -> tuple[list[dict], list[dict], list[str]]:
    """``(method rows, propensity rows, problems)``: one row per registered class, and one
    line per broken plug-in of either registry."""
    methods = _method_rows(METHODS)
    propensities = []
    for entry in PROPENSITIES.entries():
        cls = entry.cls
        notes = [n for n, flag in (("uses MCAR labels", cls.uses_mcar),
                                   ("Table 1 row", cls.paper_row),
                                   ("built by its experiment only", not cls.selectable)) if flag]
        propensities.append({"propensity": entry.name, "label": cls.label,
                             "notes": ", ".join(notes) or "-", "origin": entry.origin,
                             "description": cls.description})
    problems = list(METHODS.problems.values()) + list(PROPENSITIES.problems.values())
    return methods, propensities, problems

