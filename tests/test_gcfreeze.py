"""The commands freeze TensorFlow's objects for the garbage collector, and pause it while
TensorFlow is imported; the library alone does neither (atrec.runtime.gcfreeze)."""

import gc
import subprocess
import sys

from atrec.runtime import gcfreeze

# a fresh process that imports TensorFlow as atrec's training calls do, after the console entry
# point ran a command or without one; it prints how many objects the collector skips
CODE = """
import gc, sys
full = []
gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 2
                    and full.append(1))
if sys.argv[1] == "command":
    from atrec.cli import main
    try:
        main(["methods"])      # lists the methods: imports no TensorFlow
    except SystemExit:
        pass
    assert "tensorflow" not in sys.modules
from atrec.runtime.tfquiet import import_tensorflow
before = len(full)
import_tensorflow()
print(gc.get_freeze_count(), len(full) - before)
"""


def import_in_a_process(how: str) -> tuple[int, int]:
    """(objects frozen, full collections during TensorFlow's import) in a fresh process."""
    out = subprocess.run([sys.executable, "-c", CODE, how], capture_output=True, text=True,
                         check=True)
    frozen, full = out.stdout.split()[-2:]
    return int(frozen), int(full)


def test_a_command_freezes_tensorflows_objects_and_the_library_alone_does_not():
    frozen, full = import_in_a_process("library")
    assert frozen == 0
    assert full > 0          # the collector ran as usual: TensorFlow's import triggers it
    frozen, full = import_in_a_process("command")
    # TensorFlow's import alone leaves about 265,000 tracked objects
    assert frozen > 100_000
    assert full == 0         # held off for the import


def test_a_request_after_the_import_freezes_at_once(monkeypatch):
    from atrec.runtime.tfquiet import import_tensorflow

    import_tensorflow()
    monkeypatch.setattr(gcfreeze, "_requested", False)
    gc.unfreeze()
    try:
        gcfreeze.request()
        assert gc.get_freeze_count() > 100_000
    finally:
        gc.freeze()                                 # as the suite's processes run


def test_full_collections_are_held_off_for_the_import_only_where_asked(monkeypatch):
    monkeypatch.setattr(gcfreeze, "_requested", False)
    gc.unfreeze()
    try:
        usual = gc.get_threshold()
        with gcfreeze.importing():
            assert gc.get_threshold() == usual
        assert gc.get_freeze_count() == 0           # not requested: nothing frozen
        monkeypatch.setattr(gcfreeze, "_requested", True)
        with gcfreeze.importing():
            assert gc.get_threshold() == usual[:2] + (gcfreeze.NO_FULL_COLLECTION,)
            kept = [[]]
        assert gc.get_threshold() == usual
        assert gc.get_freeze_count() > 0 and gc.is_tracked(kept)
        gc.unfreeze()
        try:
            with gcfreeze.importing():
                raise ImportError("no TensorFlow")
        except ImportError:
            pass
        assert gc.get_threshold() == usual and gc.get_freeze_count() == 0   # failed: nothing
    finally:
        gc.freeze()
