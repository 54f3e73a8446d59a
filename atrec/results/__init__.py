"""What a run leaves behind and what it starts from: the per-run record store
(:mod:`.records`) and the named parameter sets (:mod:`.params`)."""
