"""Reference pages of every registered method and propensity estimator, made from atrec's
registries when the site is built, so a plug-in installed beside atrec gets its page too.

A page gives what the class declares (name, label, description, its docstring, hyperparameters
and search space, what it uses, whether it serves inside AT, its source) and the Coat numbers
that ship with atrec: the parameter sets in ``atrec/resources`` (with the tuning's best
validation loss where one was recorded), the paper's Table 1, and atrec's measured means in
``docs/data/coat_measured.csv``.

This file is also the MkDocs hook (``hooks:`` in ``mkdocs.yml``): :func:`on_config` puts the
pages in the navigation, :func:`on_files` adds them to the build, and :func:`on_page_markdown`
replaces ``<!-- atrec:measured -->`` and ``<!-- atrec:table1 -->`` in a hand-written page by
the measured tables, so each number has one home (the CSV files).
"""

from __future__ import annotations

import ast
import csv
import importlib.util
import inspect
import re
from importlib import resources
from pathlib import Path

import yaml

from atrec.methods.base import EPSILON, Method
from atrec.methods.registry import METHODS
from atrec.names import DEFAULT_METHOD
from atrec.propensity.registry import PROPENSITIES
from atrec.registry import BUILT_IN
from atrec.results.params import ENTRY_METADATA

HERE = Path(__file__).resolve().parent
MEASURED_CSV = HERE / "data" / "coat_measured.csv"
MEASURED_MARK = "<!-- atrec:measured -->"
TABLE1_MARK = "<!-- atrec:table1 -->"
SHIPPED_MARK = "<!-- atrec:tuned-atrec -->"
BINARY_SHIPPED_MARK = "<!-- atrec:binary-clean-tuned -->"
NAV_TITLE = "Methods and propensities"
METHOD_DIR = "reference/methods"
PROPENSITY_DIR = "reference/propensities"
INDEX = "reference/index.md"
NO_PROPENSITY = "none"
METRICS = (("mae", "MAE"), ("mse", "MSE"), ("ndcg", "nDCG@3"))

_ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|attr|data|obj|exc):`([^`]+)`")
_HTML_ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|attr|data|obj|exc):<code>~?([^<]*)</code>")
_RULE = re.compile(r"^\s*=+(\s+=+)+\s*$")


# ---------------------------------------------------------------------------- shipped data

def _resource_yaml(name: str) -> dict:
    with resources.files("atrec").joinpath("resources", name).open(encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def shipped_params() -> dict[str, dict[str, dict]]:
    """``set -> config key -> values`` for Coat: ``published`` (the paper's authors' values,
    MF-IPS's keys have no method prefix) and ``tuned-atrec`` (with ``best_value``)."""
    return {"published": _resource_yaml("published_params.yaml").get("coat", {}),
            "tuned-atrec": _resource_yaml("tuned_atrec_params.yaml").get("coat", {})}


def paper_table1() -> list[dict]:
    """Coat rows of the paper's Table 1 (``resources/paper_table1.csv``)."""
    text = resources.files("atrec").joinpath("resources", "paper_table1.csv").read_text("utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return [r for r in rows if r["dataset"] == "coat"]


def measured_rows(path: Path = MEASURED_CSV) -> list[dict]:
    """atrec's measured Coat means (``docs/data/coat_measured.csv``), one dict per row."""
    lines = [line for line in path.read_text("utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


# ---------------------------------------------------------------------------- text helpers

def rst_to_markdown(text: str) -> str:
    """A docstring's reStructuredText as Markdown, well enough for prose: roles and double
    back-quotes become code spans, simple tables become fenced blocks."""
    def role(match: re.Match) -> str:
        target = match.group(1)
        if "<" in target and target.endswith(">"):
            return f"`{target.split('<')[0].strip()}`"
        return f"`{target.lstrip('~').split('.')[-1] if target.startswith('~') else target}`"

    text = _ROLE.sub(role, text).replace("``", "`")
    out, in_table = [], False
    for line in text.splitlines():
        if not in_table and _RULE.match(line):
            out.append("```text")
            in_table = True
        elif in_table and not line.strip():
            out.append("```")
            in_table = False
        out.append(line)
    if in_table:
        out.append("```")
    return "\n".join(out)


def _own_doc(obj) -> str:
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    return inspect.cleandoc(doc) if doc else ""


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"
              for row in rows]
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _source(cls: type, origin: str) -> str:
    where = f"`{cls.__module__}.{cls.__qualname__}`"
    if origin == BUILT_IN:
        return f"{where} (`{cls.__module__.replace('.', '/')}.py`, built into atrec)"
    return f"{where}, from the installed package `{origin}` (an entry point)"


def serves_in_at(cls: type) -> bool:
    """Whether a method can be A1 and A2 of asymmetric tri-training."""
    declared = getattr(cls, "serves_in_at", None)
    if isinstance(declared, bool):
        return declared
    return cls.learner is not Method.learner


def _module_file(module_name: str) -> Path | None:
    """The source file of a module, found without importing it or its parent packages (a
    learner package imports TensorFlow): only the top-level package is looked up."""
    top, *rest = module_name.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        base = Path(root, *rest)
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if rest and path.is_file():
                return path
    return None


def _source_doc(module_name: str) -> str:
    """A module's docstring read from its source file, without importing it."""
    path = _module_file(module_name)
    return (ast.get_docstring(ast.parse(path.read_text("utf-8"))) or "") if path else ""


def learner_modules(*docs: str) -> list[str]:
    """The learner modules a method's docstrings point to (``:mod:`atrec.learners.dr```,
    ``:func:`atrec.learners.mf.fit```): where its formulas are written out."""
    found = []
    for doc in docs:
        for target in re.findall(r":(?:mod|func|class|meth):`~?([\w.]+)`", doc):
            parts = target.split(".")
            for end in range(len(parts), 1, -1):
                name = ".".join(parts[:end])
                if _module_file(name) is None:
                    continue
                if {"learners", "learner"} & set(parts[:end]) and parts[end - 1] != "base" \
                        and name not in found:
                    found.append(name)
                break
    return found


def _doc_sections(cls: type) -> list[str]:
    """The class's own docstring, its module's and its learner modules', as Markdown."""
    out = []
    doc = _own_doc(cls)
    if doc:
        out += ["## What it computes", "", rst_to_markdown(doc), ""]
    module = inspect.getmodule(cls)
    module_doc = _own_doc(module) if module else ""
    if module_doc:
        out += ["## From its module", "", rst_to_markdown(module_doc), ""]
    for name in learner_modules(doc, module_doc):
        out += [f"## Its learner: `{name}`", "", rst_to_markdown(_source_doc(name)), ""]
    return out


def _values(values: dict) -> str:
    return ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in sorted(values.items()) if k not in ENTRY_METADATA)


def _measured_table(rows: list[dict], first: str) -> str:
    header = [first, "params"] + [f"{label} {side}" for _, label in METRICS
                                  for side in ("w/o AT", "w/ AT")]
    body = [[r[first], r["params"]] + [r[key + suffix] or "-" for key, _ in METRICS
                                       for suffix in ("", "_at")] for r in rows]
    return _table(header, body)


# ---------------------------------------------------------------------------- pages

def method_page(entry, params: dict, paper: list[dict], measured: list[dict]) -> str:
    """The reference page of one method entry (:class:`atrec.registry.Entry`)."""
    cls = entry.cls
    uses = [w for w, flag in (("a propensity (weights 1/P)", cls.uses_propensity),
                              ("MCAR labels (marked †)", cls.uses_mcar)) if flag]
    parts = [f"# {cls.label} (`{entry.name}`)", "", cls.description or "", "",
             _table(["", ""], [
                 ["`--method`", f"`{entry.name}`"],
                 ["uses", "; ".join(uses) or "neither a propensity nor MCAR labels"],
                 ["serves inside AT (A1 and A2)", _yes(serves_in_at(cls))],
                 ["reference", cls.reference or "-"],
                 ["source", _source(cls, entry.origin)]]), ""]
    parts += _doc_sections(cls)
    rows = [[f"`{h.name}`", h.kind, h.describe(), h.allowed, h.help or "-"]
            for h in cls.hyperparameters]
    rows.append([f"`{EPSILON.name}` (with AT only)", EPSILON.kind, EPSILON.describe(),
                 EPSILON.allowed, EPSILON.help])
    parts += ["## Hyperparameters and search space", "",
              ("`atrec tune` samples the search space (Optuna TPE); a parameter file may give "
              "any accepted value."), "",
              _table(["name", "kind", "search space", "accepted in a file", "what"], rows), ""]
    parts += _method_numbers(entry.name, cls, params, paper, measured)
    return "\n".join(parts).rstrip() + "\n"


def _method_numbers(name: str, cls: type, params: dict, paper: list[dict],
                    measured: list[dict]) -> list[str]:
    out = ["## Coat numbers shipped with atrec", ""]
    sets = []
    prefix = "" if name == "mf-ips" else f"{name}/"
    for set_name, table in params.items():
        for key, values in table.items():
            if (prefix and key.startswith(prefix)) or (not prefix and "/" not in key):
                best = values.get("best_value")
                sets.append([set_name, f"`{key}`", _values(values),
                             f"{best:.4f}" if best is not None else "-"])
    for key, values in cls.reference_params.get("coat", {}).items():
        sets.append(["reference (= published for this method)", f"`{key}`", _values(values),
                     "-"])
    if sets:
        out += [("Parameter sets (`--params`); *best validation loss* is the tuning study's "
                "objective where it was recorded."), "",
                _table(["set", "configuration", "values", "best validation loss"], sets), ""]
    mine = [r for r in measured if r["method"] == name]
    if mine:
        out += ["Measured by atrec, mean of 20 seeds ([Results](../../results.md)):", "",
                _measured_table(mine, "propensity"), ""]
    if name == "mf-ips" and paper:
        out += ["The paper's Table 1 (Saito, SIGIR 2020):", "", _paper_table(paper), ""]
    if len(out) == 2:
        out += [("No Coat numbers ship for this method: train it "
                f"(`atrec train --method {name} --dataset coat`) or tune it first."), ""]
    return out


def _paper_table(paper: list[dict]) -> str:
    by = {(r["propensity"], r["with_at"]): r for r in paper}
    rows = []
    for prop in dict.fromkeys(r["propensity"] for r in paper):
        wo, w = by.get((prop, "false"), {}), by.get((prop, "true"), {})
        rows.append([prop] + [x.get(k, "-") for k in ("mae", "mse", "ndcg3_paper")
                              for x in (wo, w)])
    return _table(["propensity", "MAE w/o AT", "MAE w/ AT", "MSE w/o AT", "MSE w/ AT",
                   "nDCG@3 w/o AT", "nDCG@3 w/ AT"], rows)


def propensity_page(entry, params: dict, paper: list[dict], measured: list[dict]) -> str:
    """The reference page of one propensity entry (:class:`atrec.registry.Entry`)."""
    cls = entry.cls
    parts = [f"# {cls.label} (`{entry.name}`)", "", cls.description or "", "",
             _table(["", ""], [
                 ["`--propensity`", f"`{entry.name}`" if cls.selectable
                  else "not offered: built by its own experiment only"],
                 ["uses MCAR labels", _yes(cls.uses_mcar) + (" (marked †)" if cls.uses_mcar
                                                             else "")],
                 ["a row of the paper's Table 1", _yes(cls.paper_row)],
                 ["datasets", ", ".join(cls.datasets) if cls.datasets else "any"],
                 ["source", _source(cls, entry.origin)]]), ""]
    parts += _doc_sections(cls)
    parts += ["## Coat numbers shipped with atrec", ""]
    published = {k: v for k, v in params.get("published", {}).items()
                 if k in (entry.name, f"{entry.name}-at")}
    if published:
        parts += [("MF-IPS with this estimator, the authors' published values (`--params "
                  "published`):"), "",
                  _table(["configuration", "values"],
                         [[f"`{k}`", _values(v)] for k, v in published.items()]), ""]
    mine = [r for r in measured if r["propensity"] == entry.name]
    if mine:
        parts += [("Measured by atrec with this estimator, mean of 20 seeds "
                  "([Results](../../results.md)):"), "", _measured_table(mine, "method"), ""]
    rows = [r for r in paper if r["propensity"] == entry.name]
    if rows:
        parts += ["The paper's Table 1 (MF-IPS with this estimator):", "", _paper_table(rows),
                  ""]
    if not (published or mine or rows):
        parts += ["No Coat numbers ship for this estimator.", ""]
    return "\n".join(parts).rstrip() + "\n"


def index_page(methods, propensities, problems) -> str:
    """The catalogue: one line per method and estimator, linking their pages."""
    m_rows = [[f"[`{e.name}`](methods/{e.name}.md)", e.cls.label, _yes(e.cls.uses_propensity),
               _yes(e.cls.uses_mcar), _yes(serves_in_at(e.cls)), e.origin] for e in methods]
    p_rows = [[f"[`{e.name}`](propensities/{e.name}.md)", e.cls.label, _yes(e.cls.uses_mcar),
               _yes(e.cls.paper_row), e.origin] for e in propensities]
    parts = ["# Methods and propensities", "",
             ("Every method and propensity estimator registered when this site was built: "
             "atrec's own and those of installed plug-ins (entry-point groups `atrec.methods` "
             "and `atrec.propensities`). `atrec methods` prints the same catalogue."), "",
             "## Methods", "",
             _table(["method", "label", "propensity", "MCAR labels", "inside AT", "origin"],
                    m_rows), "", "## Propensity estimators", "",
             _table(["propensity", "label", "MCAR labels", "Table 1 row", "origin"], p_rows),
             ""]
    if problems:
        parts += ["## Plug-ins left out", ""] + [f"- {line}" for line in problems] + [""]
    return "\n".join(parts)


def pages() -> dict[str, str]:
    """Every generated page: ``path under docs/ -> Markdown``."""
    params, paper, measured = shipped_params(), paper_table1(), measured_rows()
    methods, propensities = METHODS.entries(), PROPENSITIES.entries()
    out = {INDEX: index_page(methods, propensities,
                             list(METHODS.problems.values()) +
                             list(PROPENSITIES.problems.values()))}
    for e in methods:
        out[f"{METHOD_DIR}/{e.name}.md"] = method_page(e, params, paper, measured)
    for e in propensities:
        out[f"{PROPENSITY_DIR}/{e.name}.md"] = propensity_page(e, params, paper, measured)
    return out


def nav() -> list:
    """The navigation of the generated pages."""
    return [{"Catalogue": INDEX},
            {"Methods": [{e.name: f"{METHOD_DIR}/{e.name}.md"} for e in METHODS.entries()]},
            {"Propensities": [{e.name: f"{PROPENSITY_DIR}/{e.name}.md"}
                              for e in PROPENSITIES.entries()]}]


def measured_markdown() -> str:
    """The measured Coat table of the Results page (every row of the CSV)."""
    rows = measured_rows()
    for r in rows:
        r["method"] = f"{r['method']}, {r['propensity']}"
    return _measured_table(rows, "method").replace("| method |", "| method, propensity |", 1)


def table1_markdown() -> str:
    """Table 1 on Coat: atrec's measured MF-IPS means beside the paper's, with the difference."""
    paper = {(r["propensity"], r["with_at"] == "true"): r for r in paper_table1()}
    keys = (("mae", "mae"), ("mse", "mse"), ("ndcg", "ndcg3_paper"))
    rows = []
    for r in measured_rows():
        if r["method"] != "mf-ips" or r["params"] != "published":
            continue
        cells = []
        for mine, theirs in keys:
            for at in (False, True):
                value, published = r[mine + ("_at" if at else "")], paper[(r["propensity"], at)]
                places = len(value.split(".")[-1])
                diff = round(float(value) - float(published[theirs]), places) + 0.0  # no -0
                cells.append(f"{value} ({published[theirs]}, {diff:+.{places}f})")
        rows.append([r["propensity"]] + cells)
    return _table(["propensity"] + [f"{label} {side}" for _, label in METRICS
                                    for side in ("w/o AT", "w/ AT")], rows)


def _g(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


SHIPPED_FIXED = ("trials", "best_value", "reference_value", "start", "start_value", "dim", "lam",
                 "epsilon")


def shipped_markdown() -> str:
    """Every ``tuned-atrec`` entry on Coat (``atrec/resources/tuned_atrec_params.yaml``): its
    budget, the study's best validation loss, its first trial's loss (at the authors' values,
    or at the values of the set named in brackets) and the values; a method's own
    hyperparameters in the last column."""
    rows = []
    for key, entry in sorted(shipped_params()["tuned-atrec"].items()):
        if "reference_value" in entry:
            first = f"{entry['reference_value']:.4f}"
        elif "start_value" in entry:
            first = f"{entry['start_value']:.4f} ({entry['start']})"
        else:
            first = "-"
        own = ", ".join(f"{k} {_g(v)}" for k, v in entry.items() if k not in SHIPPED_FIXED)
        rows.append([f"`{key}`", entry.get("trials", "-"), f"{entry['best_value']:.4f}", first,
                     entry["dim"], _g(entry["lam"]), _g(entry.get("epsilon", "-")),
                     own or "-"])
    return _table(["configuration", "trials", "best validation loss", "first trial's loss",
                   "dim", "lam", "epsilon", "own"], rows)


BINARY_FIXED = ("trials", "best_value", "reference_value", "dim", "lam", "lr", "batch_size")


def binary_shipped_markdown() -> str:
    """Every ``tuned-atrec`` entry of ``binary-clean`` on Coat
    (``atrec/resources/binary_clean_tuned_params.yaml``): budget, the study's best validation
    criterion, its first trial's (at the reference values), the common values and a method's
    own hyperparameters in the last column."""
    rows = []
    shipped = _resource_yaml("binary_clean_tuned_params.yaml").get("coat", {})
    named = {(key.rpartition("/")[0] or DEFAULT_METHOD): e for key, e in shipped.items()}
    for method, entry in sorted(named.items()):
        own = ", ".join(f"{k} {_g(v)}" for k, v in entry.items() if k not in BINARY_FIXED)
        first = entry.get("reference_value")
        rows.append([f"`{method}`", entry.get("trials", "-"),
                     f"{entry['best_value']:.4f}", "-" if first is None else f"{first:.4f}",
                     entry["dim"], _g(entry["lam"]), _g(entry["lr"]), entry.get("batch_size", "-"),
                     own or "-"])
    return _table(["method", "trials", "best validation criterion", "first trial's",
                   "dim", "lam", "lr", "batch size", "own"], rows)


# ---------------------------------------------------------------------------- MkDocs hooks

def on_config(config):
    """Put the generated pages under the navigation entry :data:`NAV_TITLE`."""
    for item in config["nav"] or []:
        if isinstance(item, dict) and NAV_TITLE in item:
            item[NAV_TITLE] = nav()
    return config


def on_files(files, config):
    """Add the generated pages to the build (they are never written under ``docs/``)."""
    from mkdocs.structure.files import File  # only when MkDocs builds

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files


def strip_roles(html: str) -> str:
    """reStructuredText roles left in rendered docstrings (``:class:`~a.B``` comes out of
    mkdocstrings as ``:class:<code>~a.B</code>``) as plain code, the target's last part when it
    was written with ``~``."""
    def code(match: re.Match) -> str:
        target = match.group(1)
        shown = target.split(".")[-1] if match.group(0).count("~") else target
        return f"<code>{shown}</code>"

    return _HTML_ROLE.sub(code, html)


def on_page_content(html, page, config, files):
    """The API pages without raw reStructuredText roles (:func:`strip_roles`)."""
    return strip_roles(html)


def on_page_markdown(markdown, page, config, files):
    """Replace :data:`MEASURED_MARK`, :data:`TABLE1_MARK`, :data:`SHIPPED_MARK` and
    :data:`BINARY_SHIPPED_MARK` by their tables."""
    if MEASURED_MARK in markdown:
        markdown = markdown.replace(MEASURED_MARK, measured_markdown())
    if TABLE1_MARK in markdown:
        markdown = markdown.replace(TABLE1_MARK, table1_markdown())
    if SHIPPED_MARK in markdown:
        markdown = markdown.replace(SHIPPED_MARK, shipped_markdown())
    if BINARY_SHIPPED_MARK in markdown:
        markdown = markdown.replace(BINARY_SHIPPED_MARK, binary_shipped_markdown())
    return markdown
