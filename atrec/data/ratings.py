"""Canonical ratings: parallel columns ``user``, ``item``, ``rating`` with 0-based ids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ratings:
    """A set of explicit ratings as three parallel 1-D arrays of equal length ``n``.

    ``user`` (int32) and ``item`` (int32) are 0-based ids, ``rating`` (int8) is in 1..5.
    Row order is meaningful: it is the order of the source file (Coat: row-major order of the
    non-zero matrix cells), which the seeded splits permute.
    """

    user: np.ndarray
    item: np.ndarray
    rating: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.user)
        if len(self.item) != n or len(self.rating) != n:
            raise ValueError(
                f"user, item and rating must have equal lengths, got "
                f"{len(self.user)}, {len(self.item)}, {len(self.rating)}"
            )

    def __len__(self) -> int:
        return len(self.user)

    def take(self, index: np.ndarray) -> "Ratings":
        """The ratings at positions ``index`` (shape ``(k,)``), in that order."""
        return Ratings(self.user[index], self.item[index], self.rating[index])

    @classmethod
    def from_arrays(cls, user, item, rating) -> "Ratings":
        """Build from any array-likes, casting to the canonical dtypes."""
        return cls(
            np.asarray(user, dtype=np.int32),
            np.asarray(item, dtype=np.int32),
            np.asarray(rating, dtype=np.int8),
        )

    def histogram(self) -> np.ndarray:
        """Counts of ratings 1..5, shape ``(5,)``."""
        return np.bincount(self.rating.astype(np.int64), minlength=6)[1:6]


@dataclass(frozen=True)
class RatingData:
    """One preprocessed dataset: the MNAR training part and the MCAR test part.

    ``num_users`` / ``num_items`` are ``max id + 1`` over the MNAR training part
    (PROTOCOL.md, "Indexing"); every test id is below them. ``checksums`` maps source file
    names to their SHA-256, for provenance.
    """

    name: str
    train: Ratings
    test: Ratings
    num_users: int
    num_items: int
    checksums: dict
