"""The dataset catalogue: the datasets atrec knows, where each comes from, the files it needs.

Three datasets (docs/data.md: sources, files, checksums, licences):

* ``coat``: Schnabel et al. (ICML 2016), the Cornell ``coat.zip``; atrec needs ``train.ascii``
  and ``test.ascii`` (members ``coat/...``). Side files: ``propensities.ascii`` and the four
  ``user_item_features/`` files.
* ``ml-100k``: GroupLens MovieLens 100K, ``ml-100k.zip``; atrec needs ``u.data``. Side files:
  ``u.user`` and ``u.item``.
* ``yahoo``: Yahoo! Webscope R3. Licensed per user, so it is never downloaded: the user requests
  it from Webscope and hands it over with ``atrec download yahoo --source PATH``.

*Side files* (``DatasetSpec.side``, role ``side``) hold no ratings: user / item features and
Coat's shipped propensities, read by the feature-based propensity estimators through
:mod:`atrec.data.features`. They are optional: a download installs and verifies the ones its
source holds; the rating store and its manifest never include them, so a copy without them still
preprocesses and trains, and only the estimators that need them refuse (saying what to run).

A copy whose only difference is its line endings (CRLF versus LF) is the same data: each file
carries a second, "canonical" digest, the SHA-256 of its bytes with every CRLF replaced by LF
(checked by :mod:`atrec.data.integrity`). Fetching and installing a copy is
:mod:`atrec.data.download`; this module only describes and locates it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from atrec.errors import AtrecError
from atrec.names import DATASETS, expand
from atrec.paths import data_dir

YAHOO_TRAIN = "ydata-ymusic-rating-study-v1_0-train.txt"
YAHOO_TEST = "ydata-ymusic-rating-study-v1_0-test.txt"
WEBSCOPE_URL = "https://webscope.sandbox.yahoo.com"
WEBSCOPE_R3 = "R3 - Yahoo! Music ratings for User Selected and Randomly Selected songs"


@dataclass(frozen=True)
class FileSpec:
    """One file atrec needs from a dataset.

    ``name``: file name in ``raw/``; ``member``: its path inside the official archive;
    ``role``: ``train`` (the MNAR part), ``test`` (the MCAR part) or ``side`` (an optional
    side file: features, shipped propensities); ``sha256``: digest of the
    official bytes; ``canonical_sha256``: digest of those bytes with CRLF replaced by LF (equal
    to ``sha256`` for files with LF endings); ``rows``: expected number of lines, checked before
    the digest for a clearer message (``None``: not checked).
    """

    name: str
    member: str
    role: str
    sha256: str
    canonical_sha256: str
    rows: int | None = None

    def __post_init__(self) -> None:
        if self.role not in ("train", "test", "side"):
            raise ValueError(f"role must be 'train', 'test' or 'side', got {self.role!r}")
        for digest in (self.sha256, self.canonical_sha256):
            if not re.fullmatch(r"[0-9a-f]{64}", digest):
                raise ValueError(f"not a lower-case hex SHA-256 digest: {digest!r}")
        if self.rows is not None and self.rows < 0:
            raise ValueError(f"rows must be >= 0, got {self.rows}")


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset of the registry: where it comes from and which verified files atrec needs.

    ``url`` is ``None`` when the dataset must be handed over by the user (Yahoo! R3).
    ``archive_sha256`` documents the official archive (informative; every needed file is
    verified on its own). ``licence`` is repeated to the user after a successful download.
    ``side``: optional side files (role ``side``), installed when the source holds them.
    """

    name: str
    title: str
    url: str | None
    archive_sha256: str | None
    files: tuple[FileSpec, ...]
    licence: str
    side: tuple[FileSpec, ...] = ()

    def __post_init__(self) -> None:
        if not self.files:
            raise ValueError(f"dataset {self.name!r} must list at least one file")


REGISTRY: dict[str, DatasetSpec] = {
    "coat": DatasetSpec(
        name="coat",
        title="Coat (Schnabel et al., ICML 2016)",
        url="https://www.cs.cornell.edu/~schnabts/mnar/coat.zip",
        # coat.zip, the Cornell archive (537,499 bytes).
        archive_sha256="6073d0b515ed1f6e830e4fead66dc76ad7991a7553eaa58e228b234a9d19daed",
        files=(
            # sha256 of the archive's members (CRLF endings); canonical_sha256 computed once
            # from them with every CRLF replaced by LF.
            FileSpec("train.ascii", "coat/train.ascii", "train",
                     "a87bd9e7eaf3b89f976df3f25d4aa5d5d871be8a00b58947df9e6e015559bd37",
                     "f9088c6e95fa9a42e8be6a92fc77252b95b969e34ed1299c611420da68680873",
                     rows=290),
            FileSpec("test.ascii", "coat/test.ascii", "test",
                     "de6714ab105a5e0be8166be7fd313901b29f9a09c3bea307901457d1d71847e6",
                     "51fa28550f5bedebc6959d0e7b5e242b173c3c8d16317c7e49b89441304504ce",
                     rows=290),
        ),
        licence="Coat ships without a licence file; cite Schnabel et al. (ICML 2016).",
        side=(
            # the archive's members; canonical digests computed from them with
            # CRLF replaced by LF (propensities.ascii and the maps have LF endings).
            FileSpec("propensities.ascii", "coat/propensities.ascii", "side",
                     "a72e3142a413623c4a6b9d20c4f70fcc017e0db67cc3eb242116f69fb8fb9661",
                     "a72e3142a413623c4a6b9d20c4f70fcc017e0db67cc3eb242116f69fb8fb9661",
                     rows=290),
            FileSpec("user_features.ascii", "coat/user_item_features/user_features.ascii", "side",
                     "d8f9531b601c54a7272602f8b21fa6cb4652cbf122e35d8615ea9645ebbf1b1f",
                     "593b59c63a3f983575d3a770b32158fdfa4e2e4f63aafffdee70d1600ff072f8",
                     rows=290),
            FileSpec("item_features.ascii", "coat/user_item_features/item_features.ascii", "side",
                     "edea8217ec5606779b4d3bf819f7591dc63bcd5194d619e8048c2322d07630b1",
                     "72b08cc0766d3e9899231aea90c815b5bb08e07dcfba569d5f182da649099f5a",
                     rows=300),
            FileSpec("user_features_map.txt", "coat/user_item_features/user_features_map.txt",
                     "side", "3b8c825ad4445d4a46a400629c5fb43c805ff5a7982b2e436b69e7262c8a013a",
                     "3b8c825ad4445d4a46a400629c5fb43c805ff5a7982b2e436b69e7262c8a013a"),
            FileSpec("item_features_map.txt", "coat/user_item_features/item_features_map.txt",
                     "side", "2675dfaa38b89a9cbb1997f0cfcd46ed7e0e366dc515d12d95508d1f356e5d25",
                     "2675dfaa38b89a9cbb1997f0cfcd46ed7e0e366dc515d12d95508d1f356e5d25"),
        ),
    ),
    "ml-100k": DatasetSpec(
        name="ml-100k",
        title="MovieLens 100K (GroupLens)",
        url="https://files.grouplens.org/datasets/movielens/ml-100k.zip",
        archive_sha256=None,
        files=(
            # the archive's member; the file has LF endings, so both digests are equal.
            FileSpec("u.data", "ml-100k/u.data", "train",
                     "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
                     "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
                     rows=100_000),
        ),
        licence="MovieLens 100K is for research use only; do not redistribute it "
                "(GroupLens README).",
        side=(
            # the archive's members; LF endings, so both digests are equal.
            FileSpec("u.user", "ml-100k/u.user", "side",
                     "f120e114da2e8cf314fd28f99417c94ae9ddf1cb6db8ce0e4b5995d40e90e62c",
                     "f120e114da2e8cf314fd28f99417c94ae9ddf1cb6db8ce0e4b5995d40e90e62c",
                     rows=943),
            FileSpec("u.item", "ml-100k/u.item", "side",
                     "553841ebc7de3a0fd0d6b62a204ea30c1e651aacfb2814c7a6584ac52f2c5701",
                     "553841ebc7de3a0fd0d6b62a204ea30c1e651aacfb2814c7a6584ac52f2c5701",
                     rows=1682),
        ),
    ),
    "yahoo": DatasetSpec(
        name="yahoo",
        title="Yahoo! R3 (Webscope ydata-ymusic-rating-study-v1_0)",
        url=None,
        # One copy of the Webscope .tgz (docs/data.md); its name varies.
        archive_sha256="403c4014248c7200b7a5e20c9f9b904584f4f921b07a16a198d94ecfc8c0c13e",
        files=(
            # measured on the original files; LF endings, so both digests are equal.
            FileSpec(YAHOO_TRAIN, f"./{YAHOO_TRAIN}", "train",
                     "85538b3c4a93eafc4f0ce2d39a6cd178e32a6b615ce775b9d635f7995706269d",
                     "85538b3c4a93eafc4f0ce2d39a6cd178e32a6b615ce775b9d635f7995706269d",
                     rows=311_704),
            FileSpec(YAHOO_TEST, f"./{YAHOO_TEST}", "test",
                     "f27a73bef8c7ccedb17576fe2d4cc52b80c2d5fa60f13529596f003ffd0d8533",
                     "f27a73bef8c7ccedb17576fe2d4cc52b80c2d5fa60f13529596f003ffd0d8533",
                     rows=54_000),
        ),
        licence="Yahoo! R3 is licensed to you alone under the Webscope Data Sharing Agreement: "
                "do not redistribute it, post it or commit it anywhere.",
    ),
}

# ``atrec download all`` / ``atrec preprocess all``: the datasets anyone can download.
PUBLIC = ("coat", "ml-100k")


def get_spec(name: str) -> DatasetSpec:
    """The registry entry of ``name``; an unknown name raises :class:`AtrecError` listing them."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise AtrecError(
            f"unknown dataset '{name}': choose from {', '.join(DATASETS)}"
        ) from None


def resolve_names(name: str) -> list[str]:
    """Dataset names of a NAME argument: one name, a comma-separated list, or ``all``.

    ``all`` means the public datasets (coat, ml-100k), plus yahoo when a raw copy of it is
    already installed (it can only be handed over by hand).
    """
    parts = [p.strip().lower() for p in str(name).split(",")]
    if "all" in parts:
        parts = [p for p in parts if p != "all"] + list(PUBLIC) + \
            [n for n in DATASETS if n not in PUBLIC and raw_present(n)]
    return expand(parts, DATASETS, "dataset")


def raw_dir(name: str) -> Path:
    """``data_dir()/NAME/raw``: where the verified source files live."""
    return data_dir() / name / "raw"


def raw_present(name: str) -> bool:
    """True when every file ``name`` needs is in its raw folder (not checked for integrity)."""
    folder = raw_dir(name)
    return all((folder / f.name).is_file() for f in get_spec(name).files)


def side_spec(name: str, file: str) -> FileSpec:
    """The side-file spec called ``file`` of dataset ``name`` (``KeyError`` when it has none)."""
    for f in get_spec(name).side:
        if f.name == file:
            return f
    raise KeyError(f"{name} has no side file {file!r}")


def yahoo_instructions() -> str:
    """How to obtain Yahoo! R3 and hand it to atrec (a few lines)."""
    return (
        "Yahoo! R3 cannot be downloaded automatically: its licence requires every user to "
        "request it.\n"
        f"  1. Request the dataset \"{WEBSCOPE_R3}\" at {WEBSCOPE_URL} and accept the Webscope "
        "Data Sharing Agreement.\n"
        "  2. Hand it over: atrec download yahoo --source PATH, where PATH is the archive you "
        f"received or a folder holding {YAHOO_TRAIN} and {YAHOO_TEST}."
    )
