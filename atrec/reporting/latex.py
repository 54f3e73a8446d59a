"""LaTeX tables that drop into a paper: booktabs rules, column groups, escaped labels.

Every ``--format latex`` table is a ``tabular`` with ``\\toprule`` / ``\\midrule`` /
``\\bottomrule`` (needs ``\\usepackage{booktabs}``). Tables with column groups (Table 1 and the
benchmark: each metric over a "w/o AT | w/ AT" pair, as in the paper) get a first header row of
``\\multicolumn{2}{c}{MAE}`` ... with ``\\cmidrule(lr){3-4}`` under each group, and a second row
naming the columns. Consecutive rows of one block (one dataset) show its name once and blocks are
separated by ``\\midrule``.

Cells are taken as LaTeX already (the table builders write ``\\textbf{}``, ``$\\pm$`` and
``$^\\dagger$`` into them and escape their labels with :func:`latex_escape`); column names and
group labels are plain text and escaped here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# LaTeX's special characters in text mode and what prints them.
_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
            "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
            "^": r"\textasciicircum{}"}
_SPECIAL_RE = re.compile("|".join(re.escape(c) for c in _SPECIAL))

# A column group: its label and its columns as (row key, sub-header) pairs, consecutive.
Group = tuple[str, Sequence[tuple[str, str]]]
_START = object()  # no block seen yet


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (``mf_ips`` -> ``mf\\_ips``)."""
    return _SPECIAL_RE.sub(lambda m: _SPECIAL[m.group()], str(text))


def _row(cells: Sequence[str]) -> str:
    return " & ".join(cells) + r" \\"


def booktabs(rows: list[dict], columns: Sequence[str], groups: Sequence[Group] = (),
             block: str | None = None, cell=str) -> str:
    """A booktabs ``tabular`` of ``rows`` (module doc).

    ``columns``: the row keys in order; those in no group are left-aligned and named by their
    key, grouped ones centred under their group's label and named by their sub-header.
    ``block``: a key whose value is shown once per run of equal values, with ``\\midrule``
    between runs. ``cell`` turns a value into its (LaTeX) text.
    """
    sub = {key: (g, name) for g, (_, members) in enumerate(groups) for key, name in members}
    spec = "".join("c" if c in sub else "l" for c in columns)
    lines = [f"\\begin{{tabular}}{{{spec}}}", r"\toprule"]
    if groups:
        top, rules, i = [], [], 0
        while i < len(columns):
            if columns[i] not in sub:
                top.append("")
                i += 1
                continue
            g = sub[columns[i]][0]
            n = 1
            while i + n < len(columns) and sub.get(columns[i + n], (None,))[0] == g:
                n += 1
            top.append(f"\\multicolumn{{{n}}}{{c}}{{{latex_escape(groups[g][0])}}}")
            rules.append(f"\\cmidrule(lr){{{i + 1}-{i + n}}}")
            i += n
        lines += [_row(top), " ".join(rules)]
    lines += [_row([latex_escape(sub[c][1] if c in sub else c) for c in columns]), r"\midrule"]
    previous = _START
    for r in rows:
        values = [cell(r.get(c)) for c in columns]
        if block is not None and block in columns:
            here = r.get(block)
            if here == previous:
                values[list(columns).index(block)] = ""
            elif previous is not _START:
                lines.append(r"\midrule")
            previous = here
        lines.append(_row(values))
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)
