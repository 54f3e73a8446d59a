"""What to run when no parameter set has values: the ``atrec tune`` commands that fill exactly
the gap, and the one-line errors that name them with the sets tried."""

from __future__ import annotations

from atrec.errors import AtrecError
from atrec.methods.registry import DEFAULT_METHOD, method_class
from atrec.names import config_key
from atrec.protocols import get_protocol
from atrec.params.sets import TUNED


def tune_command_for(dataset: str, propensity: str, with_at: bool, method: str,
                     protocol=None) -> str:
    """The ``atrec tune`` command that makes the values of one configuration (into ``tuned``)
    under ``protocol`` (a :class:`~atrec.protocols.Protocol` or a name; default saito2020)."""
    return _tune_command(dataset, [method], [propensity], with_at, protocol)


def _tune_command(dataset: str, methods, propensities, with_at: bool, protocol=None) -> str:
    parts = ["atrec tune" + get_protocol(protocol).flag]
    if list(methods) != [DEFAULT_METHOD]:
        parts.append(f"--method {','.join(methods)}")
    parts.append(f"--dataset {dataset}")
    if method_class(methods[0], protocol).uses_propensity:
        parts.append(f"--propensity {','.join(propensities)}")
    parts.append("--with-at" if with_at else "--without-at")
    return " ".join(parts)


def tune_commands_for(configs, protocol=None) -> list[str]:
    """The ``atrec tune`` commands that make the values of exactly ``configs`` (``(dataset,
    method, propensity, with_at)``, in order): one per dataset, AT option and set of
    propensities, naming every method that lacks that same set."""
    props: dict[tuple, list[str]] = {}
    for dataset, method, propensity, with_at in configs:
        props.setdefault((dataset, with_at, method), []).append(propensity)
    groups: dict[tuple, list[str]] = {}
    for (dataset, with_at, method), names in props.items():
        uses = method_class(method, protocol).uses_propensity
        groups.setdefault((dataset, with_at, uses, tuple(names) if uses else ()), []).append(method)
    return [_tune_command(dataset, methods, list(names), with_at, protocol)
            for (dataset, with_at, _, names), methods in groups.items()]


def missing_values_error(configs, sets, protocol=None) -> AtrecError:
    """The one-line error for several configurations (``(dataset, method, propensity,
    with_at)``) that no set of ``sets`` has values for: how many, the first, the sets tried and
    the ``atrec tune`` commands that fill exactly that gap."""
    if len(configs) == 1:
        dataset, method, propensity, with_at = configs[0]
        return no_values_error(sets, dataset, propensity, with_at, method, protocol)
    dataset, method, propensity, with_at = configs[0]
    commands = " then ".join(f"'{c}'" for c in tune_commands_for(configs, protocol))
    return AtrecError(f"no parameters for {len(configs)} configurations (the first "
                      f"{dataset}/{config_key(propensity, with_at, method)}) in "
                      f"{', '.join(sets)}: run {commands} (their values then come from "
                      f"{TUNED})")


def no_values_error(sets, dataset: str, propensity: str, with_at: bool,
                    method: str, protocol=None) -> AtrecError:
    """The one-line error for a configuration that no set of ``sets`` has values for: the sets
    tried and the ``atrec tune`` command that fills the gap."""
    return AtrecError(f"no parameters for {dataset}/{config_key(propensity, with_at, method)} "
                      f"in {', '.join(sets)}: run "
                      f"'{tune_command_for(dataset, propensity, with_at, method, protocol)}' (its values "
                      f"then come from {TUNED})")
