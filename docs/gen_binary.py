"""Reference pages of the binary methods, one per method with its forms and options on it.

A binary method's page is made from what its class declares, so a plug-in's page and the
options a method declares come out the same way:

- the other names that run the method in one form or with some options, grouped on its page:
  the aliases :func:`atrec.methods.registry.aliases_for` gives (old names of a method's
  options), and any registered class that fixes a ``form`` of its own and whose nearest
  registered ancestor is the method (how forms were named before they were options);
- its options (:func:`gen_common.option_rows`) and, where its reference code and corrected form
  differ, which form each binary protocol runs by default (``epochs.forms``);
- its hyperparameters and search space, its ``reference`` values per dataset (the reference
  script's constants: the parameter set ``reference``) and the shipped ``tuned-atrec`` values
  under ``binary-clean``;
- what it reads (MCAR labels, and under which protocol that slice stays in the test set),
  whether it serves inside AT, and how its reference code differs from the corrected form
  (``reference_forms`` and its docstrings).
"""

from __future__ import annotations

from gen_common import (
    FORM_WORDS,
    aliases_of,
    doc_sections,
    hyperparameter_section,
    implied_words,
    option_rows,
    options_section,
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


def _parent(entry, by_class: dict) -> str | None:
    """The method a registered variant runs: the nearest registered ancestor of a class that
    fixes its ``form`` (``None`` for a method)."""
    if not getattr(entry.cls, "form", ""):
        return None
    for base in entry.cls.__mro__[1:]:
        if base in by_class:
            return by_class[base]
    return None


def binary_entries(registry=BINARY_METHODS) -> tuple[list, dict]:
    """``(methods, names)``: the registry's methods (entries), and per method name the
    ``(name, what it runs, description)`` of the other names that run it (module doc)."""
    entries = registry.entries()
    by_class = {e.cls: e.name for e in entries}
    methods, names = [], {}
    for e in entries:
        parent = _parent(e, by_class)
        if parent is None:
            methods.append(e)
        else:
            names.setdefault(parent, []).append(
                (e.name, FORM_WORDS.get(e.cls.form, e.cls.form), e.cls.description or ""))
    own = {e.name for e in methods}
    for alias, (method, implied) in aliases_of("binary").items():
        if method in own and alias not in own:
            names.setdefault(method, []).append((alias, implied_words(implied), ""))
    return methods, names


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


def _form_note(cls: type, variants: list) -> str:
    """Which form each binary protocol runs by default, for a method whose forms differ."""
    declares_form = any(r[0] == "`form`" for r in option_rows(cls))
    if not (cls.reference_forms or variants or declares_form):
        return "One form: it runs as its reference code computes it under every protocol."
    defaults = "; ".join(f"`{name}`: {FORM_WORDS.get(form, form or '-')}"
                         for name, form, _ in _protocol_forms())
    return ("The reference code's form and the corrected form differ (below). The protocol "
            f"chooses which runs by default ({defaults}).")


def _reads(cls: type) -> str:
    if not (getattr(cls, "leaks", False) or cls.uses_mcar):
        return "its training labels only (no MCAR label)"
    where = []
    for name, _, split in _protocol_forms():
        stays = split.get("in_test")
        if split.get("kind") == "uniform cells":   # a known truth's MCAR cells (binary-truth)
            where.append(f"`{name}`: {split.get('cells')} cells drawn uniformly from the truth "
                         f"with their labels, never scored")
        elif stays is not None:
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
    parts += options_section(cls, variants, _form_note(cls, variants))
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
