"""Hyperparameter sets: the authors' published values, atrec's tuned values, or a YAML file.

A parameter file maps ``dataset -> config key -> {dim, lam[, epsilon]}`` where the config key is
``<propensity>`` or ``<propensity>-at`` (see :func:`atrec.names.config_key`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from atrec.errors import AtrecError
from atrec.methods.registry import (
    DEFAULT_METHOD,
    METHODS,
    method_class,
    method_form,
    registry_for,
)
from atrec.names import DATASETS, NO_PROPENSITY, config_key
from atrec.protocols import Protocol, get_protocol
from atrec.params.keys import _known_method, entry_key
from atrec.params.sets import (  # noqa: F401  (re-exported: the sets' names live there)
    DEFAULT_CHAIN,
    DEFAULT_PARAMS,
    NAMED_SETS,
    PUBLISHED,
    REFERENCE,
    SET_HELP,
    SHIPPED_FILES,
    TUNED,
    TUNED_ATREC,
    default_params,
    start_params,
)
from atrec.params.hints import (  # noqa: F401  (re-exported)
    missing_values_error,
    no_values_error,
    tune_command_for,
    tune_commands_for,
)


@dataclass(frozen=True)
class HyperParams:
    """Hyperparameters of one configuration.

    ``dim``: embedding size (> 0); ``lam``: L2 weight (>= 0); ``epsilon``: AT agreement
    threshold (> 0), ``None`` without AT; ``extra``: a method's own hyperparameters as sorted
    ``(name, value)`` pairs (see :meth:`atrec.methods.base.Method.hyperparameters`).
    """

    dim: int
    lam: float
    epsilon: float | None = None
    extra: tuple = ()

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

    @classmethod
    def from_values(cls, values: dict) -> HyperParams:
        """From validated ``name -> value`` (``dim``, ``lam``, optional ``epsilon``, others)."""
        rest = {k: v for k, v in values.items() if k not in ("dim", "lam", "epsilon")}
        return cls(values["dim"], values["lam"], values.get("epsilon"),
                   tuple(sorted(rest.items())))

    def as_dict(self) -> dict:
        d = {"dim": self.dim, "lam": self.lam, **dict(self.extra)}
        if self.epsilon is not None:
            d["epsilon"] = self.epsilon
        return d


_VARIANCE_DATASET = re.compile(r"ml-100k-min\d+")  # atrec.experiments.variance's datasets
# Keys beside the parameters: the datasets' neighbours at the top of a file (the shipped files
# name their source) and what 'atrec tune' records beside each entry (atrec.tuning.export).
TABLE_METADATA = ("source",)
ENTRY_METADATA = ("study", "trials", "best_value", "best_trial", "storage", "updated",
                  "reference_value", "start", "start_value", "splits")


def tuned_params_path(protocol: Protocol | str | None = None) -> Path:
    """Where ``atrec tune`` exports its best parameters and ``--params tuned`` reads them under
    ``protocol`` (:meth:`~atrec.protocols.Protocol.tuned_params_path`; default saito2020)."""
    return get_protocol(protocol).tuned_params_path()


def _read_yaml(path: Path, what: str) -> dict:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise AtrecError(f"{what} file {path} does not exist: give an existing YAML file") from None
    except UnicodeDecodeError:
        raise AtrecError(f"{what} file {path} is not UTF-8 text (binary?): give a YAML file "
                         f"mapping dataset -> configuration -> parameters") from None
    except OSError as exc:
        raise AtrecError(f"cannot read {what} file {path}: {exc.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except RecursionError:
        raise AtrecError(f"{what} file {path} is nested too deeply: fix or regenerate it") from None
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" (line {line + 1})" if line is not None else ""
        raise AtrecError(f"{what} file {path} is not valid YAML{where}: fix or regenerate it") from None
    if not isinstance(doc, dict):
        got = "is empty" if doc is None else f"holds a {type(doc).__name__}"
        raise AtrecError(f"{what} file {path} {got}: it must map dataset -> configuration -> "
                         f"parameters (see atrec/resources/published_params.yaml)")
    return doc


def load_param_table(source: str, protocol: Protocol | str | None = None) -> tuple[dict, str]:
    """Load a parameter table from a named set or a file path (a file's keys checked against
    ``protocol``'s methods: a binary protocol's are its own).

    ``published``: the paper's authors' values for MF-IPS (``atrec/resources``);
    ``tuned-atrec``: the baselines' values tuned by atrec's protocol, shipped with the command
    that made them; ``reference``: the values each method's authors published under their own
    protocol (:attr:`~atrec.methods.base.Method.reference_params`); ``tuned``: yours, from
    ``atrec tune``. Returns ``(table, label)``: the mapping and a provenance label for records.
    """
    if source in SHIPPED_FILES:
        ref = resources.files("atrec") / "resources" / SHIPPED_FILES[source]
        return yaml.safe_load(ref.read_text()), source
    if source == REFERENCE:
        table: dict = {}
        for entry in METHODS.entries():
            for dataset, keys in entry.cls.reference_params.items():
                table.setdefault(dataset, {}).update(keys)
        return table, REFERENCE
    if source == TUNED:
        path = tuned_params_path()
        if not path.exists():
            raise AtrecError(
                f"no tuned parameters at {path}: run 'atrec tune' first, or use --params published"
            )
        return read_tuned_file(path), f"tuned:{path}"
    path = Path(source)
    return (check_table(_read_yaml(path, "parameter"), str(path), protocol=protocol),
            f"file:{path.resolve()}")


def read_tuned_file(path: Path, protocol: Protocol | str | None = None) -> dict:
    """The table of a tuned parameter file. Written by 'atrec tune', which may tune any data
    set it is given (a synthetic one, from Python): its configurations and hyperparameters are
    checked (:func:`check_table`), its dataset names are not."""
    return check_table(_read_yaml(path, "tuned parameter"), str(path), datasets=False,
                       protocol=protocol)


def check_table(table: dict, where: str, datasets: bool = True,
                protocol: Protocol | str | None = None) -> dict:
    """``table`` (a user's parameter file) when every key in it is known; else one-line
    :class:`AtrecError` naming the key, where it is and the keys allowed there.

    Checked for the whole file when it is read, before any work starts: a misspelt dataset,
    configuration or hyperparameter (``itme:``, ``dimm:``) would otherwise be passed over and
    the run go on with other values or none. Every entry's values are checked too.
    ``datasets=False`` leaves the top-level names unchecked.
    """
    from atrec.propensity.registry import PROPENSITIES

    for dataset, section in table.items():
        if dataset in TABLE_METADATA:
            continue
        if datasets and dataset not in DATASETS and not _VARIANCE_DATASET.fullmatch(
                str(dataset)):
            raise AtrecError(f"unknown dataset '{dataset}' in parameter file {where}: give "
                             f"{', '.join(DATASETS)} (or ml-100k-min<N> for 'atrec variance')")
        if not isinstance(section, dict):
            continue  # lookup names the dataset and what it must map
        for key, entry in section.items():
            method, _, rest = str(key).rpartition("/")
            method = method or DEFAULT_METHOD
            propensity = rest.removesuffix("-at")
            names = registry_for(protocol).names()   # a binary protocol's methods are its own
            if not _known_method(method, protocol) or propensity not in (*PROPENSITIES.names(),
                                                                         NO_PROPENSITY):
                raise AtrecError(
                    f"unknown configuration '{key}' under '{dataset}' in parameter file {where}: "
                    f"give [<method>[+option=value]/]<propensity>[-at], methods "
                    f"{', '.join(names)}, "
                    f"propensities {', '.join(PROPENSITIES.names())} (or {NO_PROPENSITY})")
            if isinstance(entry, dict):
                check_entry(entry, dataset, key, where, method, protocol)
    return table


def lookup(table: dict, dataset: str, key: str, source_label: str,
           method: str = DEFAULT_METHOD, protocol: Protocol | str | None = None,
           base: bool = False) -> HyperParams:
    """The :class:`HyperParams` of ``dataset`` / ``key`` in a loaded table (under the key, or
    a name its method had: :func:`entry_key`), validated against ``method``'s hyperparameters
    (types, finiteness, ranges); a bad value is one line naming the key, the value and the
    allowed range."""
    section = table.get(dataset)
    if section is not None and not isinstance(section, dict):
        raise AtrecError(f"bad parameters for {dataset} in {source_label}: the entry must map "
                         f"configuration -> parameters, got {section!r:.60}; fix the file")
    found = entry_key(section or {}, key, protocol, base)
    entry = (section or {}).get(found) if found else None
    if entry is None:
        raise AtrecError(
            f"no parameters for {dataset}/{key} in {source_label}: tune it "
            f"('atrec tune{get_protocol(protocol).flag}') "
            f"or add it to the parameter file"
        )
    if not isinstance(entry, dict):
        raise AtrecError(f"bad parameters for {dataset}/{key} in {source_label}: the entry must "
                         f"map names to numbers (dim, lam, ...), got {entry!r:.60}; fix the file")
    return HyperParams.from_values(check_entry(entry, dataset, key, source_label, method,
                                               protocol))


def check_entry(entry: dict, dataset: str, key: str, where: str, method: str,
                protocol: Protocol | str | None = None) -> dict:
    """The parameters of one entry validated by ``method`` in the form it runs in under
    ``protocol`` (names, types, ranges; a hyperparameter of that form that the entry lacks at
    its default), without what 'atrec tune' records beside them; a bad one is one line naming
    the entry and the file."""
    values = {k: v for k, v in entry.items() if k not in ENTRY_METADATA}
    try:
        return method_class(method, protocol).check_params(
            values, with_at=key.endswith("-at"), form=method_form(method, protocol))
    except (TypeError, ValueError) as exc:
        raise AtrecError(f"bad parameters for {dataset}/{key} in {where}: {exc}; fix the "
                         f"file or tune again") from None


def chain_sets(source: str) -> list[str]:
    """The parameter sets of a ``--params`` value: one, or several comma-separated (a chain,
    e.g. :data:`DEFAULT_PARAMS`)."""
    sets = [s.strip() for s in str(source).split(",") if s.strip()]
    if not sets:
        raise AtrecError("empty --params value: give a parameter set, or several "
                         "comma-separated (default " + DEFAULT_PARAMS + ")")
    return sets


def chain_lookup(sets, dataset: str, propensity: str, with_at: bool, method: str,
                 tables: dict | None = None,
                 protocol: Protocol | str | None = None) -> tuple[HyperParams, str] | None:
    """``(params, label)`` from the first set of ``sets`` with values for the configuration
    under ``protocol`` (default saito2020), ``None`` when none has them: the same rule under
    every protocol. A set that cannot be read here (no tuned file yet) has none; a parameter
    FILE the user named must exist and parse. Under a protocol of atrec's shared sets
    (:attr:`~atrec.protocols.Protocol.shared_sets`), ``published`` in a chain is the paper's
    file alone (a baseline's authors' values are its ``reference``); under another, its own
    sets (:func:`protocol_chain_lookup`). ``tables`` caches loaded sets between calls."""
    proto = get_protocol(protocol)
    if not proto.shared_sets:
        return protocol_chain_lookup(sets, dataset, config_key(propensity, with_at, method),
                                     method, proto)
    tables = {} if tables is None else tables
    key = config_key(propensity, with_at, method)
    for source in sets:
        if source not in tables:
            try:
                tables[source] = load_param_table(source)
            except AtrecError:
                if source not in NAMED_SETS:
                    raise
                tables[source] = ({}, source)
        table, label = tables[source]
        if entry_key(table.get(dataset), key) is not None:
            return lookup(table, dataset, key, label, method), label
    return None


def _chain_params(sets: list[str], dataset: str, propensity: str, with_at: bool,
                  method: str, tables: dict, protocol: Protocol) -> tuple[HyperParams, str]:
    """The first set of ``sets`` with values for the configuration (:func:`chain_lookup`), or
    the one-line error naming the sets and the tune command."""
    found = chain_lookup(sets, dataset, propensity, with_at, method, tables, protocol)
    if found is None:
        raise no_values_error(sets, dataset, propensity, with_at, method, protocol)
    return found


def get_params(source: str, dataset: str, propensity: str, with_at: bool,
               method: str = DEFAULT_METHOD, protocol: Protocol | str | None = None,
               tables: dict | None = None) -> tuple[HyperParams, str]:
    """Parameters of one configuration from ``source``; returns ``(params, provenance label)``.

    ``published`` holds the authors' values for MF-IPS and, for another method, the values it
    ships as :attr:`~atrec.methods.base.Method.reference_params`. Under a protocol with sets
    of its own, those (:attr:`~atrec.protocols.Protocol.param_sets`) or a parameter file.
    Several sets comma-separated (a protocol's :attr:`~atrec.protocols.Protocol.default_params`)
    are tried in order under every protocol (:func:`_chain_params`); the label names the set
    that had the values. ``tables``: a cache of loaded sets shared between calls.
    """
    proto = get_protocol(protocol)
    if "," in str(source):
        return _chain_params(chain_sets(source), dataset, propensity, with_at, method,
                             {} if tables is None else tables, proto)
    key = config_key(propensity, with_at, method)
    if not proto.shared_sets and not Path(source).is_file():
        return _protocol_params(source, dataset, key, method, proto)
    if source == PUBLISHED and method != DEFAULT_METHOD:
        table, label = method_class(method).reference_params, PUBLISHED
        if entry_key(table.get(dataset) or {}, key, base=True) is None:
            raise AtrecError(f"method '{method}' publishes no parameters for {dataset}/{key}: "
                             f"give --params {DEFAULT_PARAMS} (the default), or run "
                             f"'{tune_command_for(dataset, propensity, with_at, method)}' and "
                             f"use --params tuned")
    else:
        table, label = load_param_table(source, protocol)
    return lookup(table, dataset, key, label, method, protocol, base=source == PUBLISHED), label


def protocol_chain_lookup(sets, dataset: str, key: str, method: str,
                          protocol: Protocol) -> tuple[HyperParams, str] | None:
    """``(params, label)`` from the first of ``sets`` with values for the configuration under
    ``protocol`` (one with sets of its own), ``None`` when none has them; a set without them
    (or a tuned file not made yet) is passed over, any other error stops."""
    for source in sets:
        try:
            if Path(source).is_file():
                table, label = load_param_table(source, protocol)
                return lookup(table, dataset, key, label, method, protocol), label
            return _protocol_params(source, dataset, key, method, protocol)
        except AtrecError as exc:
            if not str(exc).startswith(("no parameters for", "no tuned parameters at")):
                raise
    return None


def protocol_shipped_file(protocol: Protocol | str) -> str:
    """The file in ``atrec/resources`` of a protocol's shipped ``tuned-atrec`` values."""
    return f"{get_protocol(protocol).name.replace('-', '_')}_tuned_params.yaml"


def _protocol_params(source: str, dataset: str, key: str, method: str,
                     protocol: Protocol) -> tuple[HyperParams, str]:
    """A named set under a protocol with sets of its own: its ``reference`` values, or the
    values ``atrec tune --protocol`` exported to its own folder (``tuned``)."""
    proto = protocol
    if source not in proto.param_sets:
        raise AtrecError(f"parameter set '{source}' does not exist under protocol '{protocol}': "
                         f"choose from {', '.join(proto.param_sets)} or give a parameter file")
    if source == TUNED:
        path = proto.tuned_params_path()
        if not path.exists():
            raise AtrecError(f"no tuned parameters at {path}: run 'atrec tune{proto.flag}' "
                             f"first, or use --params reference")
        table, label = _read_yaml(path, "tuned parameter"), f"tuned:{path}"
    elif source == TUNED_ATREC:   # shipped: atrec/resources/<protocol>_tuned_params.yaml
        ref = resources.files("atrec") / "resources" / protocol_shipped_file(protocol)
        table, label = yaml.safe_load(ref.read_text()), source
    else:   # the reference code's constants: the same in every form (base)
        table, label = proto.reference_params, source
        if entry_key(table.get(dataset) or {}, key, protocol, base=True) is None:
            table = method_reference_params(method, protocol)   # the method's own
        return lookup(table, dataset, key, label, method, protocol, base=True), label
    return lookup(table, dataset, key, label, method, protocol), label


def method_reference_params(method: str, protocol: str | None = None) -> dict:
    """``method``'s reference values under ``protocol`` (``dataset -> config key -> values``):
    its own, and for a dataset the protocol maps to a stand-in
    (:attr:`~atrec.protocols.base.Protocol.reference_from`, e.g. the binary-truth protocols'
    ``ml-100k`` -> ``yahoo``), the stand-in's."""
    own = method_class(method, protocol).reference_params
    stand_ins = get_protocol(protocol).reference_from
    return {**own, **{d: own[s] for d, s in stand_ins.items() if s in own}}
