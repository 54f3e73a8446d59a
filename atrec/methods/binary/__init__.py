"""Methods of the binary protocols (docs/protocols.md, "The binary methods"), trained in epochs on
binary labels (:mod:`atrec.methods.binary.base`)."""
