"""What a run leaves behind: the per-run record store (:mod:`.records`), and what a tuning on
several splits leaves (:mod:`.tuning_spread`). What it starts from, the parameter sets, is
:mod:`atrec.params`."""
