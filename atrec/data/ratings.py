"""Canonical ratings: parallel columns ``user``, ``item``, ``rating`` with 0-based ids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ratings:
    """A set of explicit ratings as three parallel 1-D arrays of equal length ``n``.

    Row order is meaningful: it is the order of the source file (Coat: row-major order of the
    non-zero matrix cells), which the seeded splits permute.

    Attributes
    ----------
    user : numpy.ndarray
        int32 ``(n,)``, 0-based user ids.
    item : numpy.ndarray
        int32 ``(n,)``, 0-based item ids.
    rating : numpy.ndarray
        int8 ``(n,)``, ratings in 1..5.

    Raises
    ------
    ValueError
        When the three arrays differ in length.
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
        """The ratings at some positions, in the order given.

        Parameters
        ----------
        index : numpy.ndarray
            Integer positions, shape ``(k,)``.

        Returns
        -------
        Ratings
            ``k`` ratings.
        """
        return Ratings(self.user[index], self.item[index], self.rating[index])

    @classmethod
    def from_arrays(cls, user, item, rating) -> "Ratings":
        """Build from any array-likes, casting to the canonical dtypes.

        Parameters
        ----------
        user, item, rating : array_like
            Parallel 1-D sequences of 0-based user ids, 0-based item ids and ratings 1..5.

        Returns
        -------
        Ratings
            The columns as int32, int32 and int8 arrays.
        """
        return cls(
            np.asarray(user, dtype=np.int32),
            np.asarray(item, dtype=np.int32),
            np.asarray(rating, dtype=np.int8),
        )

    def histogram(self) -> np.ndarray:
        """Counts of each rating value.

        Returns
        -------
        numpy.ndarray
            int64 ``(5,)``: the number of ratings equal to 1, 2, 3, 4 and 5.
        """
        return np.bincount(self.rating.astype(np.int64), minlength=6)[1:6]


@dataclass(frozen=True)
class RatingData:
    """One preprocessed dataset: the MNAR training part and the MCAR test part.

    Attributes
    ----------
    name : str
        The dataset (``coat``, ``yahoo``, ``ml-100k``...).
    train : Ratings
        The MNAR (self-selected) ratings.
    test : Ratings
        The MCAR (randomly selected) ratings.
    num_users, num_items : int
        ``max id + 1`` over the MNAR training part (docs/protocol.md, "Data"); every test id is
        below them.
    checksums : dict
        Source file name -> SHA-256, for provenance.
    """

    name: str
    train: Ratings
    test: Ratings
    num_users: int
    num_items: int
    checksums: dict
