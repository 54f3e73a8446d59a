"""``atrec semisynthetic``: the estimator benchmark on the semi-synthetic MovieLens 100K truth,
run over seeds, one record per (form, seed), summarised as the field's relative-error table.

The forms are the binary ones of :data:`atrec.semisynthetic.forms.FORMS` and ``stars``, the
1-5 star version (:mod:`atrec.semisynthetic.stars`). Records:
``<results>/semisynthetic/<form>/<key>/seed-NN.json``, where ``<key>`` hashes what fixes a
repetition's numbers besides its seed (the form's settings, the completion's recipe, the
truth's checksum, the prediction seed). A record holds the repetition's truths, estimates and
relative errors, the form's settings with the truth's SHA-256, the seeds, the completion's
recipe and manifest summary, and the provenance block of every atrec record (command,
versions, data checksums, time, host). A rerun reuses every whole record of the same key
(``force`` recomputes), so an interrupted run resumes where it stopped. Tables go to
``<results>/semisynthetic/relative_error.{md,tex,csv}`` (the star version's to
``relative_error_stars.*``), the figure to ``<results>/figures/semisynthetic.{png,pdf}``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from atrec.errors import AtrecError
from atrec.experiments.plan import ensure_data
from atrec.fileio import atomic_write_text
from atrec.paths import results_dir
from atrec.results.records import provenance
from atrec.semisynthetic.benchmark import setup_for
from atrec.semisynthetic.benchmark import repetition as run_repetition
from atrec.semisynthetic.completion import CompletionRecipe
from atrec.semisynthetic.conversion import check_cuts
from atrec.data.integrity import sha256_hex
from atrec.semisynthetic.forms import DEFAULT_FORMS, FORMS, Form
from atrec.semisynthetic.stars import (
    ALPHA,
    MARGINAL,
    OBSERVED,
    star_predictions,
    star_propensity,
    star_repetition,
    to_stars,
)
from atrec.reporting.figures import save_figure
from atrec.reporting.semisynthetic import (
    relative_error_figure,
    render_relative_error,
    render_stars,
)
from atrec.semisynthetic.summary import FormSummary, ordering, summarize
from atrec.semisynthetic.truth import DATASET, SOURCE_FILE, load_completion, truth_of

RECORD_SCHEMA = 1
RESULT_KEYS = ("seed", "matrices", "observed_fraction", "truth", "estimate", "relative_error")
FIGURE_NAME = "semisynthetic"
STARS = "stars"   # the 1-5 star version (atrec.semisynthetic.stars), run as one more form
TABLE_NAME = "relative_error"


def parse_forms(text: str) -> tuple[str, ...]:
    """``--form`` values (comma-separated names of :data:`~atrec.semisynthetic.forms.FORMS`,
    ``stars`` for the 1-5 star version, or ``all``) as form names, or one-line
    :class:`AtrecError`."""
    names = [t.strip().lower() for t in str(text).split(",") if t.strip()]
    if names == ["all"]:
        return (*FORMS, STARS)
    known = (*FORMS, STARS)
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise AtrecError(f"--form {text}: unknown form {', '.join(bad) or '(none)'}; choose "
                         f"from {', '.join(known)} or all")
    return tuple(dict.fromkeys(names))


def parse_cuts(text: str | None) -> tuple[float, ...] | None:
    """``--cuts`` (four comma-separated cumulative fractions) or ``None``; one-line
    :class:`AtrecError` for anything else."""
    if text is None:
        return None
    try:
        return check_cuts(float(t) for t in str(text).split(","))
    except ValueError as exc:
        raise AtrecError(f"--cuts {text}: {exc}; e.g. 0.53,0.77,0.91,0.98") from None


@dataclass(frozen=True)
class SemiSyntheticRequest:
    """What ``atrec semisynthetic`` runs: ``forms`` (names), ``seeds`` (one repetition each),
    the completion's ``recipe``, the ``prediction_seed`` of the prediction matrices, the
    ``label_seed`` of the forms that draw labels once, ``cuts`` overriding every form's rank
    cuts (``None``: each form's own), ``force`` (recompute records), ``rebuild`` (train the
    completion again)."""

    forms: tuple[str, ...] = DEFAULT_FORMS
    seeds: tuple[int, ...] = tuple(range(20))
    recipe: CompletionRecipe = field(default_factory=CompletionRecipe)
    prediction_seed: int = 0
    label_seed: int = 0
    cuts: tuple[float, ...] | None = None
    force: bool = False
    rebuild: bool = False

    def form(self, name: str) -> Form:
        """Form ``name`` with this request's cuts and (labels drawn once) label seed."""
        form = FORMS[name]
        if form.labels == "once":
            form = replace(form, label_seed=self.label_seed)
        return form if self.cuts is None else replace(form, cuts=self.cuts)


@dataclass(frozen=True)
class SemiSyntheticResult:
    """Per form its :class:`~atrec.semisynthetic.summary.FormSummary`, the forms' settings and
    rates' checksums, the completion's manifest, counts of repetitions computed and reused,
    and the wall and CPU seconds of this call."""

    summaries: dict[str, FormSummary]
    forms: dict[str, dict]
    completion: dict
    computed: int
    reused: int
    seconds: float
    cpu_seconds: float


def records_root() -> Path:
    """``<results>/semisynthetic``: the benchmark's records and tables."""
    return results_dir() / "semisynthetic"


def _key(what: dict, request: SemiSyntheticRequest, truth_sha: str) -> str:
    """A short hash of what fixes a repetition besides its seed: the form's settings
    ``what``, the completion's recipe, the truth's checksum and the prediction seed."""
    text = json.dumps({"schema": RECORD_SCHEMA, "form": what,
                       "recipe": request.recipe.as_dict(), "rates_sha256": truth_sha,
                       "prediction_seed": request.prediction_seed}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _load(path: Path, key: str) -> dict | None:
    """The record at ``path`` when it is whole and of ``key``; ``None`` (recompute) when it is
    missing, unreadable, of another key or schema, or lacks a result."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(record, dict) and record.get("key") == key
            and record.get("schema") == RECORD_SCHEMA and isinstance(record.get("result"), dict)):
        return None
    return record if set(RESULT_KEYS) <= set(record["result"]) else None


def _binary_runner(form: Form, rates, prediction_seed: int):
    """``seed -> repetition`` of a binary form; its setup is built at the first call only, so
    a rerun whose records all exist builds nothing."""
    setup = None

    def compute(seed: int) -> dict:
        nonlocal setup
        setup = setup or setup_for(form, rates, prediction_seed)
        return run_repetition(setup, seed)
    return compute


def _stars_runner(stars, prediction_seed: int):
    """``seed -> repetition`` of the star version, built lazily as :func:`_binary_runner`."""
    built: dict = {}

    def compute(seed: int) -> dict:
        if not built:
            built["p"] = star_propensity(stars)
            built["predictions"] = star_predictions(stars, prediction_seed)
        return star_repetition(stars, built["p"], built["predictions"], seed)
    return compute


def _plan(name: str, request: SemiSyntheticRequest, stored, truths: dict):
    """Form ``name``'s settings (switches and the truth's checksum), record key and
    ``seed -> repetition`` function; ``truths`` caches the rates per set of cuts."""
    if name == STARS:
        stars = to_stars(stored.matrix)
        what = {"version": STARS, "marginal": list(MARGINAL), "alpha": ALPHA,
                "observed": OBSERVED}
        sha = sha256_hex(stars.tobytes())
        key = _key(what, request, sha)
        return ({**what, "stars_sha256": sha, "key": key}, key,
                _stars_runner(stars, request.prediction_seed))
    form = request.form(name)
    if form.cuts not in truths:
        truths[form.cuts] = truth_of(stored, form.cuts)
    truth = truths[form.cuts]
    key = _key(form.as_dict(), request, truth.sha256)
    return ({**form.as_dict(), "rates_sha256": truth.sha256, "key": key}, key,
            _binary_runner(form, truth.rates, request.prediction_seed))


def run_semisynthetic(request: SemiSyntheticRequest, echo=None) -> SemiSyntheticResult:
    """Build (or read) the truth, run every (form, seed) without a record, and summarise.

    ``echo`` (a callable, or ``None``) gets one progress line per form and the completion's.
    """
    start, cpu = time.perf_counter(), time.process_time()
    data = ensure_data(DATASET, quiet=echo is None)
    stored = load_completion(request.recipe, rebuild=request.rebuild, echo=echo)
    checksums = {SOURCE_FILE: data.checksums[SOURCE_FILE]}
    summaries, settings = {}, {}
    computed = reused = 0
    truths: dict = {}
    for name in request.forms:
        settings[name], key, compute = _plan(name, request, stored, truths)
        folder = records_root() / name / key
        settings[name]["records"] = str(folder)
        header = {"form": {k: v for k, v in settings[name].items() if k != "records"},
                  "prediction_seed": request.prediction_seed,
                  "completion": _completion_block(stored.manifest)}
        reps, done = [], 0
        for seed in request.seeds:
            path = folder / f"seed-{seed:02d}.json"
            record = None if request.force else _load(path, key)
            if record is None:
                t0 = time.perf_counter()
                result = compute(seed)
                record = {"schema": RECORD_SCHEMA, "kind": "semisynthetic", "key": key,
                          "seed": seed, **header, "result": result,
                          "provenance": provenance(checksums, time.perf_counter() - t0)}
                atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
                done += 1
            reps.append(record["result"])
        computed, reused = computed + done, reused + len(reps) - done
        summaries[name] = summarize(name, reps)
        if echo is not None:
            echo(f"{name}: {len(reps)} repetition(s), observed fraction "
                 f"{summaries[name].observed_fraction:.4f}; records in {folder}")
    return SemiSyntheticResult(summaries, settings, _completion_block(stored.manifest),
                               computed, reused, time.perf_counter() - start,
                               time.process_time() - cpu)


def _completion_block(manifest: dict) -> dict:
    """The completion's recipe and what it gave, as records and notes cite it."""
    keys = ("recipe", "source_sha256", "store_sha256", "epochs", "best_epoch", "range",
            "seconds")
    out = {k: manifest.get(k) for k in keys}
    out["best_val_mse"] = min(manifest.get("val_mse") or [float("nan")])
    out["last_val_mse"] = (manifest.get("val_mse") or [float("nan")])[-1]
    return out


@dataclass(frozen=True)
class SemiSyntheticReport:
    """The table in the requested format, the notes for standard error, the files written."""

    text: str
    notes: list[str]
    written: list[Path]
    result: SemiSyntheticResult


def semisynthetic_report(request: SemiSyntheticRequest, fmt: str = "table", figure: bool = True,
                         echo=None) -> SemiSyntheticReport:
    """:func:`run_semisynthetic`, then the tables in ``fmt`` (the binary forms', then the star
    version's); the markdown, LaTeX and CSV tables are saved under ``<results>/semisynthetic``
    (``relative_error.*``, ``relative_error_stars.*``) and (``figure``) the figure under
    ``<results>/figures``."""
    result = run_semisynthetic(request, echo=echo)
    binary = [s for name, s in result.summaries.items() if name != STARS]
    stars = result.summaries.get(STARS)
    tables = []
    if binary:
        tables.append((TABLE_NAME, lambda f: render_relative_error(binary, f)))
    if stars is not None:
        tables.append((f"{TABLE_NAME}_stars", lambda f: render_stars(stars, f)))
    written = []
    for name, table in tables:
        for ext, table_fmt in (("md", "markdown"), ("tex", "latex"), ("csv", "csv")):
            path = records_root() / f"{name}.{ext}"
            atomic_write_text(path, table(table_fmt) + "\n")
            written.append(path)
    if figure:
        written += save_figure(relative_error_figure(binary, stars), FIGURE_NAME)
    text = "\n\n".join(table(fmt) for _, table in tables)
    return SemiSyntheticReport(text, describe(result), written, result)


def describe(result: SemiSyntheticResult) -> list[str]:
    """Notes on a run: the truth, each form's switches and orderings, the counts and times."""
    c = result.completion
    notes = [f"truth: ML-100K completed by MF (seed {c['recipe']['seed']}, {c['epochs']} epochs, "
             f"last model; best validation MSE {c['best_val_mse']:.4f} at epoch "
             f"{c['best_epoch']}, last {c['last_val_mse']:.4f}; predictions in "
             f"[{c['range'][0]:.2f}, {c['range'][1]:.2f}]; completion sha256 "
             f"{str(c['store_sha256'])[:12]})"]
    for name, s in result.summaries.items():
        f = result.forms[name]
        if name == STARS:
            worst = max(s.mean[loss][m][e] for loss in s.mean for m in s.matrices
                        for e in ("IPS", "SNIPS"))
            naive = min(s.mean[loss][m]["Naive"] for loss in s.mean for m in s.matrices)
            notes.append(f"{name}: 1-5 stars by rank at marginal "
                         f"{','.join(str(x) for x in f['marginal'])}, propensity k alpha^(4 - r)"
                         f" with alpha {f['alpha']}, stars sha256 {f['stars_sha256'][:12]}; "
                         f"observed fraction {s.observed_fraction:.4f}; IPS and SNIPS at most "
                         f"{worst:.4f}, Naive at least {naive:.4f}")
            continue
        order = ordering(s)
        text = "; ".join(f"{m} {' < '.join(o)}" for m, o in order.items())
        true_max = max(s.mean["true"]["realised"][m][e] for m in s.matrices
                       for e in ("IPS", "SNIPS", "DR"))
        notes.append(f"{name}: propensity {f['propensity']}, labels {f['labels']}, cuts "
                     f"{','.join(str(x) for x in f['cuts'])}, rates sha256 "
                     f"{f['rates_sha256'][:12]}; observed fraction {s.observed_fraction:.4f}; "
                     f"noisy w, mean RE: {text}; true w: IPS, SNIPS, DR at most "
                     f"{true_max:.4f}")
    notes.append(f"{result.computed} repetition(s) computed, {result.reused} reused; "
                 f"{result.seconds:.1f} s wall, {result.cpu_seconds:.1f} s CPU")
    return notes
