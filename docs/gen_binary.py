"""Reference pages of the binary methods, one per method with its forms and options on it.

A binary method's page is made from what its class declares, so a plug-in's page and an option
a method declares later come out the same way:

- the names that run the method in one form or with one option (today's ``dr-coded``,
  ``dr-jl-textbook``, ``escm2-dr-corrected``: a registered class with a ``form`` of its own
  whose nearest registered ancestor is the method), grouped on that method's page, and any
  aliases the registry declares (a mapping ``registry.aliases``: old name -> the method, or a
  pair / object naming it);
- its options: the class's ``options`` if it declares them (a mapping name -> values, or
  objects with ``name``, ``values``, ``default``, ``help``), else its form, whose default each
  binary protocol gives (``epochs.forms``);
- its hyperparameters and search space, its ``reference`` values per dataset (the reference
  script's constants: the parameter set ``reference``) and the shipped ``tuned-atrec`` values
  under ``binary-clean``;
- what it reads (MCAR labels, and under which protocol that slice stays in the test set),
  whether it serves inside AT, and how its reference code differs from the corrected form
  (``reference_forms`` and its docstrings).
"""

from __future__ import annotations

from collections.abc import Mapping

from gen_common import (
    doc_sections,
    hyperparameter_section,
    resource_yaml,
    source,
    table,
    values_text,
    yes,
)

from atrec.methods.binary.base import AT_EPSILON
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.protocols import PROTOCOLS

BINARY_DIR = "reference/binary"
FORM_WORDS = {"reference": "the reference code's form", "corrected": "the corrected form"}


def _parent(entry, by_class: dict) -> str | None:
    """The method a registered variant runs: the nearest registered ancestor of a class that
    fixes its ``form`` (``None`` for a method)."""
    if not getattr(entry.cls, "form", ""):
        return None
    for base in entry.cls.__mro__[1:]:
        if base in by_class:
            return by_class[base]
    return None


def _alias_target(target) -> str:
    if isinstance(target, str):
        return target.split(":")[0].split("[")[0].strip()
    name = getattr(target, "name", None) or getattr(target, "method", None)
    if isinstance(name, str):
        return name
    if isinstance(target, (tuple, list)) and target and isinstance(target[0], str):
        return target[0]
    return ""


def binary_entries(registry=BINARY_METHODS) -> tuple[list, dict]:
    """``(methods, variants)``: the registry's methods (entries), and per method name the
    ``(name, form or options, description)`` of the names that run it in one form."""
    entries = registry.entries()
    by_class = {e.cls: e.name for e in entries}
    methods, variants = [], {}
    for e in entries:
        parent = _parent(e, by_class)
        if parent is None:
            methods.append(e)
        else:
            variants.setdefault(parent, []).append(
                (e.name, FORM_WORDS.get(e.cls.form, e.cls.form), e.cls.description or ""))
    aliases = getattr(registry, "aliases", None)
    if isinstance(aliases, Mapping):
        names = {e.name for e in methods}
        for alias, target in aliases.items():
            method = _alias_target(target)
            if method in names and alias not in names:
                what = target if isinstance(target, str) else getattr(target, "options", "")
                variants.setdefault(method, []).append((alias, str(what or "an alias"), ""))
    return methods, variants


def _option_rows(cls: type) -> list[list[str]]:
    """The options a class declares (``options``), each as name, values, default, what."""
    declared = getattr(cls, "options", None)
    if not declared:
        return []
    items = declared.items() if isinstance(declared, Mapping) else \
        ((getattr(o, "name", str(o)), o) for o in declared)
    rows = []
    for name, spec in items:
        if isinstance(spec, (tuple, list)):
            values, default, what = spec, spec[0] if spec else "-", ""
        else:
            values = getattr(spec, "values", None) or getattr(spec, "choices", ()) or ()
            default = getattr(spec, "default", None)
            what = getattr(spec, "help", None) or getattr(spec, "description", None) or ""
        rows.append([f"`{name}`", ", ".join(f"`{v}`" for v in values) or "-",
                     "-" if default is None else f"`{default}`", what or "-"])
    return rows


def _protocol_forms() -> list[tuple[str, str, dict]]:
    """``(name, forms, mcar split)`` of every registered binary protocol."""
    out = []
    for e in PROTOCOLS.entries():
        if e.cls.view != "binary":
            continue
        epochs = getattr(e.cls, "epochs", None)
        try:
            split = e.cls().split_record().get("mcar_split", {})
        except Exception:   # a plug-in protocol's record may need more than a bare instance
            split = {}
        out.append((e.name, getattr(epochs, "forms", ""), split))
    return out


def _options_section(cls: type, variants: list) -> list[str]:
    out = ["## Options and forms", ""]
    rows = _option_rows(cls)
    if rows:
        out += ["Options (`atrec methods` lists them; each is recorded with the run):", "",
                table(["option", "values", "default", "what"], rows), ""]
    forms = _protocol_forms()
    if cls.reference_forms or variants:
        defaults = "; ".join(f"`{name}`: {FORM_WORDS.get(form, form or '-')}"
                             for name, form, _ in forms)
        out += [("The reference code's form and the corrected form differ (below). The "
                 f"protocol chooses which runs by default ({defaults})."), ""]
    else:
        out += ["One form: it runs as its reference code computes it under every protocol.", ""]
    if variants:
        out += ["Names that run this method in one form under any protocol:", "",
                table(["name", "runs", "what"],
                      [[f"`{n}`", form, d or "-"] for n, form, d in variants]), ""]
    return out


def _reads(cls: type) -> str:
    if not (getattr(cls, "leaks", False) or cls.uses_mcar):
        return "its training labels only (no MCAR label)"
    where = []
    for name, _, split in _protocol_forms():
        stays = split.get("in_test")
        if stays is not None:
            where.append(f"`{name}`: " + ("a slice left in the test set (a leak)" if stays
                                          else "a slice removed from the test set"))
    return ("the labels of a 5% slice of the MCAR data (marked †)"
            + (f"; {'; '.join(where)}" if where else ""))


def _reference_values(name: str, cls: type) -> list[str]:
    rows = []
    for dataset, entries in cls.reference_params.items():
        for key, values in entries.items():
            rows.append([dataset, f"`{key}`", values_text(values)])
    out = ["## Reference values", ""]
    if rows:
        out += [(f"The constants of its reference script ({cls.reference or 'its source'}): "
                 "the parameter set `reference` under the binary protocols. An `-at` entry "
                 f"adds `epsilon` {AT_EPSILON}, AT's threshold, atrec's choice (no script "
                 "runs AT)."), "", table(["dataset", "configuration", "values"], rows), ""]
    else:
        out += ["No reference values: give `--params FILE` or tune it first.", ""]
    tuned = resource_yaml("binary_clean_tuned_params.yaml").get("coat", {})
    shipped = [[f"`{k}`", values_text(v), f"{v['best_value']:.4f}" if "best_value" in v else "-"]
               for k, v in tuned.items() if k.rpartition("/")[0] == name
               or (not k.rpartition("/")[0] and name == "mf-ips")]
    if shipped:
        out += [("Shipped `tuned-atrec` values under `binary-clean` on Coat "
                 "([Protocols](../../protocols.md#binary-clean)); the criterion is the "
                 "method's own validation criterion:"), "",
                table(["configuration", "values", "best validation criterion"], shipped), ""]
    return out


def binary_page(entry, variants: list) -> str:
    """The reference page of one binary method entry, with its variants' names."""
    cls = entry.cls
    parts = [f"# {cls.label} (`{entry.name}`, binary)", "", cls.description or "", "",
             table(["", ""], [
                 ["`--method`", f"`{entry.name}` under a binary protocol"
                  + (" (" + ", ".join(f"`{n}`" for n, _, _ in variants) + ")" if variants
                     else "")],
                 ["reads", _reads(cls)],
                 ["serves inside AT (A1 and A2)", yes(bool(cls.serves_in_at))],
                 ["reference code", cls.reference or "-"],
                 ["source", source(cls, entry.origin)]]), ""]
    parts += _options_section(cls, variants)
    if cls.reference_forms:
        parts += ["## Where the reference code differs", "",
                  (f"As the code computes it: {cls.reference_forms}. Under `binary-icde24` it "
                   "runs so; the corrected form is below, and the "
                   "[traps](../../protocols.md#the-reference-codes-traps) of the collection "
                   "say what each changes."), ""]
    parts += doc_sections(cls, learners=False)
    parts += hyperparameter_section(
        cls, bool(cls.serves_in_at),
        ("`atrec tune --protocol binary-clean` samples the search space (Optuna TPE) on the "
         "validation part; a parameter file may give any accepted value."))
    parts += _reference_values(entry.name, cls)
    return "\n".join(parts).rstrip() + "\n"
