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
from atrec.protocol import TUNING_SEED, ATSettings, TrainSettings
from atrec.results.params import PUBLISHED, TUNED, HyperParams, load_param_table, lookup

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


def protocol_settings(steps: int | None = None, pre_steps: int | None = None) -> tuple:
    """``(settings, at_settings)`` for a :class:`VarianceRequest`: ``None`` (PROTOCOL.md's)
    unless ``steps`` (MF-IPS training steps, protocol 500) or ``pre_steps`` (AT pre-training
    steps, protocol 150) are given."""
    return (None if steps is None else TrainSettings(steps=steps),
            None if pre_steps is None else ATSettings(pre_steps=pre_steps))
