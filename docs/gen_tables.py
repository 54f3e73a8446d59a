"""The Coat tables of the site, each number from its one home: the parameter sets shipped in
``atrec/resources`` (``published``, ``tuned-atrec``, ``binary-clean``'s), the paper's Table 1
(``resources/paper_table1.csv``) and atrec's measured means (``docs/data/coat_measured.csv``).
:mod:`gen_reference` puts them on the methods' pages and in place of the marks of hand-written
pages.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

from gen_common import fmt, resource_yaml, table

from atrec.names import DEFAULT_METHOD

HERE = Path(__file__).resolve().parent
MEASURED_CSV = HERE / "data" / "coat_measured.csv"
METRICS = (("mae", "MAE"), ("mse", "MSE"), ("ndcg", "nDCG@3"))


# ---------------------------------------------------------------------------- shipped data


def shipped_params() -> dict[str, dict[str, dict]]:
    """``set -> config key -> values`` for Coat: ``published`` (the paper's authors' values,
    MF-IPS's keys have no method prefix) and ``tuned-atrec`` (with ``best_value``)."""
    return {"published": resource_yaml("published_params.yaml").get("coat", {}),
            "tuned-atrec": resource_yaml("tuned_atrec_params.yaml").get("coat", {})}


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


def measured_table(rows: list[dict], first: str) -> str:
    header = [first, "params"] + [f"{label} {side}" for _, label in METRICS
                                  for side in ("w/o AT", "w/ AT")]
    body = [[r[first], r["params"]] + [r[key + suffix] or "-" for key, _ in METRICS
                                       for suffix in ("", "_at")] for r in rows]
    return table(header, body)


def paper_table(paper: list[dict]) -> str:
    by = {(r["propensity"], r["with_at"]): r for r in paper}
    rows = []
    for prop in dict.fromkeys(r["propensity"] for r in paper):
        wo, w = by.get((prop, "false"), {}), by.get((prop, "true"), {})
        rows.append([prop] + [x.get(k, "-") for k in ("mae", "mse", "ndcg3_paper")
                              for x in (wo, w)])
    return table(["propensity", "MAE w/o AT", "MAE w/ AT", "MSE w/o AT", "MSE w/ AT",
                   "nDCG@3 w/o AT", "nDCG@3 w/ AT"], rows)


def measured_markdown() -> str:
    """The measured Coat table of the Results page (every row of the CSV)."""
    rows = measured_rows()
    for r in rows:
        r["method"] = f"{r['method']}, {r['propensity']}"
    return measured_table(rows, "method").replace("| method |", "| method, propensity |", 1)


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
    return table(["propensity"] + [f"{label} {side}" for _, label in METRICS
                                    for side in ("w/o AT", "w/ AT")], rows)



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
        own = ", ".join(f"{k} {fmt(v)}" for k, v in entry.items() if k not in SHIPPED_FIXED)
        rows.append([f"`{key}`", entry.get("trials", "-"), f"{entry['best_value']:.4f}", first,
                     entry["dim"], fmt(entry["lam"]), fmt(entry.get("epsilon", "-")),
                     own or "-"])
    return table(["configuration", "trials", "best validation loss", "first trial's loss",
                   "dim", "lam", "epsilon", "own"], rows)


BINARY_FIXED = ("trials", "best_value", "reference_value", "dim", "lam", "lr", "batch_size",
                "splits", "start", "start_value")


def binary_shipped_markdown() -> str:
    """Every ``tuned-atrec`` entry of ``binary-clean`` on Coat
    (``atrec/resources/binary_clean_tuned_params.yaml``): budget (trials x splits), the
    criterion averaged over the splits, the first trial's (at the reference values, on the
    first split), the common values and a method's own hyperparameters in the last column."""
    rows = []
    shipped = resource_yaml("binary_clean_tuned_params.yaml").get("coat", {})
    named = {(key.rpartition("/")[0] or DEFAULT_METHOD): e for key, e in shipped.items()}
    for method, entry in sorted(named.items()):
        own = ", ".join(f"{k} {fmt(v)}" for k, v in entry.items() if k not in BINARY_FIXED)
        first = entry.get("reference_value")
        splits = (entry.get("splits") or {}).get("n")
        trials = entry.get("trials", "-")
        rows.append([f"`{method}`", f"{trials} x {splits} splits" if splits else trials,
                     f"{entry['best_value']:.4f}", "-" if first is None else f"{first:.4f}",
                     entry.get("dim", "-"), fmt(entry["lam"]),
                     fmt(entry["lr"]) if "lr" in entry else "-", entry.get("batch_size", "-"),
                     own or "-"])
    return table(["method", "trials", "criterion (mean over splits)", "first trial's",
                  "dim", "lam", "lr", "batch size", "own"], rows)
