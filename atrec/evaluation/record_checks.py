"""The check a result record passes before a summary reads it (:func:`check_record`): a record
that is not atrec's, or is missing a field, is one line saying which and how to recompute it."""

from __future__ import annotations

from atrec.errors import AtrecError
from atrec.protocols import protocol_flag


def describe_record(record: dict) -> str:
    """``coat/item with AT seed 3``: which run a record is, for messages and notes."""
    return (f"{record.get('dataset')}/{record.get('propensity')}"
            f"{' with AT' if record.get('with_at') else ''} seed {record.get('seed')}")


def _train_again(record: dict) -> str:
    """``'atrec train'`` with the ``--protocol`` the record was made under, if not the default."""
    block = record.get("protocol")
    name = block.get("name") if isinstance(block, dict) else None
    return f"'atrec train{protocol_flag(name)}'"


def check_record(record: dict) -> None:
    """One-line :class:`AtrecError` for a record a summary cannot read: not an object, a field
    missing, malformed metrics; each says to delete it and which train command recomputes it."""
    if not isinstance(record, dict):
        raise AtrecError("a result record is not a JSON object: delete the files under "
                         "<results>/runs that atrec did not write, or rerun 'atrec train'")
    for key in ("dataset", "propensity", "with_at", "seed", "params_source", "metrics"):
        if key not in record:
            raise AtrecError(
                f"result record of {describe_record(record)} lacks {key!r}: delete it and rerun "
                f"{_train_again(record)} to recompute it"
            )
    if not isinstance(record["metrics"], dict):
        raise AtrecError(f"result record of {describe_record(record)} has malformed 'metrics': delete "
                         f"it and rerun {_train_again(record)} to recompute it")
