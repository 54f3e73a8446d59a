"""The paper's variance experiment (RQ1, Figure 2) on MovieLens 100K.

For every ``min_items`` (paper: 1, 2, 5, 10, 20, 50) the data is built by
:func:`atrec.data.ml100k.build_variance_data` (50% candidate test set, re-sampled to uniform item
exposure). Which draw a seed ``s`` trains and is tested on (``data_draw``):

* ``fixed`` (default): one draw, seed 12345 (the protocol's seed for one-off cuts), for every
  seed; ``s`` cuts the 90/10 train/validation split and initialises the model, as in Table 1.
  Standard errors then cover training randomness only, like Table 1's. All seeds share array
  shapes, so they are trained stacked with one compilation.
* ``per-seed``: seed ``s`` also draws its own data, so standard errors include the variation of
  the test draw. Test sizes then differ per seed and every run compiles anew: about 4x slower,
  and about 60 MB of compiled code per AT run stays in the process (a per-seed grid with tuning
  ran out of memory on a shared 24 GB machine), so it is an option, not the default.

The paper does not say which randomness its standard errors cover. MAE/MSE are measured on the
95% slice of the re-sampled test set (:func:`atrec.data.splits.make_split`).

Propensity: MF-IPS (and A1/A2 of AT) are weighted with the paper's Eq. ``ml_pscore``,
``P(i) = n_i / max_j n_j`` counted on the whole filtered data set - the very propensity that
shaped the test set ("each model was trained with the specified propensity model ... to evaluate
the pure effect of the variance", the paper's RQ1) - not re-estimated on the training split as
atrec's ``item`` estimator would (that one floors empty counts and would make min P about twice
as large at ``min_items = 1``). Its minimum is the check value of the paper (0.0017 at 1, 0.0859
at 50).

Training lengths: PROTOCOL.md's by default (MF-IPS 500 steps; AT 150 pre-training steps, then
10 x 10 pseudo-labelling steps), as for Table 1 - the paper gives none for this experiment. On
ML-100K's 45,000 training ratings 150 batches of 1,024 are about 3.4 epochs (Coat: about 25), so
A1-A3 start pseudo-labelling far less trained than the MF-IPS they are compared with;
``protocol_settings(pre_steps=500)`` (``--pre-steps 500``) trains them as long as MF-IPS.

Records: one per (min_items, with/without AT, seed), under dataset ``ml-100k-min<N>`` and config
``data-item`` / ``data-item-at`` (so Table 1 never reads them), with an ``experiment`` block (min_items,
data seed, min relative propensity). A rerun reuses every existing record (``force`` recomputes).

Summary per ``min_items``: MAE and MSE of both methods (mean and standard error over seeds) and
the ratio with AT / without AT, computed per seed on the seeds that have both and then averaged
(mean and standard error over seeds: a paired comparison).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import yaml

from atrec.errors import AtrecError
from atrec.experiments.runner import (
    TUNING_SEED,
    ConfigOutcome,
    RunSpec,
    ensure_data,
    run_config,
    validation_loss,
)
from atrec.data.ml100k import MIN_ITEMS_GRID, VarianceData, build_variance_data
from atrec.names import config_key
from atrec.experiments.params import PUBLISHED, TUNED, HyperParams, load_param_table, lookup
from atrec.propensity.builtin import DataItem
from atrec.data.ratings import RatingData
from atrec.experiments.records import params_label
from atrec.protocol import SAMPLER_SEED, ATSettings, TrainSettings, settings_dict

DATASET = "ml-100k"
PROPENSITY = DataItem.name   # Figure 2's data-level P(i); records before it said "item"
# the config keys of parameter files written before the data-level P(i) had its own name
OLD_PARAM_PROPENSITY = "item"
DEFAULT = "default"
DATA_DRAWS = ("fixed", "per-seed")
DATA_SEED = TUNING_SEED  # the data draw of data_draw="fixed" (and of tuning)
VARIANCE_METRICS = ("mae", "mse")
FIGURE_NAME = "figure2_variance"


def variance_dataset(min_items: int) -> str:
    """Dataset label of one ``min_items`` in records and parameter files: ``ml-100k-min<N>``."""
    return f"{DATASET}-min{int(min_items)}"


def parse_min_items(spec: str | Sequence[int]) -> tuple[int, ...]:
    """``"1,2,5"`` -> ``(1, 2, 5)``; ``"all"`` -> the paper's grid; sorted, without repeats."""
    if not isinstance(spec, str):
        spec = ",".join(str(v) for v in spec)
    text = spec.strip().lower()
    if text == "all":
        return MIN_ITEMS_GRID
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(re.fullmatch(r"\d+", p) and int(p) >= 1 for p in parts):
        raise AtrecError(f"--min-items {spec}: give positive integers, comma-separated "
                         f"(e.g. 1,2,5,10,20,50), or 'all'")
    return tuple(sorted({int(p) for p in parts}))


def load_variance_params(source: str, min_items: int, with_at: bool) -> tuple[HyperParams, str]:
    """Hyperparameters of one (min_items, with/without AT) and their provenance label.

    ``source``: ``default`` (``atrec/resources/ml100k_params.yaml``, documented there),
    ``tuned`` (``atrec variance --tune``) or a YAML file; keys ``ml-100k-min<N>`` -> ``data-item``
    / ``data-item-at`` (files written before that name: ``item`` / ``item-at``). ``published`` is refused: the paper published no ML-100K values.
    """
    dataset, key = variance_dataset(min_items), config_key(PROPENSITY, with_at)
    if source == PUBLISHED:
        raise AtrecError("the paper published no parameters for ML-100K: use --params default "
                         "(documented set), tuned, or a parameter FILE")
    if source == DEFAULT:
        ref = resources.files("atrec") / "resources" / "ml100k_params.yaml"
        table, label = yaml.safe_load(ref.read_text()), DEFAULT
        where = (f"the default set ({ref.name}; it covers min_items "
                 f"{', '.join(map(str, MIN_ITEMS_GRID))})")
    else:
        table, label = load_param_table(source)
        where = label
    section = table.get(dataset)
    if isinstance(section, dict) and key not in section:
        key = config_key(OLD_PARAM_PROPENSITY, with_at) if config_key(
            OLD_PARAM_PROPENSITY, with_at) in section else key
    if not isinstance(section, dict) or key not in section:
        raise AtrecError(f"no parameters for {dataset}/{key} in {where}: tune them ('atrec "
                         f"variance --tune') or give a parameter file that has them (--params FILE)")
    params = lookup(table, dataset, key, where)
    if with_at and params.epsilon is None:
        raise AtrecError(f"parameters of {dataset}/{key} in {where} lack 'epsilon', which AT needs")
    return params, label


@dataclass(frozen=True)
class VarianceRequest:
    """What ``atrec variance`` runs. ``settings`` / ``at_settings`` default to the protocol's
    (``mf.TrainSettings()`` / ``at.ATSettings()``); tests pass fewer steps."""

    min_items: tuple[int, ...] = MIN_ITEMS_GRID
    at_options: tuple[bool, ...] = (False, True)
    seeds: tuple[int, ...] = tuple(range(20))
    params: str = DEFAULT
    force: bool = False
    settings: object = None
    at_settings: object = None
    data_draw: str = "fixed"         # "fixed": one data draw (seed 12345); "per-seed": seed s
    tune_trials: int | None = None   # tune every (min_items, method) first, then use 'tuned'
    storage: str | None = None       # Optuna storage URL of the tuning (default: results/optuna.db)

    def __post_init__(self) -> None:
        if self.data_draw not in DATA_DRAWS:
            raise ValueError(f"unknown data_draw {self.data_draw!r}: choose from "
                             f"{', '.join(DATA_DRAWS)}")
        if self.tune_trials is not None:
            if int(self.tune_trials) != self.tune_trials or self.tune_trials < 1:
                raise ValueError(f"tune_trials must be a positive integer, got {self.tune_trials!r}")
            if self.params != TUNED:
                raise ValueError(f"tuning exports to the 'tuned' set; params must be 'tuned', "
                                 f"got {self.params!r}")
        if not self.min_items or any(int(m) != m or m < 1 for m in self.min_items):
            raise ValueError(f"min_items must be positive integers, got {self.min_items!r}")
        if not self.at_options or not set(self.at_options) <= {False, True}:
            raise ValueError(f"at_options must be a non-empty subset of (False, True), "
                             f"got {self.at_options!r}")
        if not self.seeds or any(int(s) != s or s < 0 for s in self.seeds):
            raise ValueError(f"seeds must be non-negative integers, got {self.seeds!r}")

    def data_seed(self, seed: int) -> int:
        """The seed of the data draw that the run of ``seed`` trains and is tested on."""
        return seed if self.data_draw == "per-seed" else DATA_SEED


@dataclass(frozen=True)
class MeanSE:
    """Mean and standard error (``sd(ddof=1) / sqrt(n)``; NaN for ``n < 2``) over seeds."""

    mean: float
    se: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> MeanSE:
        v = np.asarray(values, dtype=np.float64)
        if not len(v):
            raise ValueError("MeanSE needs at least one value")
        se = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else math.nan
        return cls(float(v.mean()), se, len(v))

    def text(self, digits: int = 4) -> str:
        """``0.8734 ± 0.0021`` (just the mean when the se is undefined)."""
        if math.isnan(self.se):
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {self.se:.{digits}f}"


@dataclass(frozen=True)
class VariancePoint:
    """One ``min_items``: its data check and the summaries of both methods.

    ``without`` / ``with_at``: metric (``mae``, ``mse``) -> :class:`MeanSE` over that method's
    seeds (``None`` when it was not run); ``ratio``: metric -> :class:`MeanSE` of the per-seed
    ratio with AT / without AT over ``paired_seeds`` (``None`` unless both ran).
    """

    min_items: int
    min_relative_propensity: float
    num_users: int
    num_items: int
    without: dict | None
    with_at: dict | None
    ratio: dict | None
    paired_seeds: tuple[int, ...]


def summarize_point(min_items: int, min_relative_propensity: float, num_users: int,
                    num_items: int, records: Sequence[dict]) -> VariancePoint:
    """Summarise the records of one ``min_items`` (both methods, any seeds)."""
    by_method: dict[bool, dict[int, dict]] = {False: {}, True: {}}
    for r in records:
        by_method[bool(r["with_at"])][int(r["seed"])] = r["metrics"]

    def stats(runs: dict[int, dict]) -> dict | None:
        if not runs:
            return None
        return {m: MeanSE.of([runs[s][m] for s in sorted(runs)]) for m in VARIANCE_METRICS}

    paired = tuple(sorted(set(by_method[False]) & set(by_method[True])))
    ratio = None
    if paired:
        ratio = {m: MeanSE.of([by_method[True][s][m] / by_method[False][s][m] for s in paired])
                 for m in VARIANCE_METRICS}
    return VariancePoint(int(min_items), float(min_relative_propensity), int(num_users),
                         int(num_items), stats(by_method[False]), stats(by_method[True]), ratio,
                         paired)


@dataclass
class VarianceResult:
    """What :func:`run_variance` did: one point per ``min_items`` and the runs behind them."""

    request: VarianceRequest
    points: list[VariancePoint]
    params: dict                     # (min_items, with_at) -> HyperParams
    params_source: str               # label: default, tuned:<path> or file:<path>
    outcomes: list[ConfigOutcome] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    studies: list = field(default_factory=list)   # tuning.StudyOutcome, with tune_trials
    seconds: float = 0.0

    @property
    def trained(self) -> int:
        return sum(len(o.trained) for o in self.outcomes)

    @property
    def reused(self) -> int:
        return sum(len(o.reused) for o in self.outcomes)


def _spec(v: VarianceData, with_at: bool, params: HyperParams, source: str,
          seeds: tuple[int, ...], request: VarianceRequest) -> RunSpec:
    experiment = {"name": "variance", "min_items": v.min_items, "data_seed": v.seed,
                  "data_draw": request.data_draw,
                  "min_relative_propensity": v.min_relative_propensity,
                  "propensity": "P(i) = n_i / max n_i over the filtered data (paper Eq. ml_pscore)"}
    return RunSpec(v.data.name, PROPENSITY, with_at, params, source, seeds, request.settings,
                   request.at_settings if with_at else None,
                   estimator=DataItem(v.item_propensity), experiment=experiment)


def check_min_items(ratings: RatingData, min_items: int) -> None:
    """One-line :class:`AtrecError` when no movie of ``ratings`` has ``min_items`` ratings."""
    most = int(np.bincount(ratings.train.item).max())
    if min_items > most:
        raise AtrecError(f"--min-items {min_items}: no movie has that many ratings (the most-rated "
                         f"movie has {most}); choose values up to {most}")


def build_point_data(ratings: RatingData, min_items: int, seed: int) -> VarianceData:
    """:func:`atrec.data.ml100k.build_variance_data` on all of ML-100K (``ratings.train``)."""
    check_min_items(ratings, min_items)
    return build_variance_data(ratings.train, min_items, seed, ratings.checksums)


def run_variance(request: VarianceRequest, data: RatingData | None = None,
                 root: Path | str | None = None,
                 figures: bool = True, out_dir: Path | None = None, quiet: bool = True,
                 progress: Callable[[ConfigOutcome], None] | None = None,
                 tune_progress: Callable | None = None) -> VarianceResult:
    """Train MF-IPS without / with AT for every ``min_items`` and seed; summarise; draw Figure 2.

    ``data``: ML-100K as :func:`atrec.data.preprocess.load_data` gives it (all of ``u.data`` as
    ``train``); default: :func:`atrec.experiments.runner.ensure_data` (downloads and preprocesses when
    needed). ``root``: results folder of the records (default ``results/``); ``out_dir``: folder
    of the figure (default ``<root>/figures``). ``progress(outcome)`` is called after each
    (min_items, method) with the outcomes of its seeds merged into one; ``tune_progress`` after
    every tuning trial (see :func:`tune_variance`).
    """
    start = time.perf_counter()
    root = None if root is None else Path(root)
    if data is None:
        data = ensure_data(DATASET, quiet=quiet)
    studies = []
    if request.tune_trials:
        studies = tune_variance(data, request.min_items, request.at_options, request.tune_trials,
                                request.storage, request.settings, request.at_settings,
                                progress=tune_progress)
    # every min_items and parameter is checked before any training, so bad input fails at once
    for m in request.min_items:
        check_min_items(data, m)
    looked_up = {(m, at): load_variance_params(request.params, m, at)
                 for m in request.min_items for at in request.at_options}
    params = {key: hp for key, (hp, _) in looked_up.items()}
    source = next(iter(looked_up.values()))[1]
    if not request.force:
        check_reusable(request, params_label(source), root)
    result = VarianceResult(request, [], params, source, studies=studies)
    for min_items in request.min_items:
        # seeds that share a data draw are trained together (stacked, one compilation)
        draws: dict[int, list[int]] = {}
        for seed in request.seeds:
            draws.setdefault(request.data_seed(seed), []).append(seed)
        point_data = {d: build_point_data(data, min_items, d) for d in draws}
        records: list[dict] = []
        for with_at in request.at_options:
            hp = params[(min_items, with_at)]
            merged = None
            for d, seeds in draws.items():
                spec = _spec(point_data[d], with_at, hp, source, tuple(seeds), request)
                outcome = run_config(point_data[d].data, spec, root, force=request.force)
                merged = _merge(merged, outcome, request.seeds)
            merged.records.sort(key=lambda r: r["seed"])
            result.outcomes.append(merged)
            records += merged.records
            if progress:
                progress(merged)
        first = next(iter(point_data.values()))
        result.points.append(summarize_point(min_items, first.min_relative_propensity,
                                             first.data.num_users, first.data.num_items, records))
    if figures:
        from atrec.reporting.figures import figure2, save_figure

        if out_dir is None and root is not None:
            out_dir = root / "figures"
        fig = figure2(result.points, params_label(source), note=describe_settings(request))
        result.figures = save_figure(fig, FIGURE_NAME, out_dir)
    result.seconds = time.perf_counter() - start
    return result


def protocol_settings(steps: int | None = None, pre_steps: int | None = None) -> tuple:
    """``(settings, at_settings)`` for a :class:`VarianceRequest`: ``None`` (PROTOCOL.md's)
    unless ``steps`` (MF-IPS training steps, protocol 500) or ``pre_steps`` (AT pre-training
    steps, protocol 150) are given."""
    return (None if steps is None else TrainSettings(steps=steps),
            None if pre_steps is None else ATSettings(pre_steps=pre_steps))


def check_reusable(request: VarianceRequest, label: str, root: Path | None = None) -> None:
    """Refuse to reuse a record made on another data draw or under other protocol settings.

    Records are filed by (min_items, method, parameter set, seed), not by settings, so a rerun
    with e.g. another ``pre_steps`` would otherwise silently reuse the old numbers.
    """
    from atrec.experiments.records import load_record, record_path

    for with_at in request.at_options:
        expected = settings_dict(request.settings, request.at_settings, with_at)
        for m in request.min_items:
            for seed in request.seeds:
                path = record_path(variance_dataset(m), config_key(PROPENSITY, with_at), label,
                                   seed, root)
                if not path.exists():
                    continue
                record = load_record(path)
                data_seed = record.get("experiment", {}).get("data_seed")
                if data_seed != request.data_seed(seed):
                    raise AtrecError(f"{path} was trained on the data draw of seed {data_seed}, "
                                     f"not {request.data_seed(seed)} (data_draw "
                                     f"{request.data_draw}); rerun with --force to replace such "
                                     f"records, or use another results folder (ATREC_RESULTS_DIR)")
                stored = record.get("protocol", {}).get("settings")
                if stored != expected:
                    diff = ", ".join(f"{k} {stored.get(k) if stored else None} (now {v})"
                                     for k, v in expected.items()
                                     if not stored or stored.get(k) != v)
                    raise AtrecError(f"{path} was made with other settings: {diff}; rerun with "
                                     f"--force to replace such records, or use another results "
                                     f"folder (ATREC_RESULTS_DIR)")


def tune_variance(data: RatingData, min_items: Sequence[int], at_options: Sequence[bool],
                  trials: int = 25, storage: str | None = None, settings=None, at_settings=None,
                  export_path: Path | None = None, study_prefix: str = "atrec",
                  progress: Callable | None = None) -> list:
    """Tune every (min_items, with/without AT) as PROTOCOL.md tunes Table 1; export to 'tuned'.

    Objective: the lowest validation loss of one run on the data built with seed 12345 and its
    seed-12345 split, weighted by the data-level ``P(i)`` (:class:`~atrec.propensity.builtin.DataItem`); search
    space, TPE seed, storage, resumption and export as :mod:`atrec.tuning` (studies named e.g.
    ``atrec-ml-100k-min5-item-at``; entries ``ml-100k-min5`` -> ``item-at`` in the tuned file).
    ``progress`` is passed to :func:`atrec.tuning.study.run_study`. Returns the
    :class:`atrec.tuning.study.StudyOutcome` of every study.
    """
    from atrec.tuning import storage as tuning_storage
    from atrec import tuning

    url = storage or tuning_storage.default_storage_url()
    opened = tuning_storage.open_storage(url)
    outcomes = []
    for m in min_items:
        v = build_point_data(data, m, DATA_SEED)
        estimator = DataItem(v.item_propensity)
        for with_at in at_options:
            def objective(params: HyperParams, v=v, estimator=estimator, with_at=with_at):
                return validation_loss(v.data, PROPENSITY, with_at, params, TUNING_SEED,
                                       settings, at_settings, estimator)

            attrs = {"dataset": v.data.name, "propensity": PROPENSITY, "with_at": with_at,
                     "objective": "min validation loss, data and split seed 12345, "
                                  "data-level P(i)",
                     "settings": settings_dict(settings, at_settings, with_at),
                     "search_space": tuning.SEARCH_SPACE.as_dict(),
                     "sampler_seed": SAMPLER_SEED, "data": dict(data.checksums)}
            name = tuning.study_name(study_prefix, v.data.name, PROPENSITY, with_at)
            outcome = tuning.run_study(name, objective, with_at, trials, opened, attrs=attrs,
                                       progress=progress)
            outcome.storage = tuning_storage.storage_label(url)
            outcome.dataset, outcome.propensity, outcome.with_at = v.data.name, PROPENSITY, with_at
            tuning.export_best([outcome], export_path)
            outcomes.append(outcome)
    return outcomes


def _merge(merged: ConfigOutcome | None, outcome: ConfigOutcome, seeds) -> ConfigOutcome:
    """One outcome for all seeds of a (min_items, method): runs are made one seed at a time."""
    if merged is None:
        spec = outcome.spec
        merged = ConfigOutcome(RunSpec(spec.dataset, spec.propensity, spec.with_at, spec.params,
                                       spec.params_source, tuple(seeds), spec.settings,
                                       spec.at_settings))
    merged.records += outcome.records
    merged.trained += outcome.trained
    merged.reused += outcome.reused
    merged.seconds += outcome.seconds
    return merged


def variance_rows(points: Sequence[VariancePoint], numeric: bool = False) -> list[dict]:
    """One row per ``min_items``: min relative propensity, MAE/MSE without and with AT, ratios.

    ``numeric=False``: cells as ``mean ± se`` strings (terminal, markdown, LaTeX);
    ``numeric=True``: separate ``<column>`` and ``<column> se`` numbers (CSV, JSON).
    """
    rows = []
    for p in points:
        row = {"min_items": p.min_items, "min P(i)": f"{p.min_relative_propensity:.4f}",
               "items": p.num_items, "seeds": len(p.paired_seeds) if p.ratio else None}
        if numeric:
            row["min P(i)"] = p.min_relative_propensity
        for metric in VARIANCE_METRICS:
            name = metric.upper()
            for label, stats in ((f"{name} w/o AT", p.without), (f"{name} w/ AT", p.with_at),
                                 (f"{name} w/ / w/o", p.ratio)):
                cell = stats[metric] if stats else None
                if numeric:
                    row[label] = cell.mean if cell else None
                    row[f"{label} se"] = None if cell is None or math.isnan(cell.se) else cell.se
                else:
                    row[label] = cell.text() if cell else "-"
        if row["seeds"] is None:
            methods = p.without or p.with_at
            row["seeds"] = methods["mse"].n if methods else 0
        rows.append(row)
    return rows


def describe_params(result: VarianceResult) -> str:
    """One line naming the parameter set and its values, for the report."""
    what = {DEFAULT: "default set (atrec/resources/ml100k_params.yaml: Coat's published item "
                     "values; none are published for ML-100K)"}.get(result.params_source,
                                                                 result.params_source)
    parts = []
    for with_at in result.request.at_options:
        by_value: dict[tuple, list[int]] = {}
        for (min_items, at), hp in result.params.items():
            if at == with_at:
                by_value.setdefault(tuple(hp.as_dict().items()), []).append(min_items)
        for value, grid in by_value.items():
            where = "" if len(by_value) == 1 else f" at min_items {','.join(map(str, grid))}"
            parts.append(f"{'w/' if with_at else 'w/o'} AT{where}: "
                         + ", ".join(f"{k}={v:g}" for k, v in value))
    return f"parameters: {what}; " + "; ".join(parts)


def describe_settings(request: VarianceRequest) -> str:
    """One line with the training lengths used, e.g. for the report and ``variance.md``."""

    parts = []
    if False in request.at_options:
        parts.append(f"MF-IPS {settings_dict(request.settings, None, False)['steps']} steps")
    if True in request.at_options:
        s = settings_dict(None, request.at_settings, True)
        parts.append(f"AT {s['pre_steps']} pre-training + {s['iterations']} x "
                     f"{s['steps_per_iteration']} pseudo-labelling steps")
    default = request.settings is None and request.at_settings is None
    draw = (f"one data draw (seed {DATA_SEED}) for all seeds" if request.data_draw == "fixed"
            else "a data draw per seed")
    return "settings: " + "; ".join(parts) + (" (PROTOCOL.md)" if default else "") + f"; {draw}"


@dataclass
class VarianceReport:
    """What :func:`reproduce_variance` wrote: ``outputs`` (label -> path) and a one-line summary."""

    result: VarianceResult
    outputs: dict[str, Path]
    summary: str


def reproduce_variance(seeds: int = 20, params: str = DEFAULT, root: Path | None = None,
                       quiet: bool = True, tune_trials: int | None = None) -> VarianceReport:
    """The whole Figure-2 experiment for ``atrec reproduce`` / ``make reproduce``.

    Every ``min_items`` of the paper, without and with AT, seeds ``0..seeds-1``, PROTOCOL.md's
    settings (see :func:`variance_report`). ``tune_trials``: tune every configuration first
    (25 in the protocol) and train with the tuned values.
    """
    request = VarianceRequest(seeds=tuple(range(seeds)), params=TUNED if tune_trials else params,
                              tune_trials=tune_trials)
    return variance_report(request, root=root, quiet=quiet)


def variance_report(request: VarianceRequest, data: RatingData | None = None,
                    root: Path | None = None, quiet: bool = True) -> VarianceReport:
    """:func:`run_variance`, then ``<root>/variance.md`` (the table, the parameter and settings
    lines) beside Figure 2; returns the paths and a one-line summary. Resumable."""
    from atrec.paths import results_dir
    from atrec.experiments.records import atomic_write_text
    from atrec.reporting.tables import render

    result = run_variance(request, data, root=root, quiet=quiet)
    base = results_dir() if root is None else Path(root)
    table = base / "variance.md"
    text = render(variance_rows(result.points), "markdown", numparse=False)
    atomic_write_text(table, "# Figure 2: MovieLens 100K, MF-IPS with vs without AT\n\n"
                      f"{text}\n\n{describe_params(result)}\n\n{describe_settings(request)}\n")
    outputs = {"variance table": table}
    outputs.update({f"figure 2 ({p.suffix[1:]})": p for p in result.figures})
    ratios = ", ".join(f"{p.min_items}: {p.ratio['mse'].mean:.3f}" for p in result.points
                       if p.ratio)
    summary = (f"{len(result.points)} min_items x {len(request.seeds)} seeds: {result.trained} "
               f"runs trained, {result.reused} reused"
               + (f"; MSE w/ / w/o AT by min_items: {ratios}" if ratios else ""))
    return VarianceReport(result, outputs, summary)
