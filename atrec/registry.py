"""Registries of named plug-ins: the methods and the propensity estimators atrec can run.

A registry maps a name (``mf-ips``, ``item``) to a class and remembers where it came from:
``built-in`` for atrec's own, or the distribution (``pip`` package) that provides it through an
entry point. Installed packages plug in through the entry-point groups ``atrec.methods`` and
``atrec.propensities`` (``importlib.metadata.entry_points``), the way pytest finds its plug-ins;
each entry point names a class (or a list of classes) to register.

Plug-ins are loaded once, on the first lookup. A broken plug-in (its import fails, its class
lacks a field or fails its own checks, its name clashes with a registered one) does not stop
atrec: it is left out, and the one-line reason, naming its package, is kept in
:attr:`Registry.problems`. ``atrec methods`` lists those lines, and asking for a name that a
broken plug-in would have provided gives that line as the error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

from atrec.errors import AtrecError
from atrec.names import did_you_mean, expand

BUILT_IN = "built-in"
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]*")  # "1bit-mc" starts with a digit


@dataclass(frozen=True)
class Entry:
    """One registered class: its ``name``, the class and its ``origin`` (package or built-in)."""

    name: str
    cls: type
    origin: str


class Registry:
    """Named classes of one kind, built-in first, then the entry-point group's plug-ins.

    Parameters
    ----------
    kind : str
        What the classes are, in messages (``method``).
    group : str
        The entry-point group plug-ins register under (``atrec.methods``).
    validate : callable
        ``validate(cls)`` raises ``ValueError`` (or ``TypeError``) with a message naming the
        bad field when a class breaks the contract.

    Attributes
    ----------
    problems : dict
        Entry-point name -> one-line reason, for each broken plug-in.
    """

    def __init__(self, kind: str, group: str, validate: Callable[[type], None],
                 pattern: re.Pattern = NAME_PATTERN) -> None:
        self.kind = kind
        self.pattern = pattern
        self.group = group
        self._validate = validate
        self._entries: dict[str, Entry] = {}
        self._builtins: list[Callable[[], None]] = []
        self._loaded = False
        self.problems: dict[str, str] = {}   # entry-point name -> one-line reason

    def builtins(self, loader: Callable[[], None]) -> None:
        """Run ``loader`` (which registers the built-in classes) before the first lookup."""
        self._builtins.append(loader)

    def register(self, cls: type, origin: str = BUILT_IN) -> type:
        """Add a class under its ``name``; usable as a class decorator.

        Parameters
        ----------
        cls : type
            The class; its ``name`` must be lowercase letters, digits and ``-``.
        origin : str, optional
            Where it comes from: :data:`BUILT_IN` or the providing package's name.

        Returns
        -------
        type
            ``cls`` itself.

        Raises
        ------
        ValueError
            For a class that breaks the contract or whose name is taken.
        """
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not self.pattern.fullmatch(name):
            allowed = "'-'" if self.pattern is NAME_PATTERN else "'_'"
            raise ValueError(f"{self.kind} class {getattr(cls, '__name__', cls)!r} needs a "
                             f"'name' of lowercase letters, digits and {allowed}, got {name!r}")
        self._validate(cls)
        if name in self._entries:
            other = self._entries[name].origin
            raise ValueError(f"{self.kind} name '{name}' is already registered by {other}")
        self._entries[name] = Entry(name, cls, origin)
        return cls

    def unregister(self, name: str) -> None:
        """Remove ``name`` (for tests and for packages that replace their own classes)."""
        self._entries.pop(name, None)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for loader in self._builtins:
            loader()
        for ep in metadata.entry_points(group=self.group):
            package = ep.dist.name if ep.dist is not None else ep.value.split(":")[0]
            try:
                loaded = ep.load()
                classes = loaded if isinstance(loaded, (list, tuple)) else [loaded]
                for cls in classes:
                    self.register(cls, origin=package)
            except Exception as exc:  # a plug-in must not break atrec: keep one line instead
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                self.problems[ep.name] = (f"{self.kind} plug-in '{ep.name}' from package "
                                          f"'{package}' is broken ({type(exc).__name__}: "
                                          f"{reason}); fix or uninstall '{package}'")

    def entries(self) -> list[Entry]:
        """Every registered entry, built-in first, in registration order.

        Returns
        -------
        list of Entry
            Loading the plug-ins on the first call.
        """
        self._load()
        return list(self._entries.values())

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(e.name for e in self.entries())

    def entry(self, name: str) -> Entry:
        """The entry registered under a name.

        Parameters
        ----------
        name : str
            A registered name.

        Returns
        -------
        Entry

        Raises
        ------
        AtrecError
            For an unknown name (listing the choices), or the broken plug-in's line when a
            broken plug-in would have provided it.
        """
        self._load()
        if name in self._entries:
            return self._entries[name]
        if name in self.problems:
            raise AtrecError(self.problems[name])
        raise AtrecError(f"unknown {self.kind} '{name}': choose from {', '.join(self.names())}"
                         f" ('atrec methods' lists them){did_you_mean(name, self.names())}")

    def expand(self, values, allowed: tuple[str, ...] | None = None,
               every: tuple[str, ...] | None = None) -> list[str]:
        """Option values as registered names.

        Parameters
        ----------
        values : iterable of str
            Option values, each possibly comma-separated; ``all`` stands for ``every``.
        allowed : tuple of str, optional
            The names accepted (default: every registered one).
        every : tuple of str, optional
            What ``all`` means (default: ``allowed``).

        Returns
        -------
        list of str
            The names, in order, without repeats.

        Raises
        ------
        AtrecError
            For an unknown name: the broken plug-in's line when a broken plug-in would have
            provided it (:meth:`entry`), else the list of choices.
        """
        allowed = self.names() if allowed is None else allowed
        for value in values:
            for part in str(value).split(","):
                part = part.strip().lower()
                if part and part != "all" and part not in allowed and part in self.problems:
                    self.entry(part)
        return expand(values, allowed, self.kind, every)

    def get(self, name: str) -> type:
        """The class registered under ``name``; raises as :meth:`entry` does."""
        return self.entry(name).cls
