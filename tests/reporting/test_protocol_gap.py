"""The protocol-gap report and the binary benchmark table on hand-written records.

Records (Coat, seeds 0-4, every binary metric at 0.5 unless set) under both binary protocols,
each method's AUC and nDCG@5 written as MF's plus a per-seed difference chosen here, so the
ranks, the paired tests and the Holm correction are known by hand:

* MF: AUC 0.70 / 0.68 and nDCG@5 0.60 / 0.58 (icde24 / clean), plus ``BASE`` per seed;
* binary-icde24 (reference): IPS +0.02 AUC (tiny noise: beats MF), +0.01 nDCG@5 (noise of sd
  0.016: not significant); SNIPS -0.05 and -0.03 (worse); ``fake-leak`` (registered here,
  ``uses_mcar``) +0.03 AUC (beats MF), -0.01 nDCG@5. AUC ranks: leak 1, IPS 2, MF 3, SNIPS 4.
* binary-clean (IPS at ``tuned``, the rest ``reference``; fake-leak has no results): IPS AUC
  identical to MF's (tied rank, p = 1), nDCG@5 +0.002 with noise (p large); SNIPS AUC +0.01
  with noise giving a raw t-test p of about 0.047, which Holm over the family of 4 (x3: it is
  the second smallest) makes 0.14, so it does NOT beat MF; SNIPS nDCG@5 +0.02 (beats MF).
"""

import json
import re
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from atrec.cli import main
from atrec.data.synthetic import SOURCE
from atrec.errors import AtrecError
from atrec.methods.binary.ips import BinaryMF
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.names import NO_PROPENSITY, config_key
from atrec.protocols import get_protocol
from atrec.protocols.binary import BINARY_CLEAN_METRICS
from atrec.reporting.benchmark_render import benchmark_report
from atrec.reporting.protocol_gap import protocol_gap
from atrec.reporting.protocol_gap_report import gap_figure, gap_report, gap_rows
from atrec.reporting.tables import FORMATS
from atrec.results.records import record_path, save_record
from atrec.workflows.binary import write_gap_report

SEEDS = range(5)
BASE = np.array([-0.02, -0.01, 0.0, 0.01, 0.02])
TINY = np.array([0.001, -0.001, 0.002, -0.002, 0.0])
NOISY = np.array([0.01, -0.01, 0.02, -0.02, 0.0])
SNIPS_CLEAN_AUC = np.array([0.01, -0.01, 0.005, -0.005, 0.0])
ICDE, CLEAN = "binary-icde24", "binary-clean"
# protocol -> method -> (params, AUC diff per seed, nDCG@5 diff per seed)
DIFFS = {
    ICDE: {"mf": ("reference", 0 * BASE, 0 * BASE),
           "mf-ips": ("reference", 0.02 + TINY, 0.01 + NOISY),
           "mf-snips": ("reference", -0.05 + TINY, -0.03 + TINY),
           "fake-leak": ("reference", 0.03 + TINY, -0.01 + TINY)},
    CLEAN: {"mf": ("reference", 0 * BASE, 0 * BASE),
            "mf-ips": ("tuned", 0 * BASE, 0.002 + NOISY),
            "mf-snips": ("reference", 0.01 + SNIPS_CLEAN_AUC, 0.02 + TINY)},
}
MF = {ICDE: (0.70, 0.60), CLEAN: (0.68, 0.58)}
NDCG = {ICDE: "ndcg5_ref", CLEAN: "ndcg5"}


class FakeLeak(BinaryMF):
    name, label, uses_mcar, leaks = "fake-leak", "Fake leak", True, True


@pytest.fixture(scope="module", autouse=True)
def registered():
    BINARY_METHODS.names()   # the built-ins first, so they keep their order
    BINARY_METHODS.register(FakeLeak)
    yield
    BINARY_METHODS.unregister(FakeLeak.name)


def _auc_ndcg(protocol, method):
    _, d_auc, d_ndcg = DIFFS[protocol][method]
    return MF[protocol][0] + BASE + d_auc, MF[protocol][1] + BASE + d_ndcg


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    base = tmp_path_factory.mktemp("gap")
    for protocol, methods in DIFFS.items():
        root = get_protocol(protocol).results_root(base)
        for method, (params, _, _) in methods.items():
            auc, ndcg = _auc_ndcg(protocol, method)
            for s in SEEDS:
                metrics = dict.fromkeys(BINARY_CLEAN_METRICS, 0.5)
                metrics.update(auc=float(auc[s]), **{NDCG[protocol]: float(ndcg[s])})
                record = {"schema": 1, "dataset": "coat", "propensity": NO_PROPENSITY,
                          "with_at": False, "method": method, "seed": s, "params": {"dim": 4},
                          "params_source": params, "metrics": metrics,
                          "protocol": {"name": protocol}, "provenance": {}}
                if (protocol, method) == (CLEAN, "mf"):
                    record["params_budget"] = "-"   # as records made before budgets were known
                save_record(record, record_path("coat", config_key(NO_PROPENSITY, False, method),
                                                params, s, root))
    return base


def test_ranks_tie_and_missing(results):
    gap = protocol_gap(results, "coat", expected_seeds=5)
    assert gap.methods == ("mf", "mf-ips", "mf-snips", "fake-leak")
    ranks = {m: (gap.rank(ICDE, m, "auc"), gap.rank(ICDE, m, "ndcg5_ref"),
                 gap.rank(CLEAN, m, "auc"), gap.rank(CLEAN, m, "ndcg5")) for m in gap.methods}
    assert ranks == {"mf": (3, 2, 2, 3), "mf-ips": (2, 1, 2, 2), "mf-snips": (4, 4, 1, 1),
                     "fake-leak": (1, 3, None, None)}
    assert gap.params(CLEAN, "mf-ips")[0] == "tuned"
    assert gap.params(CLEAN, "mf") == ("reference", "authors")   # "-" in its records
    assert gap.mean(CLEAN, "mf-snips", "ndcg5") == pytest.approx(0.60)


def test_who_beats_mf_and_holm(results):
    gap = protocol_gap(results, "coat", expected_seeds=5)
    beats = {(p, m, k): gap.beats_mf(p, m, k) for p in (ICDE, CLEAN)
             for m in gap.methods if m != "mf" for k in ("auc", NDCG[p])}
    assert beats == {(ICDE, "mf-ips", "auc"): True, (ICDE, "mf-ips", "ndcg5_ref"): False,
                     (ICDE, "mf-snips", "auc"): False, (ICDE, "mf-snips", "ndcg5_ref"): False,
                     (ICDE, "fake-leak", "auc"): True, (ICDE, "fake-leak", "ndcg5_ref"): False,
                     (CLEAN, "mf-ips", "auc"): False, (CLEAN, "mf-ips", "ndcg5"): False,
                     (CLEAN, "mf-snips", "auc"): False, (CLEAN, "mf-snips", "ndcg5"): True,
                     (CLEAN, "fake-leak", "auc"): None, (CLEAN, "fake-leak", "ndcg5"): None}
    # binary-clean's family of four, p-values from scipy on the hand-made differences
    raw = {(m, k): stats.ttest_rel(_auc_ndcg(CLEAN, m)[i], _auc_ndcg(CLEAN, "mf")[i]).pvalue
           for m in ("mf-ips", "mf-snips") for i, k in enumerate(("auc", "ndcg5"))}
    raw[("mf-ips", "auc")] = 1.0          # identical values: no evidence (significance.py)
    snips = gap.test(CLEAN, "mf-snips", "auc")
    assert snips.t_p == pytest.approx(raw[("mf-snips", "auc")])
    assert 0.04 < snips.t_p < 0.05                       # significant before Holm ...
    ordered = sorted(raw.values())
    assert ordered.index(raw[("mf-snips", "auc")]) == 1  # ... second smallest of four: x3
    assert snips.t_p_holm == pytest.approx(3 * raw[("mf-snips", "auc")])
    assert snips.t_p_holm > 0.05 and snips.method_better
    # the family is one protocol's: binary-icde24's six tests do not enter it
    assert len(gap.tests[CLEAN]) == 4 and len(gap.tests[ICDE]) == 6


@pytest.mark.parametrize("fmt", FORMATS)
def test_report_in_every_format(results, tmp_path, fmt):
    out = gap_report(results, "coat", fmt, figures=False, expected_seeds=5)
    if fmt == "json":
        doc = json.loads(out.text)
        snips = next(m for m in doc["methods"] if m["method"] == "mf-snips")
        assert snips[CLEAN]["ranks"] == {"auc": 1, "ndcg5": 1}
        assert snips[CLEAN]["beats_mf"] == {"auc": False, "ndcg5": True}
        assert next(m for m in doc["methods"] if m["method"] == "fake-leak")["uses_mcar"]
        return
    lines = out.text.splitlines()
    leak = next(line for line in lines if "Fake leak" in line)
    assert ("$^\\dagger$" if fmt == "latex" else "Fake leak†") in leak
    snips = next(line for line in lines if "SNIPS" in line)
    assert "nDCG@5" in snips and "tuned" not in snips
    ips = next(line for line in lines if re.match(r"\W*IPS\b", line))
    assert "tuned" in ips


def test_figure_and_cli(results, tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(results))
    result = CliRunner().invoke(main, ["report", "--table", "protocol-gap", "--dataset", "coat",
                                       "--expected-seeds", "5", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "## Protocol gap" in result.output
    for ext in ("png", "pdf"):
        assert (results / "figures" / f"protocol_gap_coat.{ext}").stat().st_size > 1000


def test_no_results_is_a_one_line_error(tmp_path):
    with pytest.raises(AtrecError, match="no results of the binary protocols") as info:
        protocol_gap(tmp_path, "coat")
    assert info.value.exit_code == 3


def test_binary_benchmark_tests_against_mf_and_marks_mcar(results):
    root = get_protocol(ICDE).results_root(results)
    out = benchmark_report(root, ["coat"], "reference", fmt="table", expected_seeds=5,
                           protocol=ICDE).text
    header = out.splitlines()[2]
    assert header.split()[:4] == ["data", "method", "params", "budget"]   # no propensity
    assert "AUC" in header and "w/o AT" not in header and "w/ AT" not in out
    assert "Paired tests vs MF (" in out and "propensity" not in out
    assert "Fake leak†" in out
    doc = json.loads(benchmark_report(root, ["coat"], "reference", fmt="json",
                                      expected_seeds=5, protocol=ICDE).text)
    assert doc["baseline"] == "mf"
    assert {t["baseline_propensity"] for t in doc["tests"]} == {NO_PROPENSITY}
    assert {t["method"] for t in doc["tests"]} == {"mf-ips", "mf-snips", "fake-leak"}


def test_binary_benchmark_tests_against_ips_as_a_family_of_its_own(results):
    root = get_protocol(ICDE).results_root(results)
    out = benchmark_report(root, ["coat"], "reference", fmt="table", expected_seeds=5,
                           protocol=ICDE).text
    assert "Paired tests vs IPS (* = p < 0.05 after Holm over this table)" in out
    doc = json.loads(benchmark_report(root, ["coat"], "reference", fmt="json",
                                      expected_seeds=5, protocol=ICDE).text)
    second = doc["second_tests"]
    assert doc["second_baseline"] == "mf-ips"
    assert {t["method"] for t in second} == {"mf-snips", "fake-leak"}   # neither MF nor IPS
    assert {t["baseline"] for t in second} == {"mf-ips"}
    # fake-leak's nDCG@5 against IPS: p from scipy on the hand-made values, Holm within this
    # family only (its size is its own, not the MF family's)
    test = next(t for t in second if (t["method"], t["metric"]) == ("fake-leak", "ndcg5_ref"))
    raw = stats.ttest_rel(_auc_ndcg(ICDE, "fake-leak")[1], _auc_ndcg(ICDE, "mf-ips")[1]).pvalue
    assert test["t"]["p"] == pytest.approx(raw)
    assert test["mean_diff"] == pytest.approx(-0.02)
    family = sorted(t["t"]["p"] for t in second)
    rank = family.index(test["t"]["p"])
    assert test["t"]["p_holm"] == pytest.approx(min(1.0, max(
        (len(family) - i) * family[i] for i in range(rank + 1))))


def test_reproduce_writes_the_gap_report(results):
    path, figures, notices = write_gap_report(["yahoo", "coat"], seeds=5, root=results)
    text = path.read_text()
    assert path == results / "protocol_gap.md" and text.count("## Protocol gap") == 1
    assert "| SNIPS" in text and {p.suffix for p in figures} == {".png", ".pdf"}
    assert any("Yahoo! R3" in n for n in notices)     # no binary results there: said, skipped


def test_records_of_synthetic_data_say_so_wherever_the_dataset_is_named(results, tmp_path):
    """A store of generated data names its generator instead of file checksums, and records
    copy that into their provenance: the gap's legend, figure title and JSON, and the
    benchmark's rows and JSON, then say that the numbers came from synthetic data; records of
    the real files are labelled as before."""
    base = tmp_path / "synthetic"
    shutil.copytree(results, base)
    for path in base.rglob("seed-*.json"):
        record = json.loads(path.read_text())
        record["provenance"] = {"data_checksums": {SOURCE: "SMALL_SIZE, seed 7"}}
        path.write_text(json.dumps(record))
    named = "Coat (synthetic data: SMALL_SIZE, seed 7)"
    assert f"\n{named}. icde24 = " in gap_report(base, "coat", figures=False,
                                                 expected_seeds=5).text
    title = gap_figure(protocol_gap(base, "coat", expected_seeds=5))._suptitle.get_text()
    assert title.replace("\n", " ").startswith(f"Protocol gap on {named}: rank")
    doc = json.loads(gap_report(base, "coat", "json", figures=False, expected_seeds=5).text)
    assert doc["synthetic_data"] == "SMALL_SIZE, seed 7"
    root = get_protocol(ICDE).results_root(base)
    rows = benchmark_report(root, ["coat"], "reference", expected_seeds=5, protocol=ICDE).text
    coat = [line for line in rows.splitlines() if line.startswith("Coat")]
    assert len(coat) > 4 and all(line.startswith(named) for line in coat)   # rows and tests
    doc = json.loads(benchmark_report(root, ["coat"], "reference", fmt="json", expected_seeds=5,
                                      protocol=ICDE).text)
    assert doc["synthetic_data"] == {"coat": "SMALL_SIZE, seed 7"}
    real = gap_report(results, "coat", "json", figures=False, expected_seeds=5).text
    assert json.loads(real)["synthetic_data"] is None
    assert "synthetic" not in gap_report(results, "coat", figures=False, expected_seeds=5).text


class _ManyMethods:
    """A gap of every registered binary method in each of its forms (over 30 rows) with ranks
    that cross: what the figure must stay readable at."""

    dataset_label = "Coat"

    def __init__(self):
        from atrec.methods.registry import every_form, method_class, method_label

        names = tuple(every_form(CLEAN))      # every method in each of its forms: the gap's rows
        self.methods = names
        self.labels = {m: method_label(m, CLEAN) for m in names}
        self.mcar = {m: method_class(m, CLEAN).uses_mcar for m in names}
        n = len(names)
        self.ranks = {(p, m, k): 1 + (i * step) % n
                      for p, step in ((ICDE, 7), (CLEAN, 11)) for i, m in enumerate(names)
                      for k in ("auc", "ndcg5_ref", "ndcg5")}

    def rank(self, protocol, method, metric):
        return self.ranks.get((protocol, method, metric))

    def label(self, method):
        return self.labels[method] + ("†" if self.mcar[method] else "")

    def uses_mcar(self, method):
        return self.mcar[method]


def test_the_figure_is_readable_with_every_binary_method():
    """At about 40 methods no two texts overlap (the names, the ticks, the titles, the legend
    that says what the marks and colours mean), as Figure 3's check asks."""
    from test_figures import _layout_problems

    gap = _ManyMethods()
    assert len(gap.methods) >= 30
    fig = gap_figure(gap)
    assert _layout_problems(fig) == []
    names = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert sorted(names) == sorted(gap.label(m) for m in gap.methods)
    legend = {t.get_text() for t in fig.legends[0].get_texts()}
    assert legend == {ICDE, CLEAN, "reads no MCAR label", "reads MCAR labels (†)"}
    assert all(len(ax.get_xticks()) <= 10 for ax in fig.axes)


def test_the_truth_column_reads_binary_truth_on_ml100k(results, tmp_path):
    """Beside every dataset, the same methods on the semi-synthetic truth (ML-100K records of
    binary-truth): IPS +0.01 truth AUC with tiny noise (beats MF), -0.02 truth nDCG@5 (worse)."""
    alone = gap_report(results, "coat", figures=False, expected_seeds=5)
    assert any("no binary-truth results" in n and "make truth" in n for n in alone.notices)
    base = tmp_path / "with-truth"
    shutil.copytree(results, base)
    root = get_protocol("binary-truth").results_root(base)
    metrics = get_protocol("binary-truth").metrics
    for method, d_auc, d_ndcg in (("mf", 0 * BASE, 0 * BASE), ("mf-ips", 0.01 + TINY,
                                                               -0.02 + TINY)):
        for s in SEEDS:
            values = dict.fromkeys(metrics, 0.5)
            values.update(truth_auc=0.69 + BASE[s] + d_auc[s],
                          truth_ndcg5=0.92 + BASE[s] + d_ndcg[s])
            record = {"schema": 1, "dataset": "ml-100k", "propensity": NO_PROPENSITY,
                      "with_at": False, "method": method, "seed": s, "params": {"dim": 4},
                      "params_source": "reference", "metrics": values,
                      "protocol": {"name": "binary-truth"}, "provenance": {}}
            save_record(record, record_path("ml-100k", config_key(NO_PROPENSITY, False, method),
                                            "reference", s, root))
    gap = protocol_gap(base, "coat", expected_seeds=5)
    truth = "binary-truth"
    assert gap.mean(truth, "mf-ips", "truth_auc") == pytest.approx(0.70)
    assert gap.beats_mf(truth, "mf-ips", "truth_auc") is True
    assert gap.beats_mf(truth, "mf-ips", "truth_ndcg5") is False
    assert gap.rank(truth, "mf-snips", "truth_auc") is None      # no truth results: "-"
    rows = {r["method"]: r for r in gap_rows(gap)[0]}
    assert rows["IPS"]["truth beats MF"] == "AUC (truth)"
    assert rows["IPS"]["truth params"] == "reference"
    assert rows["SNIPS"]["truth beats MF"] == "-"
    doc = json.loads(gap_report(base, "coat", "json", figures=False, expected_seeds=5).text)
    ips = next(m for m in doc["methods"] if m["method"] == "mf-ips")
    assert ips[truth]["beats_mf"] == {"truth_auc": True, "truth_ndcg5": False}
