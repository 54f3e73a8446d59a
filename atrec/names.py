"""The shared vocabulary: dataset names, propensity names and configuration keys."""

from __future__ import annotations

from atrec.errors import AtrecError

DATASETS = ("coat", "yahoo", "ml-100k")
TABLE_DATASETS = ("yahoo", "coat")  # the datasets of Table 1, in the paper's row order
PROPENSITIES = ("uniform", "user", "item", "user-item", "nb-uniform", "nb-true")
PROPENSITY_LABELS = {
    "uniform": "uniform",
    "user": "user",
    "item": "item",
    "user-item": "user-item",
    "nb-uniform": "NB (uniform)",
    "nb-true": "NB (true)",
}


def config_key(propensity: str, with_at: bool) -> str:
    """Key of one configuration, e.g. ``item`` or ``item-at``."""
    return f"{propensity}-at" if with_at else propensity


def expand(values: tuple[str, ...] | list[str], allowed: tuple[str, ...], what: str) -> list[str]:
    """Expand option values (each may be comma-separated, or ``all``) into known names.

    Raises :class:`AtrecError` naming the unknown value and listing the allowed ones.
    """
    out: list[str] = []
    for value in values:
        for part in str(value).split(","):
            part = part.strip().lower()
            if not part:
                continue
            if part == "all":
                names = list(allowed)
            elif part in allowed:
                names = [part]
            else:
                raise AtrecError(
                    f"unknown {what} '{part}': choose from {', '.join(allowed)} or 'all'"
                )
            out.extend(n for n in names if n not in out)
    return out
