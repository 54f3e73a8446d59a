"""Methods of the binary protocols (PROTOCOLS.md section 4), trained in epochs on binary labels
(:mod:`atrec.methods.binary.base`)."""
