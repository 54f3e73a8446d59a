"""The ``--seeds`` vocabulary: a count, a range or a list of seeds, bounded before any list is
built."""

from __future__ import annotations

import re

from atrec.errors import AtrecError
from atrec.limits import MAX_SEED_VALUE, MAX_SEEDS


def parse_seeds(spec: str | int) -> list[int]:
    """``20`` -> seeds 0..19; ``3-7`` -> 3..7; ``0,4,9`` -> those; mixtures of the last two.

    At most :data:`~atrec.limits.MAX_SEEDS` seeds, each at most
    :data:`~atrec.limits.MAX_SEED_VALUE`; checked before any list is built, so a huge count is
    a one-line error rather than a ``MemoryError``.
    """
    text = str(spec).strip()
    allowed = (f"give 1..{MAX_SEEDS} seeds as a count (20), a range (0-4) or a list (1,3,5), "
               f"with seed values 0..{MAX_SEED_VALUE}")
    if re.fullmatch(r"\d+", text):
        n = int(text)
        if not 1 <= n <= MAX_SEEDS:
            raise AtrecError(f"--seeds {text}: {allowed}")
        return list(range(n))
    bounds = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise AtrecError(f"--seeds {text}: {allowed}")
        bounds.append((int(m.group(1)), int(m.group(2) or m.group(1))))
    if max(hi for _, hi in bounds) > MAX_SEED_VALUE:
        raise AtrecError(f"--seeds {text}: {allowed}")
    seeds: list[int] = []
    for lo, hi in bounds:
        if hi - lo + 1 > MAX_SEEDS:
            raise AtrecError(f"--seeds {text}: {allowed}")
        seeds.extend(s for s in range(lo, hi + 1) if s not in seeds)
        if len(seeds) > MAX_SEEDS:
            raise AtrecError(f"--seeds {text}: {allowed}")
    return seeds
