"""Speed and memory of the data layer, printed (no assertions: figures to read).

    python benchmarks/bench_data.py

Measures: the Yahoo-size synthetic generator; parsing a Yahoo-size triples file (written from a
synthetic dataset in Yahoo's format, in a temporary folder); preprocessing and re-loading Coat
and ML-100K from the shared copies (``ATREC_SHARED_DATA`` or ``../shared/data``). Peak memory is
what tracemalloc sees (numpy reports its buffers to it), in a second run.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from atrec.data.download import download  # noqa: E402
from atrec.data.preprocess import load_processed, parse_triples, preprocess  # noqa: E402
from atrec.data.synthetic import YAHOO_SIZE, make_synthetic  # noqa: E402

SHARED = Path(os.environ.get("ATREC_SHARED_DATA")
              or Path(__file__).resolve().parents[2] / "shared" / "data")


def measure(label: str, func):
    """Run ``func()`` twice: timed, then under tracemalloc (which slows Python allocations) for
    the peak memory. Print both; return the result."""
    start = time.perf_counter()
    func()
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    result = func()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"{label:<44} {elapsed:8.2f} s   peak {peak / 2**20:8.1f} MiB")
    return result


def main() -> None:
    synth = measure("make_synthetic(**YAHOO_SIZE)", lambda: make_synthetic(**YAHOO_SIZE, seed=0))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        train = synth.data.train
        table = np.c_[train.user + 1, train.item + 1, train.rating]
        np.savetxt(path, table, fmt="%d", delimiter="\t")
        measure(f"parse_triples ({len(train):,} rows)", lambda: parse_triples(path, 3))
        os.environ["ATREC_DATA_DIR"] = str(Path(tmp) / "data")
        for name in ("coat", "ml-100k"):
            download(name, source=SHARED / name, quiet=True)
            measure(f"preprocess {name}", lambda: preprocess(name, quiet=True))
            measure(f"load_processed {name}", lambda: load_processed(name))


if __name__ == "__main__":
    main()
