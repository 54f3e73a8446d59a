"""The report tests' shared fixtures (``root``, ``summary``, ``coat_gaps``: synthetic records,
made once per session), from :mod:`synthetic_records`."""

from synthetic_records import coat_gaps, root, summary  # noqa: F401
