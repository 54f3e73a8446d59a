"""What a run leaves behind: the per-run record store (:mod:`.records`). What it starts from,
the parameter sets, is :mod:`atrec.params`."""
