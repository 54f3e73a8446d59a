"""Workflows that chain the library's stages: ``atrec reproduce`` (:mod:`.pipeline`) and the
ML-100K variance experiment of Figure 2 (:mod:`.variance`), which tune, train and report."""
