"""What the conformance checks share: the small data set they fit on and how a sequence of
named checks reports the first one that fails."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence

from atrec.data.ratings import RatingData
from atrec.data.synthetic import make_synthetic
from atrec.registry import Registry


@functools.cache
def small_data() -> RatingData:
    """A small MNAR data set from atrec's synthetic generator: 60 users x 40 items, 600
    training and 240 MCAR test ratings, seed 0 (made once per process)."""
    return make_synthetic(num_users=60, num_items=40, n_train=600, n_test_users=30,
                          test_per_user=8, dim=3, seed=0, name="small").data


@contextlib.contextmanager
def registered(registry: Registry, cls: type):
    """``cls`` in ``registry`` for the block (atrec's runner finds classes by name): registered
    for the block when it is not, left alone when it is; an ``AssertionError`` when another
    class holds its name."""
    entry = registry.entry(cls.name) if cls.name in registry.names() else None
    if entry is not None and entry.cls is not cls:
        raise AssertionError(f"the {registry.kind} name '{cls.name}' is registered by another "
                             f"class ({entry.cls.__module__}.{entry.cls.__qualname__})")
    if entry is None:
        registry.register(cls, origin="atrec.testing")
    try:
        yield
    finally:
        if entry is None:
            registry.unregister(cls.name)


def check_declarations(cls: type, validate: Callable[[type], None], flags: Sequence[str]) -> None:
    """What every registered class declares: it passes its registry's ``validate``, has a
    non-empty ``name``, ``label`` and ``description``, and each of ``flags`` is a bool."""
    try:
        validate(cls)
    except ValueError as exc:
        raise AssertionError(str(exc)) from None
    for text in ("name", "label", "description"):
        value = getattr(cls, text, None)
        assert isinstance(value, str) and value, f"{text}: a non-empty string, got {value!r}"
    for flag in flags:
        assert isinstance(getattr(cls, flag, None), bool), f"{flag}: True or False"


def run_checks(subject: str, checks: Sequence[tuple[str, Callable[[], None]]]) -> None:
    """Run ``checks`` (``(name, check)``) in order; the first that raises becomes an
    ``AssertionError`` naming ``subject`` and the check, with the original as its cause."""
    for name, check in checks:
        try:
            check()
        except Exception as exc:  # any failure of a check is the class's failure
            detail = str(exc).strip() or type(exc).__name__
            raise AssertionError(f"{subject} fails check '{name}': {detail}") from exc
