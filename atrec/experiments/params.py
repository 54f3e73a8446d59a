"""Hyperparameter sets: the authors' published values, atrec's tuned values, or a YAML file.

A parameter file maps ``dataset -> config key -> {dim, lam[, epsilon]}`` where the config key is
``<propensity>`` or ``<propensity>-at`` (see :func:`atrec.names.config_key`).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from atrec.errors import AtrecError
from atrec.paths import results_dir

PUBLISHED = "published"
TUNED = "tuned"


@dataclass(frozen=True)
class HyperParams:
    """Hyperparameters of one configuration.

    ``dim``: embedding size (> 0); ``lam``: L2 weight (>= 0); ``epsilon``: AT agreement
    threshold (> 0), ``None`` without AT.
    """

    dim: int
    lam: float
    epsilon: float | None = None

    def __post_init__(self) -> None:
        if int(self.dim) != self.dim or self.dim <= 0:
            raise ValueError(f"dim must be a positive integer, got {self.dim!r}")
        if not self.lam >= 0:
            raise ValueError(f"lam must be >= 0, got {self.lam!r}")
        if self.epsilon is not None and not self.epsilon > 0:
            raise ValueError(f"epsilon must be > 0, got {self.epsilon!r}")
        object.__setattr__(self, "dim", int(self.dim))
        object.__setattr__(self, "lam", float(self.lam))
        if self.epsilon is not None:
            object.__setattr__(self, "epsilon", float(self.epsilon))

    def as_dict(self) -> dict:
        d = {"dim": self.dim, "lam": self.lam}
        if self.epsilon is not None:
            d["epsilon"] = self.epsilon
        return d


def tuned_params_path() -> Path:
    """Where ``atrec tune`` exports its best parameters and ``--params tuned`` reads them."""
    return results_dir() / "tuned_params.yaml"


def _read_yaml(path: Path, what: str) -> dict:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise AtrecError(f"{what} file {path} does not exist: give an existing YAML file") from None
    except OSError as exc:
        raise AtrecError(f"cannot read {what} file {path}: {exc.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" (line {line + 1})" if line is not None else ""
        raise AtrecError(f"{what} file {path} is not valid YAML{where}: fix or regenerate it") from None
    if not isinstance(doc, dict):
        raise AtrecError(f"{what} file {path} must map dataset -> configuration -> parameters")
    return doc


def load_param_table(source: str) -> tuple[dict, str]:
    """Load a parameter table from ``published``, ``tuned`` or a file path.

    Returns ``(table, label)``: the mapping and a provenance label for result records.
    """
    if source == PUBLISHED:
        ref = resources.files("atrec") / "resources" / "published_params.yaml"
        doc = yaml.safe_load(ref.read_text())
        return doc, PUBLISHED
    if source == TUNED:
        path = tuned_params_path()
        if not path.exists():
            raise AtrecError(
                f"no tuned parameters at {path}: run 'atrec tune' first, or use --params published"
            )
        return _read_yaml(path, "tuned parameter"), f"tuned:{path}"
    path = Path(source)
    return _read_yaml(path, "parameter"), f"file:{path.resolve()}"


def lookup(table: dict, dataset: str, key: str, source_label: str) -> HyperParams:
    """The :class:`HyperParams` of ``dataset`` / ``key`` in a loaded table."""
    entry = (table.get(dataset) or {}).get(key)
    if entry is None:
        raise AtrecError(
            f"no parameters for {dataset}/{key} in {source_label}: tune it ('atrec tune') or "
            f"add it to the parameter file"
        )
    try:
        return HyperParams(
            dim=entry["dim"], lam=entry["lam"], epsilon=entry.get("epsilon") if key.endswith("-at") else None
        )
    except KeyError as exc:
        raise AtrecError(f"parameters of {dataset}/{key} in {source_label} lack {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise AtrecError(f"bad parameters for {dataset}/{key} in {source_label}: {exc}") from None


def get_params(source: str, dataset: str, propensity: str, with_at: bool) -> tuple[HyperParams, str]:
    """Parameters of one configuration from ``source``; returns ``(params, provenance label)``."""
    from atrec.names import config_key

    key = config_key(propensity, with_at)
    table, label = load_param_table(source)
    params = lookup(table, dataset, key, label)
    if with_at and params.epsilon is None:
        raise AtrecError(f"parameters of {dataset}/{key} in {label} lack 'epsilon', which AT needs")
    return params, label
