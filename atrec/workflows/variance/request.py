"""What a Figure-2 run is asked to do: the ``min_items`` grid, seeds, data draws, training
lengths, and the parameter sets it reads (``default``, ``tuned`` or a file)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import yaml

from atrec.data.ml100k import MIN_ITEMS_GRID
from atrec.errors import AtrecError
from atrec.limits import MAX_MIN_ITEMS
from atrec.names import config_key
from atrec.propensity.builtin import DataItem
from atrec.run_settings import TUNING_SEED, ATSettings, TrainSettings
from atrec.params.lookup import (
    DEFAULT_CHAIN,
    NAMED_SETS,
    PUBLISHED,
    TUNED,
    HyperParams,
    chain_sets,
    load_param_table,
    lookup,
)

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
    if not parts or not all(re.fullmatch(r"\d+", p) and 1 <= int(p) <= MAX_MIN_ITEMS
                            for p in parts):
        raise AtrecError(f"--min-items {spec}: give integers in 1..{MAX_MIN_ITEMS}, "
                         f"comma-separated (e.g. 1,2,5,10,20,50), or 'all'")
    return tuple(sorted({int(p) for p in parts}))


# The sets 'atrec variance' reads without --params: the chain of every command with this
# experiment's documented set before the user's tuned values (the shipped sets hold no ML-100K
# values today; one that did would come first, as in 'atrec train').
VARIANCE_CHAIN = (*(s for s in DEFAULT_CHAIN if s != TUNED), DEFAULT, TUNED)
VARIANCE_PARAMS = ",".join(VARIANCE_CHAIN)


def _variance_table(source: str) -> tuple[dict, str, str]:
    """``(table, label, where)`` of one set: ``default`` (the shipped ML-100K file), ``tuned``
    or a YAML file (``published`` is refused: the paper published no ML-100K values)."""
    if source == PUBLISHED:
        raise AtrecError("the paper published no parameters for ML-100K: use --params default "
                         "(documented set), tuned, or a parameter FILE")
    if source == DEFAULT:
        ref = resources.files("atrec") / "resources" / "ml100k_params.yaml"
        where = (f"the default set ({ref.name}; it covers min_items "
                 f"{', '.join(map(str, MIN_ITEMS_GRID))})")
        return yaml.safe_load(ref.read_text()), DEFAULT, where
    table, label = load_param_table(source)
    return table, label, label


def _key_in(table: dict, dataset: str, with_at: bool) -> str | None:
    """The config key of ``dataset`` in ``table`` (files written before ``data-item`` had its
    name: ``item``), ``None`` when it has none."""
    section = table.get(dataset)
    if not isinstance(section, dict):
        return None
    for key in (config_key(PROPENSITY, with_at), config_key(OLD_PARAM_PROPENSITY, with_at)):
        if key in section:
            return key
    return None


def load_variance_params(source: str, min_items: int, with_at: bool) -> tuple[HyperParams, str]:
    """Hyperparameters of one (min_items, with/without AT) and their provenance label.

    ``source``: ``default`` (``atrec/resources/ml100k_params.yaml``, documented there),
    ``tuned`` (``atrec variance --tune``) or a YAML file; keys ``ml-100k-min<N>`` -> ``data-item``
    / ``data-item-at`` (files written before that name: ``item`` / ``item-at``). ``published`` is refused: the paper published no ML-100K values.
    """
    return _lookup(*_variance_table(source), min_items, with_at)


def _lookup(table: dict, label: str, where: str, min_items: int,
            with_at: bool) -> tuple[HyperParams, str]:
    dataset = variance_dataset(min_items)
    key = _key_in(table, dataset, with_at)
    if key is None:
        raise AtrecError(f"no parameters for {dataset}/{config_key(PROPENSITY, with_at)} in "
                         f"{where}: tune them ('atrec variance --tune') or give a parameter "
                         f"file that has them (--params FILE)")
    params = lookup(table, dataset, key, where)
    if with_at and params.epsilon is None:
        raise AtrecError(f"parameters of {dataset}/{key} in {where} lack 'epsilon', which AT needs")
    return params, label


def variance_params(source: str, min_items: Sequence[int],
                    at_options: Sequence[bool]) -> dict[tuple[int, bool], tuple[HyperParams, str]]:
    """``(min_items, with_at) -> (params, label)`` for the whole grid, from ONE set (Figure 2
    compares the grid's points, and its records are filed by set): ``source`` a set or file, or
    several comma-separated (default :data:`VARIANCE_PARAMS`): the first that has values for
    every point. Else one line naming the sets and the ``atrec variance --tune`` command."""
    grid = [(m, at) for m in min_items for at in at_options]
    sets = chain_sets(source)
    if len(sets) == 1:
        return {(m, at): load_variance_params(sets[0], m, at) for m, at in grid}
    gaps = []
    for name in sets:
        try:
            table, label, where = _variance_table(name)
        except AtrecError:
            if name not in NAMED_SETS:
                raise            # a parameter FILE the user named must exist and parse
            gaps.append(grid)
            continue
        missing = [(m, at) for m, at in grid if _key_in(table, variance_dataset(m), at) is None]
        if not missing:
            return {(m, at): _lookup(table, label, where, m, at) for m, at in grid}
        gaps.append(missing)
    first = next((c for c in grid if all(c in g for g in gaps)), gaps[-1][0])
    ats = set(at_options)
    flag = "" if len(ats) == 2 else (" --with-at" if True in ats else " --without-at")
    raise AtrecError(
        f"no parameters for {variance_dataset(first[0])}/{config_key(PROPENSITY, first[1])} "
        f"in {', '.join(sets)} (every min_items takes its values from one set): run 'atrec "
        f"variance --tune --min-items {','.join(map(str, min_items))}{flag}' (its values then "
        f"come from {TUNED})")


@dataclass(frozen=True)
class VarianceRequest:
    """What ``atrec variance`` runs. ``settings`` / ``at_settings`` default to the protocol's
    (``mf.TrainSettings()`` / ``at.ATSettings()``); tests pass fewer steps."""

    min_items: tuple[int, ...] = MIN_ITEMS_GRID
    at_options: tuple[bool, ...] = (False, True)
    seeds: tuple[int, ...] = tuple(range(20))
    params: str = VARIANCE_PARAMS
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


def protocol_settings(steps: int | None = None, pre_steps: int | None = None) -> tuple:
    """``(settings, at_settings)`` for a :class:`VarianceRequest`: ``None`` (the paper's protocol's)
    unless ``steps`` (MF-IPS training steps, protocol 500) or ``pre_steps`` (AT pre-training
    steps, protocol 150) are given."""
    return (None if steps is None else TrainSettings(steps=steps),
            None if pre_steps is None else ATSettings(pre_steps=pre_steps))
