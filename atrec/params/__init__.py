"""What a run starts from: the named parameter sets and parameter files.

Their names and what each holds (:mod:`.sets`), loading a set or a file and looking a
configuration up in a chain of them (:mod:`.lookup`), where a table holds a configuration under
a method's key or an old name (:mod:`.keys`), and the ``atrec tune`` commands that fill a gap
(:mod:`.hints`). The shipped sets are files in ``atrec/resources``.

Inputs, not results: they sit in the layer of the record store (:mod:`atrec.results`) but apart
from it, above :mod:`atrec.methods` (they read its reference values and hyperparameter checks).
"""
