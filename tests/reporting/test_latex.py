"""LaTeX tables drop into a paper: booktabs rules, the paper's column groups (each metric over
w/o AT | w/ AT), ``$\\pm$``, ``\\textbf{}``, escaped labels; and they compile (when pdflatex is
installed)."""

import os
import re
import shutil
import subprocess

import pytest
from synthetic_records import write_records

from atrec.reporting.latex import booktabs, latex_escape
from atrec.reporting.report import report


@pytest.fixture(scope="module")
def table1(tmp_path_factory):
    root = write_records(tmp_path_factory.mktemp("records"))
    text = report(root=root, fmt="latex", std=True, expected_seeds=5, figures=False,
                  claims=False, significance=False).text
    return text[text.index("\\begin{tabular}"):text.index("\\end{tabular}") + len("\\end{tabular}")]


def test_table1_is_booktabs_with_the_papers_column_groups(table1):
    lines = table1.splitlines()
    assert lines[0] == "\\begin{tabular}{llcccccc}" and lines[1] == "\\toprule"
    assert lines[2] == (" &  & \\multicolumn{2}{c}{MAE} & \\multicolumn{2}{c}{MSE} & "
                        "\\multicolumn{2}{c}{nDCG@3} \\\\")
    assert lines[3] == "\\cmidrule(lr){3-4} \\cmidrule(lr){5-6} \\cmidrule(lr){7-8}"
    assert lines[4] == "data & propensity" + " & w/o AT & w/ AT" * 3 + " \\\\"
    assert lines[5] == "\\midrule" and lines[-2:] == ["\\bottomrule", "\\end{tabular}"]
    assert "\\hline" not in table1 and "_" not in table1 and "±" not in table1
    body = [line for line in lines[6:-2] if line != "\\midrule"]
    assert len(body) == 12 and all(line.count(" & ") == 7 for line in body)
    # one block per dataset: its name once, a rule between blocks
    assert body[0].startswith("Yahoo! R3 & uniform & ") and body[1].startswith(" & user & ")
    assert lines[6 + 6] == "\\midrule" and lines[6 + 7].startswith("Coat & uniform & ")
    assert "\\textbf{0.832} $\\pm$ 0.016" in table1


def test_escaping():
    assert latex_escape("mf_ips & 50% #1 $x {a} ~^\\") == (
        "mf\\_ips \\& 50\\% \\#1 \\$x \\{a\\} \\textasciitilde{}\\textasciicircum{}"
        "\\textbackslash{}")
    text = booktabs([{"a_b": "x", "c": "1"}], ["a_b", "c"], [("g_1", [("c", "w/ AT")])])
    assert "a\\_b & w/ AT" in text and "\\multicolumn{1}{c}{g\\_1}" in text


def test_other_latex_tables_are_booktabs_too(tmp_path):
    root = write_records(tmp_path, datasets=("coat",))
    text = report(root=root, fmt="latex", expected_seeds=5, figures=False).text
    assert text.count("\\toprule") == 2 and text.count("\\bottomrule") == 2  # Table 1, tests
    assert "\\hline" not in text


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_table1_compiles(table1, tmp_path):
    doc = ("\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage[margin=1cm,"
           "landscape]{geometry}\n\\begin{document}\n\\scriptsize\n" + table1
           + "\n\\end{document}\n")
    (tmp_path / "t.tex").write_text(doc)
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout[-2000:]
    assert not re.search(r"^! ", run.stdout, re.MULTILINE)
    png = os.environ.get("ATREC_LATEX_PNG")  # where to keep a picture of the page, if asked
    if png and shutil.which("pdftoppm"):
        subprocess.run(["pdftoppm", "-png", "-r", "110", "-singlefile", "t.pdf",
                        png.removesuffix(".png")], cwd=tmp_path, check=True, timeout=60)
