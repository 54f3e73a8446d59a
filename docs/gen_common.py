"""What the generated reference pages share: Markdown from docstrings and tables, a class's
source, the docstrings of its module and its learners (read without importing TensorFlow).

Used by :mod:`gen_reference` (the MkDocs hook) and its page makers :mod:`gen_binary` and
:mod:`gen_protocols`.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import yaml

from atrec.methods.base import EPSILON, Method
from atrec.registry import BUILT_IN
from atrec.params.lookup import ENTRY_METADATA

_ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|attr|data|obj|exc):`([^`]+)`")

_RULE = re.compile(r"^\s*=+(\s+=+)+\s*$")
_DOCS_PAGE = re.compile(r"(?<![`\w/])docs/([\w-]+\.md)(?![`\w])")


def resource_yaml(name: str) -> dict:
    """A YAML file of ``atrec/resources`` as a dict (empty for an empty file)."""
    with resources.files("atrec").joinpath("resources", name).open(encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def rst_to_markdown(text: str, site_root: str = "../../") -> str:
    """A docstring's reStructuredText as Markdown, well enough for prose: roles and double
    back-quotes become code spans, simple tables become fenced blocks, and a pointer to a page
    of the site (``docs/protocols.md``, outside a code span) becomes a link to it from a page
    ``site_root`` below the site's root (the build checks that the page exists)."""
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
        out.append(line if in_table else _DOCS_PAGE.sub(
            lambda m: f"[{m.group(0)}]({site_root}{m.group(1)})", line))
    if in_table:
        out.append("```")
    return "\n".join(out)


def own_doc(obj) -> str:
    """The docstring an object or class declares itself (not one it inherits), cleaned."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    return inspect.cleandoc(doc) if doc else ""


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; a ``|`` inside a cell is escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"
              for row in rows]
    return "\n".join(lines)


def yes(flag: bool) -> str:
    """``yes`` or ``no``."""
    return "yes" if flag else "no"


def source(cls: type, origin: str) -> str:
    """Where a registered class lives: its module and file, or the package that provides it."""
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


def module_file(module_name: str) -> Path | None:
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


def source_doc(module_name: str) -> str:
    """A module's docstring read from its source file, without importing it."""
    path = module_file(module_name)
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
                if module_file(name) is None:
                    continue
                if {"learners", "learner"} & set(parts[:end]) and parts[end - 1] != "base" \
                        and name not in found:
                    found.append(name)
                break
    return found


def doc_sections(cls: type, learners: bool = True) -> list[str]:
    """The class's own docstring, its module's and (with ``learners``) its learner modules', as
    Markdown."""
    out = []
    doc = own_doc(cls)
    if doc:
        out += ["## What it computes", "", rst_to_markdown(doc), ""]
    module = inspect.getmodule(cls)
    module_doc = own_doc(module) if module else ""
    if module_doc:
        out += ["## From its module", "", rst_to_markdown(module_doc), ""]
    for name in learner_modules(doc, module_doc) if learners else ():
        out += [f"## Its learner: `{name}`", "", rst_to_markdown(source_doc(name)), ""]
    return out


def values_text(values: dict) -> str:
    """``dim 20, lam 0.001007``: a parameter entry's values, its metadata left out."""
    return ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in sorted(values.items()) if k not in ENTRY_METADATA)


def fmt(value) -> str:
    """A float to 3 significant digits, anything else as it is."""
    return f"{value:.3g}" if isinstance(value, float) else str(value)



def hyperparameter_section(cls: type, with_at: bool, how: str) -> list[str]:
    """A method's hyperparameters and search spaces as a table under its heading (AT's
    ``epsilon`` too, ``with_at``; a binary method's corrected form's own, with their
    defaults), after ``how`` (what tunes them)."""
    rows = [[f"`{h.name}`", h.kind, h.describe(), h.allowed, h.help or "-"]
            for h in cls.hyperparameters]
    for h in getattr(cls, "corrected_hyperparameters", ()):
        default = f"`{h.default}`'s value" if isinstance(h.default, str) else f"{h.default:g}"
        rows.append([f"`{h.name}` (corrected form only)", h.kind, h.describe(), h.allowed,
                     f"{h.help or '-'}; a parameter set without it: {default}"])
    if with_at:
        rows.append([f"`{EPSILON.name}` (with AT only)", EPSILON.kind, EPSILON.describe(),
                     EPSILON.allowed, EPSILON.help])
    return ["## Hyperparameters and search space", "", how, "",
            table(["name", "kind", "search space", "accepted in a file", "what"], rows), ""]


# ---------------------------------------------------------------------------- options and aliases

FORM_WORDS = {"reference": "the reference code's form", "coded": "the reference code's form",
              "corrected": "the corrected form", "textbook": "the corrected form"}


def _values_and_meanings(spec) -> list[tuple[str, str]]:
    """An option's ``(value, meaning)`` pairs, whatever way it declares them: pairs in
    ``values``, plain ``values`` or ``choices``, or a sequence of values."""
    if isinstance(spec, (tuple, list)):
        raw = spec
    else:
        raw = getattr(spec, "values", None) or getattr(spec, "choices", None) or ()
    out = []
    for v in raw:
        if isinstance(v, (tuple, list)) and v:
            out.append((str(v[0]), str(v[1]) if len(v) > 1 else ""))
        else:
            out.append((str(v), ""))
    return out


def option_rows(cls: type) -> list[list[str]]:
    """The options a method class declares (``options``: objects with ``name``, ``values``,
    ``default`` and ``help``, or a mapping name -> values), each as name, values with their
    meanings, default (``None``: the protocol's) and what it chooses."""
    declared = getattr(cls, "options", None)
    if not declared:
        return []
    items = declared.items() if isinstance(declared, Mapping) else \
        ((getattr(o, "name", str(o)), o) for o in declared)
    rows = []
    for name, spec in items:
        pairs = _values_and_meanings(spec)
        default = pairs[0][0] if isinstance(spec, (tuple, list)) and pairs else \
            getattr(spec, "default", None)
        what = "" if isinstance(spec, (tuple, list)) else \
            (getattr(spec, "help", None) or getattr(spec, "description", None) or "")
        values = "; ".join(f"`{v}`" + (f": {m}" if m else "") for v, m in pairs)
        rows.append([f"`{name}`", values or "-",
                     "the protocol's" if default is None else f"`{default}`", what or "-"])
    return rows


def aliases_of(view: str) -> dict[str, tuple[str, dict | str]]:
    """``alias -> (method, options it implies)`` of the methods a view's protocols run: what
    :func:`atrec.methods.registry.aliases_for` gives where it exists (old names of a method's
    options), else nothing."""
    from atrec.methods import registry as method_registry
    from atrec.protocols import PROTOCOLS

    find = getattr(method_registry, "aliases_for", None)
    if find is None:
        return {}
    protocol = next((e.name for e in PROTOCOLS.entries() if e.cls.view == view), None)
    out = {}
    for alias, target in (find(protocol) or {}).items():
        if isinstance(target, str):
            out[alias] = (target, "")
        elif isinstance(target, (tuple, list)) and target:
            out[alias] = (str(target[0]), target[1] if len(target) > 1 else "")
    return out


def implied_words(implied) -> str:
    """What an alias runs: a form in words, other options as ``key=value``."""
    if isinstance(implied, Mapping):
        if set(implied) == {"form"}:
            return FORM_WORDS.get(str(implied["form"]), f"form={implied['form']}")
        return ", ".join(f"`{k}={v}`" for k, v in implied.items()) or "its defaults"
    return str(implied) or "its defaults"


def options_section(cls: type, names: list[tuple[str, str, str]], note: str = "") -> list[str]:
    """A method's options (declared), ``note``, and the other names that run it with some of
    them (``(name, what it runs, description)``)."""
    out = ["## Options and forms", ""]
    rows = option_rows(cls)
    if rows:
        out += [("Options (`atrec methods` lists them; a record stores each with the run):"),
                "", table(["option", "values", "default", "what it chooses"], rows), ""]
    if note:
        out += [note, ""]
    if not rows and not note and not names:
        out += ["None: the method runs in one form.", ""]
    if names:
        out += ["Other names that run this method with some of its options (each works "
                "wherever a method is named):", "",
                table(["name", "runs", "what"], [[f"`{n}`", runs, d or "-"]
                                                 for n, runs, d in names]), ""]
    return out
