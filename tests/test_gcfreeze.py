"""The commands freeze TensorFlow's objects for the garbage collector; the library alone does
not (atrec.runtime.gcfreeze)."""

import gc
import subprocess
import sys

from atrec.runtime import gcfreeze

# a fresh process that imports TensorFlow as atrec's training calls do, after the console entry
# point ran a command or without one; it prints how many objects the collector skips
CODE = """
import gc, sys
if sys.argv[1] == "command":
    from atrec.cli import main
    try:
        main(["methods"])      # lists the methods: imports no TensorFlow
    except SystemExit:
        pass
    assert "tensorflow" not in sys.modules
from atrec.runtime.tfquiet import import_tensorflow
import_tensorflow()
print(gc.get_freeze_count())
"""


def frozen_after_import(how: str) -> int:
    out = subprocess.run([sys.executable, "-c", CODE, how], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.split()[-1])


def test_a_command_freezes_tensorflows_objects_and_the_library_alone_does_not():
    assert frozen_after_import("library") == 0
    # TensorFlow's import alone leaves about 265,000 tracked objects
    assert frozen_after_import("command") > 100_000


def test_a_request_after_the_import_freezes_at_once(monkeypatch):
    from atrec.runtime.tfquiet import import_tensorflow

    import_tensorflow()
    monkeypatch.setattr(gcfreeze, "_requested", False)
    gc.unfreeze()
    try:
        gcfreeze.after_import()
        assert gc.get_freeze_count() == 0          # not requested: nothing frozen
        gcfreeze.request()
        assert gc.get_freeze_count() > 100_000
    finally:
        gc.freeze()                                 # as the suite's processes run
