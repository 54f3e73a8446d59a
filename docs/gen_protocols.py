"""Reference pages of the registered protocols, one per protocol, made from what its class
declares: how it sees the ratings and splits them per seed, its schedule (and each method's
departures from it), the criterion that selects the reported step, its metrics with their
definitions (from the metric registry), its parameter sets and reference values, the methods
it runs, and its docstrings. A built-in protocol's page links the hand-written section that
specifies it (:data:`SPEC`); a plug-in's page has its docstrings.
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass

from gen_common import doc_sections, table, values_text, yes

from atrec.evaluation.registry import METRICS as METRIC_REGISTRY
from atrec.names import DEFAULT_PROTOCOL
from atrec.protocols import PROTOCOLS

PROTOCOL_DIR = "reference/protocols"
# where each built-in protocol is specified in the project's words (relative to docs/)
SPEC = {"saito2020": ("The protocol", "protocol.md"),
        "ijcai2022": ("Protocols, ijcai2022", "protocols.md#ijcai2022"),
        "binary-icde24": ("Protocols, binary-icde24", "protocols.md#binary-icde24"),
        "binary-clean": ("Protocols, binary-clean", "protocols.md#binary-clean")}
VIEW_WORDS = {"stars": "the 1-5 ratings as they are",
              "binary": "binary labels, `y = 1` for a rating of 3 or more"}
RANKING_WORDS = {"test": "the evaluated test set", "test_full": "the whole MCAR test set"}


def protocol_entries(registry=PROTOCOLS) -> list:
    """Every registered protocol's entry, built-in first."""
    return registry.entries()


def _flat(record: dict, prefix: str = "") -> list[list[str]]:
    rows = []
    for key, value in record.items():
        if isinstance(value, dict):
            rows += _flat(value, f"{prefix}{key}.")
        else:
            rows.append([f"`{prefix}{key}`", f"`{value}`"])
    return rows


def _metric_rows(names) -> list[list[str]]:
    rows = []
    for name in names:
        try:
            m = METRIC_REGISTRY.get(name)
        except Exception:   # a name no installed package registers: a run says so in one line
            rows.append([f"`{name}`", "-", "-", "-", "not registered"])
            continue
        rows.append([f"`{name}`", m.label, "lower" if m.lower_is_better else "higher", m.kind,
                     m.description or "-"])
    return rows


def _split(cls: type) -> list[str]:
    out = ["## Split", "", cls.split_description or "-", ""]
    try:
        record = cls().split_record()
    except Exception:   # a plug-in's record may need more than a bare instance
        record = {}
    if record:
        out += ["What its records store about the split (`protocol.split`):", "",
                table(["field", "value"], _flat(record)), ""]
    return out


def _schedule(cls: type) -> list[str]:
    out = ["## Schedule and selection", "",
           table(["", ""], [["schedule", cls.schedule.describe()],
                            ["selection", cls.selection or "-"],
                            ["ranking metrics rank", RANKING_WORDS.get(cls.ranking_part,
                                                                       cls.ranking_part)]]), ""]
    epochs = getattr(cls, "epochs", None)
    if is_dataclass(epochs):
        out += ["How a method trains in epochs under it:", "",
                table(["setting", "value"], [[f"`{k}`", f"`{v}`"]
                                             for k, v in asdict(epochs).items()]), ""]
    if cls.method_steps:
        out += ["Methods whose loop differs from the schedule:", "",
                table(["method", "settings"],
                      [[f"`{m}`", ", ".join(f"{k} {v}" for k, v in s.items())]
                       for m, s in cls.method_steps.items()]), ""]
    return out


def _methods(links: dict[str, str]) -> list[str]:
    if not links:
        return []
    return ["## Methods it runs", "",
            ", ".join(f"[`{n}`](../{page})" for n, page in links.items()), ""]


def _reference(cls: type) -> list[str]:
    rows = [[dataset, f"`{key}`", values_text(values)]
            for dataset, entries in (cls.reference_params or {}).items()
            for key, values in entries.items()]
    if not rows:
        return []
    where = cls.reference or "its source"
    return ["## Reference values", "",
            f"The parameter set `reference` under this protocol, from {where}:", "",
            table(["dataset", "configuration", "values"], rows), ""]


def protocol_page(entry, method_links: dict[str, str]) -> str:
    """The reference page of one protocol entry; ``method_links``: each method name it runs ->
    its page, relative to ``reference/`` (a form's name links to its method's page)."""
    cls = entry.cls
    spec = SPEC.get(entry.name)
    parts = [f"# {cls.label} (`{entry.name}`)", "", cls.description or "", "",
             table(["", ""], [
                 ["`--protocol`", f"`{entry.name}`"],
                 ["ratings", VIEW_WORDS.get(cls.view, cls.view)],
                 ["reference", cls.reference or "-"],
                 ["seeds of a complete cell", str(cls.seeds)],
                 ["parameter sets (`--params`, in the default chain's order)",
                  ", ".join(f"`{s}`" for s in cls.param_sets) or "-"],
                 ["the default protocol", yes(entry.name == DEFAULT_PROTOCOL)],
                 ["specified in", f"[{spec[0]}](../../{spec[1]})" if spec else
                  "its docstrings, below"],
                 ["origin", entry.origin]]), ""]
    parts += _split(cls) + _schedule(cls)
    parts += ["## Metrics", "", table(["key", "label", "better", "kind", "definition"],
                                      _metric_rows(cls.metrics)), ""]
    parts += _reference(cls) + _methods(method_links)
    parts += doc_sections(cls, learners=False)
    return "\n".join(parts).rstrip() + "\n"
