"""atrec's version: its one home, read by ``atrec --version``, every record's provenance and
the packaging metadata (``setup.cfg``)."""

__version__ = "0.1.0"
