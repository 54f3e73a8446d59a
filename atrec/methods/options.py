"""A method's options: the choices that change what a method computes without being a number
to tune (a binary method's ``form``, the DR-JL family's imputation, normalisation, weighting
and block schedule).

An :class:`Option` names its values and what each means, and its default (``None``: the
protocol supplies it, as the binary protocols supply the ``form``). A method and its options
are written ``name`` or ``name[key=value,...]`` on the command line (``--option key=value``
sets them too) and ``name+key=value`` in folders, parameter-file keys, study names and
labels, the way ``published+ips`` names a deviation of the protocol: only the options that
differ from the default appear, so each distinct run has one key (:func:`method_key`). This
module imports no TensorFlow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atrec.errors import AtrecError

OPTION_SEP = "+"      # name+key=value+key=value: folders, parameter keys, labels
_KEY_VALUE = re.compile(r"([a-z][a-z0-9_]*)=([a-z0-9][a-z0-9_.:-]*)")


@dataclass(frozen=True)
class Option:
    """One option of a method.

    Attributes
    ----------
    name : str
        Its key (``form``): lowercase letters, digits and ``_``.
    values : tuple of (str, str)
        Each value and what it means, in order.
    default : str or None
        The value used when none is given; ``None``: the protocol's (a binary method's
        ``form``, :attr:`atrec.protocols.binary.EpochSettings.forms`).
    help : str
        One line: what the option chooses.
    """

    name: str
    values: tuple[tuple[str, str], ...]
    default: str | None
    help: str = ""

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.values)

    def meaning(self, value: str) -> str:
        return dict(self.values).get(value, "")

    def check(self, value: str, method: str) -> str:
        """``value`` as one of :attr:`choices`; one-line :class:`AtrecError` otherwise."""
        value = str(value).strip().lower()
        if value not in self.choices:
            raise AtrecError(f"method '{method}': option {self.name} takes "
                             f"{', '.join(self.choices)}, got '{value}'")
        return value

    def describe(self) -> str:
        """``coded|corrected (default: the protocol's)``."""
        default = "the protocol's" if self.default is None else self.default
        return f"{'|'.join(self.choices)} (default {default})"


def validate_options(cls: type) -> None:
    """``ValueError`` naming the field when a class's ``options`` break the contract: a tuple of
    :class:`Option` with unique, well-formed names and values, each default among its values."""
    options = getattr(cls, "options", ())
    if not isinstance(options, tuple) or not all(isinstance(o, Option) for o in options):
        raise ValueError(f"method class {cls.__name__}: 'options' must be a tuple of Option")
    names = [o.name for o in options]
    if len(set(names)) != len(names):
        raise ValueError(f"method class {cls.__name__}: option names must be unique, got {names}")
    for o in options:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", o.name) or not o.values:
            raise ValueError(f"method class {cls.__name__}: option {o.name!r} needs a name of "
                             f"lowercase letters, digits and '_' and at least one value")
        for value in o.choices:
            if not _KEY_VALUE.fullmatch(f"{o.name}={value}"):
                raise ValueError(f"method class {cls.__name__}: option {o.name} has a value "
                                 f"{value!r} that cannot be written in a folder name")
        if o.default is not None and o.default not in o.choices:
            raise ValueError(f"method class {cls.__name__}: option {o.name}'s default "
                             f"{o.default!r} is not among {', '.join(o.choices)}")


def split_methods(value: str) -> list[str]:
    """A ``--method`` value split at the commas outside brackets
    (``dr-jl[imputation=error,blocks=20x20],mf`` is two methods)."""
    out, depth, part = [], 0, ""
    for char in str(value):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            out.append(part)
            part = ""
        else:
            part += char
    out.append(part)
    return [p.strip() for p in out if p.strip()]


def parse_method(text: str) -> tuple[str, dict]:
    """``(name, {key: value})`` of ``name``, ``name[key=value,...]`` or ``name+key=value+...``
    (values not checked here: :func:`resolve_options`); one-line :class:`AtrecError` for a
    malformed one."""
    text = str(text).strip().lower()
    if "[" in text:
        name, _, rest = text.partition("[")
        if not rest.endswith("]"):
            raise AtrecError(f"method '{text}': close its options with ']' "
                             f"(e.g. escm2-dr[form=coded])")
        parts = [p.strip() for p in rest[:-1].split(",") if p.strip()]
    else:
        name, *parts = text.split(OPTION_SEP)
    return name.strip(), parse_assignments(parts, text)


def parse_assignments(parts, where: str) -> dict:
    """``key=value`` strings as a dict; one line naming a malformed one or a repeated key."""
    out: dict = {}
    for part in parts:
        part = str(part).strip().lower()
        match = _KEY_VALUE.fullmatch(part)
        if not match:
            raise AtrecError(f"'{part}' in '{where}' is not an option: write key=value "
                             f"(e.g. form=coded)")
        key, value = match.groups()
        if key in out and out[key] != value:
            raise AtrecError(f"option {key} given twice in '{where}' ({out[key]}, {value}): "
                             f"give it once")
        out[key] = value
    return out


def resolve_options(cls: type, given: dict, default_form: str | None = None) -> dict:
    """Every option of ``cls`` with its value: ``given`` checked (an option the method lacks is
    one line naming the ones it has), the others at their default (``default_form`` for an
    option whose default is the protocol's)."""
    options = {o.name: o for o in getattr(cls, "options", ())}
    for key in given:
        if key not in options:
            has = ", ".join(options) if options else "none"
            raise AtrecError(f"method '{cls.name}' has no option '{key}' (its options: {has}; "
                             f"'atrec methods --method {cls.name}' describes them)")
    out = {}
    for name, o in options.items():
        if name in given:
            out[name] = o.check(given[name], cls.name)
        else:
            default = o.default if o.default is not None else default_form
            if default is None:
                raise AtrecError(f"method '{cls.name}': option {name} has no default outside a "
                                 f"protocol that supplies it; give {name}=VALUE")
            out[name] = default
    return out


def method_key(cls: type, options: dict, default_form: str | None = None) -> str:
    """The key of a method with resolved ``options``: its name, then ``+key=value`` for each
    option that differs from its default (``default_form`` for the protocol's), in the order the
    method declares them. One run, one key: ``dr[form=coded]`` under ``binary-icde24`` (whose
    default form is the code's) is ``dr``."""
    parts = [cls.name]
    for o in getattr(cls, "options", ()):
        default = o.default if o.default is not None else default_form
        if options.get(o.name, default) != default:
            parts.append(f"{o.name}={options[o.name]}")
    return OPTION_SEP.join(parts)


def options_label(label: str, options: dict, defaults: dict) -> str:
    """A table label naming the options that differ from ``defaults``: ``DR (form=coded)``."""
    changed = [f"{k}={v}" for k, v in options.items() if defaults.get(k) != v]
    return f"{label} ({', '.join(changed)})" if changed else label


def option_cases(cls: type) -> list[dict]:
    """The option values a conformance check runs a class with, each distinct run once: every
    value of an option whose default is the protocol's (a binary method's ``form``: each form
    under each protocol), then each other option's values that are not its default, one option
    at a time (the rest at their defaults). ``[{}]`` for a class without options."""
    options = getattr(cls, "options", ())
    cases: list[dict] = [{}]
    for o in options:
        if o.default is None:
            cases = [{**c, o.name: v} for c in cases for v in o.choices]
    base = cases[0]
    for o in options:
        if o.default is not None:
            cases += [{**base, o.name: v} for v in o.choices if v != o.default]
    return cases


def case_id(options: dict) -> str:
    """A case's name in test ids and messages: ``form=coded`` (``defaults`` when empty)."""
    return ",".join(f"{k}={v}" for k, v in options.items()) or "defaults"
