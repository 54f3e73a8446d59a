"""Where a parameter table holds a configuration: under its key (``<method key>/<propensity>``,
options included: ``dr-jl+blocks=20x20/item``) or, for files written before methods had
options, under a name the method had (``dr-jl-blocks/item``), so that every user's parameter
files keep working."""

from __future__ import annotations

from atrec.errors import AtrecError
from atrec.methods.registry import DEFAULT_METHOD, alias_keys, canonical, method_class
from atrec.protocols import Protocol


def _known_method(text: str, protocol: Protocol | str | None) -> bool:
    """Whether a parameter key's method part names a method (a name, a key with options or an
    alias) of ``protocol``."""
    try:
        method_class(text, protocol)
    except AtrecError:
        return False
    return True


def entry_key(section: dict, key: str, protocol: Protocol | str | None = None,
              base: bool = False) -> str | None:
    """The key under which ``section`` holds the configuration ``key``
    (``<method key>/<propensity>[-at]``): the key itself, or the same run under a name its
    method had before options (``dr-jl-blocks/item`` for ``dr-jl+blocks=20x20/item``); with
    ``base`` (the code's constants, the same in every form) the method's name without options.
    ``None`` when it holds none."""
    if not isinstance(section, dict):
        return None
    if key in section:
        return key
    method, _, rest = key.rpartition("/")
    if not method:
        return None
    try:
        key_of_run = canonical(method, protocol)
        names = [key_of_run, *alias_keys(key_of_run, protocol)]
        if base:
            names.append(method_class(method, protocol).name)
    except AtrecError:
        return None
    for name in names:
        other = rest if name == DEFAULT_METHOD else f"{name}/{rest}"
        if section.get(other) is not None:
            return other
    return None
