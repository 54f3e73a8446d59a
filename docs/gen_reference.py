"""Reference pages of every registered method (1-5 star and binary), propensity estimator and
protocol, made from atrec's registries when the site is built, so a plug-in installed beside
atrec gets its page too.

A method's or estimator's page gives what the class declares (name, label, description, its
docstring, hyperparameters and search space, what it uses, whether it serves inside AT, its
source) and the Coat numbers that ship with atrec: the parameter sets in ``atrec/resources``
(with the tuning's best validation loss where one was recorded), the paper's Table 1, and
atrec's measured means in ``docs/data/coat_measured.csv``. A binary method's page
(:mod:`gen_binary`) groups the names of its forms and options; a protocol's page
(:mod:`gen_protocols`) gives its split, schedule, selection, metrics and parameter sets.

This file is also the MkDocs hook (``hooks:`` in ``mkdocs.yml``): :func:`on_config` puts the
pages in the navigation, :func:`on_files` adds them to the build, and :func:`on_page_markdown`
replaces ``<!-- atrec:measured -->`` and ``<!-- atrec:table1 -->`` in a hand-written page by
the measured tables, so each number has one home (the CSV files).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:   # the page makers beside this file (MkDocs adds it too)
    sys.path.insert(0, str(HERE))

from gen_binary import BINARY_DIR, binary_entries, binary_page  # noqa: E402
from gen_common import (  # noqa: E402,F401  (rst_to_markdown: re-exported)
    aliases_of,
    doc_sections,
    hyperparameter_section,
    implied_words,
    option_rows,
    options_section,
    rst_to_markdown,
    serves_in_at,
    source,
    table,
    values_text,
    yes,
)
from gen_protocols import PROTOCOL_DIR, protocol_entries, protocol_page  # noqa: E402
from gen_tables import (  # noqa: E402,F401  (shipped_markdown and its kin: re-exported)
    binary_shipped_markdown,
    measured_markdown,
    measured_rows,
    measured_table,
    paper_table,
    paper_table1,
    shipped_markdown,
    shipped_params,
    table1_markdown,
)

from atrec.methods.binary.registry import BINARY_METHODS  # noqa: E402
from atrec.methods.registry import METHODS  # noqa: E402
from atrec.propensity.registry import PROPENSITIES  # noqa: E402
from atrec.protocols import PROTOCOLS  # noqa: E402

MEASURED_MARK = "<!-- atrec:measured -->"
TABLE1_MARK = "<!-- atrec:table1 -->"
SHIPPED_MARK = "<!-- atrec:tuned-atrec -->"
BINARY_SHIPPED_MARK = "<!-- atrec:binary-clean-tuned -->"
NAV_TITLE = "Methods, propensities and protocols"
METHOD_DIR = "reference/methods"
PROPENSITY_DIR = "reference/propensities"
INDEX = "reference/index.md"
NO_PROPENSITY = "none"

_HTML_ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|attr|data|obj|exc):<code>~?([^<]*)</code>")


# ---------------------------------------------------------------------------- pages

def method_page(entry, params: dict, paper: list[dict], measured: list[dict],
                names: list | None = None) -> str:
    """The reference page of one method entry (:class:`atrec.registry.Entry`); ``names``: the
    other names that run it with some of its options (``(name, what it runs, description)``)."""
    cls, names = entry.cls, names or []
    uses = [w for w, flag in (("a propensity (weights 1/P)", cls.uses_propensity),
                              ("MCAR labels (marked †)", cls.uses_mcar)) if flag]
    also = " (" + ", ".join(f"`{n}`" for n, _, _ in names) + ")" if names else ""
    parts = [f"# {cls.label} (`{entry.name}`)", "", cls.description or "", "",
             table(["", ""], [
                 ["`--method`", f"`{entry.name}`{also}"],
                 ["uses", "; ".join(uses) or "neither a propensity nor MCAR labels"],
                 ["serves inside AT (A1 and A2)", yes(serves_in_at(cls))],
                 ["reference", cls.reference or "-"],
                 ["source", source(cls, entry.origin)]]), ""]
    if names or option_rows(cls):
        parts += options_section(cls, names)
    parts += doc_sections(cls)
    parts += hyperparameter_section(cls, True, "`atrec tune` samples the search space (Optuna "
                                    "TPE); a parameter file may give any accepted value.")
    parts += _method_numbers(entry.name, cls, params, paper, measured)
    return "\n".join(parts).rstrip() + "\n"


def _method_numbers(name: str, cls: type, params: dict, paper: list[dict],
                    measured: list[dict]) -> list[str]:
    out = ["## Coat numbers shipped with atrec", ""]
    sets = []
    prefix = "" if name == "mf-ips" else f"{name}/"
    for set_name, entries in params.items():
        for key, values in entries.items():
            if (prefix and key.startswith(prefix)) or (not prefix and "/" not in key):
                best = values.get("best_value")
                sets.append([set_name, f"`{key}`", values_text(values),
                             f"{best:.4f}" if best is not None else "-"])
    for key, values in cls.reference_params.get("coat", {}).items():
        sets.append(["reference (= published for this method)", f"`{key}`", values_text(values),
                     "-"])
    if sets:
        out += [("Parameter sets (`--params`); *best validation loss* is the tuning study's "
                "objective where it was recorded."), "",
                table(["set", "configuration", "values", "best validation loss"], sets), ""]
    mine = [r for r in measured if r["method"] == name]
    if mine:
        out += ["Measured by atrec, mean of 20 seeds ([Results](../../results.md)):", "",
                measured_table(mine, "propensity"), ""]
    if name == "mf-ips" and paper:
        out += ["The paper's Table 1 (Saito, SIGIR 2020):", "", paper_table(paper), ""]
    if len(out) == 2:
        out += [("No Coat numbers ship for this method: train it "
                f"(`atrec train --method {name} --dataset coat`) or tune it first."), ""]
    return out


def propensity_page(entry, params: dict, paper: list[dict], measured: list[dict]) -> str:
    """The reference page of one propensity entry (:class:`atrec.registry.Entry`)."""
    cls = entry.cls
    parts = [f"# {cls.label} (`{entry.name}`)", "", cls.description or "", "",
             table(["", ""], [
                 ["`--propensity`", f"`{entry.name}`" if cls.selectable
                  else "not offered: built by its own experiment only"],
                 ["uses MCAR labels", yes(cls.uses_mcar) + (" (marked †)" if cls.uses_mcar
                                                             else "")],
                 ["a row of the paper's Table 1", yes(cls.paper_row)],
                 ["datasets", ", ".join(cls.datasets) if cls.datasets else "any"],
                 ["source", source(cls, entry.origin)]]), ""]
    parts += doc_sections(cls)
    parts += ["## Coat numbers shipped with atrec", ""]
    published = {k: v for k, v in params.get("published", {}).items()
                 if k in (entry.name, f"{entry.name}-at")}
    if published:
        parts += [("MF-IPS with this estimator, the authors' published values (`--params "
                  "published`):"), "",
                  table(["configuration", "values"],
                         [[f"`{k}`", values_text(v)] for k, v in published.items()]), ""]
    mine = [r for r in measured if r["propensity"] == entry.name]
    if mine:
        parts += [("Measured by atrec with this estimator, mean of 20 seeds "
                  "([Results](../../results.md)):"), "", measured_table(mine, "method"), ""]
    rows = [r for r in paper if r["propensity"] == entry.name]
    if rows:
        parts += ["The paper's Table 1 (MF-IPS with this estimator):", "", paper_table(rows),
                  ""]
    if not (published or mine or rows):
        parts += ["No Coat numbers ship for this estimator.", ""]
    return "\n".join(parts).rstrip() + "\n"


def index_page(methods, propensities, problems, binary=((), {}), protocols=(),
               star_names=None) -> str:
    """The catalogue: one line per method (1-5 star, then binary), each with the other names
    that run it with some of its options, estimator and protocol, linking their pages."""
    star_names = star_names or {}
    m_rows = [[f"[`{e.name}`](methods/{e.name}.md)", e.cls.label,
               ", ".join(f"`{n}`" for n, _, _ in star_names.get(e.name, ())) or "-",
               yes(e.cls.uses_propensity), yes(e.cls.uses_mcar), yes(serves_in_at(e.cls)),
               e.origin] for e in methods]
    binary_methods, variants = binary
    b_rows = [[f"[`{e.name}`](binary/{e.name}.md)", e.cls.label,
               ", ".join(f"`{n}`" for n, _, _ in variants.get(e.name, ())) or "-",
               yes(e.cls.uses_mcar), yes(bool(e.cls.serves_in_at)), e.origin]
              for e in binary_methods]
    p_rows = [[f"[`{e.name}`](propensities/{e.name}.md)", e.cls.label, yes(e.cls.uses_mcar),
               yes(e.cls.paper_row), e.origin] for e in propensities]
    r_rows = [[f"[`{e.name}`](protocols/{e.name}.md)", e.cls.label, e.cls.view, e.origin]
              for e in protocols]
    parts = ["# Methods, propensities and protocols", "",
             ("Every method, propensity estimator and protocol registered when this site was "
              "built: atrec's own and those of installed plug-ins (entry-point groups "
              "`atrec.methods`, `atrec.binary_methods`, `atrec.propensities` and "
              "`atrec.protocols`). `atrec methods` prints the same catalogue."), "",
             "## Methods (1-5 star protocols)", "",
             table(["method", "label", "other names", "propensity", "MCAR labels",
                    "inside AT", "origin"], m_rows), ""]
    if b_rows:
        parts += ["## Binary methods (binary protocols)", "",
                  ("A name may be a 1-5 star method's too (`mf-ips`, `dr-jl`): under a binary "
                   "protocol it means the binary method. A method's forms and options are on "
                   "its page."), "",
                  table(["method", "label", "other names", "MCAR labels", "inside AT",
                         "origin"], b_rows), ""]
    parts += ["## Propensity estimators", "",
              table(["propensity", "label", "MCAR labels", "Table 1 row", "origin"], p_rows),
              ""]
    if r_rows:
        parts += ["## Protocols", "", table(["protocol", "label", "ratings", "origin"], r_rows),
                  ""]
    if problems:
        parts += ["## Plug-ins left out", ""] + [f"- {line}" for line in problems] + [""]
    return "\n".join(parts)


def star_aliases(methods) -> dict[str, list]:
    """Per 1-5 star method, the other names that run it with some of its options."""
    own, out = {e.name for e in methods}, {}
    for alias, (method, implied) in aliases_of("stars").items():
        if method in own and alias not in own:
            out.setdefault(method, []).append((alias, implied_words(implied), ""))
    return out


def _method_links(methods, binary_methods, variants) -> dict[str, dict[str, str]]:
    """Per view (``stars``, ``binary``), each method name -> its page under ``reference/``; a
    binary form's name links to its method's page."""
    binary_links = {}
    for e in binary_methods:
        binary_links[e.name] = f"binary/{e.name}.md"
        for name, _, _ in variants.get(e.name, ()):
            binary_links[name] = f"binary/{e.name}.md"
    star_links = {e.name: f"methods/{e.name}.md" for e in methods}
    for method, names in star_aliases(methods).items():
        star_links.update({name: f"methods/{method}.md" for name, _, _ in names})
    return {"stars": star_links, "binary": binary_links}


def pages() -> dict[str, str]:
    """Every generated page: ``path under docs/ -> Markdown``."""
    params, paper, measured = shipped_params(), paper_table1(), measured_rows()
    methods, propensities = METHODS.entries(), PROPENSITIES.entries()
    binary_methods, variants = binary_entries()
    protocols = protocol_entries()
    problems = [*METHODS.problems.values(), *BINARY_METHODS.problems.values(),
                *PROPENSITIES.problems.values(), *PROTOCOLS.problems.values()]
    star_names = star_aliases(methods)
    out = {INDEX: index_page(methods, propensities, problems, (binary_methods, variants),
                             protocols, star_names)}
    for e in methods:
        out[f"{METHOD_DIR}/{e.name}.md"] = method_page(e, params, paper, measured,
                                                       star_names.get(e.name))
    for e in binary_methods:
        out[f"{BINARY_DIR}/{e.name}.md"] = binary_page(e, variants.get(e.name, []))
    for e in propensities:
        out[f"{PROPENSITY_DIR}/{e.name}.md"] = propensity_page(e, params, paper, measured)
    links = _method_links(methods, binary_methods, variants)
    for e in protocols:
        out[f"{PROTOCOL_DIR}/{e.name}.md"] = protocol_page(e, links.get(e.cls.view, {}))
    return out


def nav() -> list:
    """The navigation of the generated pages."""
    binary_methods, _ = binary_entries()
    return [{"Catalogue": INDEX},
            {"Methods": [{e.name: f"{METHOD_DIR}/{e.name}.md"} for e in METHODS.entries()]},
            {"Binary methods": [{e.name: f"{BINARY_DIR}/{e.name}.md"} for e in binary_methods]},
            {"Propensities": [{e.name: f"{PROPENSITY_DIR}/{e.name}.md"}
                              for e in PROPENSITIES.entries()]},
            {"Protocols": [{e.name: f"{PROTOCOL_DIR}/{e.name}.md"}
                           for e in protocol_entries()]}]


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


_HTML_DOCS_PAGE = re.compile(r"(?<![\w/>])docs/([\w-]+\.md)(?![\w<])")


def link_docs_pages(html: str, href) -> str:
    """Each pointer to a page of the site in rendered text (``docs/protocols.md``, not one
    inside a code element) as a link, ``href(name)`` giving its address from the page (``None``:
    no such page, left as text)."""
    def link(match: re.Match) -> str:
        target = href(match.group(1))
        return f'<a href="{target}">{match.group(0)}</a>' if target else match.group(0)

    return _HTML_DOCS_PAGE.sub(link, html)


def on_page_content(html, page, config, files):
    """The API pages without raw reStructuredText roles (:func:`strip_roles`), their pointers
    to pages of the site as links (:func:`link_docs_pages`)."""
    def href(name: str):
        target = files.get_file_from_path(name)
        return target.url_relative_to(page.file) if target is not None else None

    return link_docs_pages(strip_roles(html), href)


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
