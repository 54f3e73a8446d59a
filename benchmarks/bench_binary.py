"""Speed of the binary protocol's methods, end to end, against the reference code's cost.

    python benchmarks/bench_binary.py                    # every case
    python benchmarks/bench_binary.py coat:mf coat:mf-ips  # some cases

A case ``<data>:<method>`` times the whole command

    atrec train --protocol binary-icde24 --params reference --method <method> --dataset <d> --seeds 20 --without-at

in a fresh process with an empty results folder (so nothing is reused): start-up, data loading
and tracing included. Each case has its own compilation cache (``ATREC_COMPILE_CACHE``), empty
at its start, so a figure never depends on what ran on the machine before. On Coat, where
compiling the loops is a third of a run, the command runs twice: the first run (compiling, a
user's first command) is printed as ``first``, and the figures and ratios are the second's (the
loops loaded from the cache, as every later command finds them). At Yahoo's size, where
compiling is a few seconds of minutes, the case runs once, compilation included. Data: ``coat``
(the shared copy) and ``yahoo-size`` (the Yahoo-size synthetic data of
``atrec.data.synthetic.YAHOO_SIZE`` installed as the ``yahoo`` store, trained with Yahoo's
reference values). Methods: on Coat, every binary method in its ``binary-icde24`` form (the
other form is the same code path with another weighting); at Yahoo's size,
where one case takes minutes, MF, IPS (``mf-ips``) and DR-JL (``dr-jl``) by default, any other
as a case given on the command line.

For a method other than MF the case then times MF the same way at the method's embedding size
(MF's reference values with ``dim`` replaced, from a parameter file), and prints ``x MF``, the
method's CPU over that MF's: issue 34 asks each method to stay within 3x of MF.

Beside each figure: the reference code's cost for 20 runs and ``x faster`` = that CPU / atrec's
CPU for the 20 seeds. With ``ATREC_REFERENCE_CODE`` set to a runnable copy of the reference
scripts (``reference_code.py`` says what that takes), the method's script is timed on this
machine, on the same data, so both figures come from the same cores (three runs by default:
the mean, and the speed-up against the fastest and the slowest run too); otherwise, on Coat, the
CPU per run that issue 33 ("Speed") gives for ``MF.py`` (about 6 s) and DR-JL's (about 9 s),
measured on another machine, and for any other case none. Figures to read, never asserted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import reference_code
from _shared import (
    SHARED,
    install_yahoo_size,
    machine,
    run_cases,
    run_child,
    scratch_folders,
)

SEEDS = 20
YAHOO_METHODS = ("mf", "mf-ips", "dr-jl")
DATA = {"coat": "coat", "yahoo-size": "yahoo"}   # case name -> the --dataset it trains
# the reference scripts' CPU seconds per run on Coat that issue 33 ("Speed") gives, measured on
# another machine: printed when ATREC_REFERENCE_CODE does not let the bench time them here
REFERENCE_CPU_PER_RUN = {"mf": 6.0, "dr-jl": 9.0}


def _cases() -> list[str]:
    from atrec.methods.registry import registry_for

    names = list(registry_for("binary-icde24").names())
    return ([f"coat:{m}" for m in names]
            + [f"yahoo-size:{m}" for m in YAHOO_METHODS if m in names])


def _mf_at_dim(folder: Path, dataset: str, method: str) -> tuple[Path, int] | None:
    """A parameter file holding MF's reference values on ``dataset`` with the embedding size
    of ``method``'s (``None`` for MF itself), and that size."""
    import yaml

    from atrec.names import NO_PROPENSITY
    from atrec.params.lookup import REFERENCE, get_params

    if method == "mf":
        return None
    dim = get_params(REFERENCE, dataset, NO_PROPENSITY, False, method, "binary-icde24",
                     {})[0].dim
    mf = get_params(REFERENCE, dataset, NO_PROPENSITY, False, "mf", "binary-icde24", {})[0]
    values = {"dim": dim, "lam": mf.lam, **dict(mf.extra)}
    path = folder / "mf-at-dim.yaml"
    path.write_text(yaml.safe_dump({dataset: {f"mf/{NO_PROPENSITY}": values}}))
    return path, dim


def _train(dataset: str, method: str, params: str, new) -> tuple:
    """The 20 seeds' command in a fresh process, with an empty results folder and a new, empty
    compilation cache: ``(run, first)``, where on Coat ``first`` is that compiling run and
    ``run`` the same command again with the cache it filled, and at Yahoo's size ``first`` is
    ``None`` and ``run`` the one compiling run."""
    argv = [sys.executable, "-m", "atrec", "train", "--protocol", "binary-icde24",
            "--params", params, "--method", method, "--dataset", dataset,
            "--seeds", str(SEEDS), "--quiet", "--without-at"]
    cache = new("xla")

    def once():
        return run_child(argv, dict(os.environ, ATREC_RESULTS_DIR=str(new("results")),
                                    ATREC_COMPILE_CACHE=str(cache)))

    first = once()
    if dataset != "coat":
        return first, None
    return once(), first


def _install(folder: Path, data: str) -> None:
    """``folder`` as ``ATREC_DATA_DIR`` holding the case's data only."""
    from atrec.data.download import download
    from atrec.data.preprocess import preprocess

    os.environ["ATREC_DATA_DIR"] = str(folder)
    if data == "coat":
        download("coat", source=SHARED / "coat", quiet=True)
        preprocess("coat", quiet=True)
    else:
        install_yahoo_size()


def _against_script(cpu: list[float], script: str, atrec_cpu: float) -> str:
    """The script's runs here and the speed-up of atrec's ``atrec_cpu`` for the 20 seeds over
    20 runs of the script: on the runs' mean, and with several runs, on the fastest and the
    slowest, since one script's runs vary by up to a third on the same data."""
    mean = sum(cpu) / len(cpu)
    text = f"{script} here: {mean:.1f} s CPU per run (mean of {len(cpu)}"
    if len(cpu) > 1:
        text += f", {min(cpu):.1f}-{max(cpu):.1f}"
    text += f"), ~{mean * SEEDS:.0f} s for {SEEDS} runs, {mean * SEEDS / atrec_cpu:.1f}x faster"
    if len(cpu) > 1:
        text += f" ({min(cpu) * SEEDS / atrec_cpu:.1f}-{max(cpu) * SEEDS / atrec_cpu:.1f}x)"
    return text


def run_case(case: str) -> None:
    data, _, method = case.partition(":")
    if data not in DATA or not method:
        sys.exit(f"unknown case '{case}': give <data>:<method>, data one of {', '.join(DATA)}")
    message = reference_code.problem()
    if message:
        sys.exit(message)
    with scratch_folders("atrec-bench-binary") as new:
        _install(new("data"), data)
        run, first = _train(DATA[data], method, "reference", new)
        mf = _mf_at_dim(new("params"), DATA[data], method)
        mf_run, mf_first = _train(DATA[data], "mf", str(mf[0]), new) if mf else (None, None)
    line = (f"{case:22s} wall {run.wall:7.1f} s  cpu {run.cpu_s:7.1f} s  "
            f"({run.cpu_s / SEEDS:5.2f} s CPU per seed)  peak {run.peak_mb:6.0f} MB")
    if first is not None:
        line += f"  (first {first.cpu_s:.1f} s CPU, compiling)"
    measured = reference_code.cpu_per_run(method, DATA[data])
    if isinstance(measured, str):
        line += f"  | reference code: no figure, {measured}"
    elif measured is not None:
        line += "  | " + _against_script(*measured, run.cpu_s)
    elif data == "coat" and method in REFERENCE_CPU_PER_RUN:
        ref = REFERENCE_CPU_PER_RUN[method]
        line += (f"  | reference code (the issue's figure, another machine): ~{ref * SEEDS:.0f}"
                 f" s CPU for {SEEDS} runs, {ref * SEEDS / run.cpu_s:.1f}x faster")
    if mf_run is not None:
        line += (f"  | MF at dim {mf[1]}: {mf_run.cpu_s:.1f} s CPU, "
                 f"{run.cpu_s / mf_run.cpu_s:.1f}x MF")
    codes = [("", run), ("first ", first), ("MF ", mf_run), ("MF first ", mf_first)]
    failed = [f"{name}{r.code}" for name, r in codes if r is not None and r.code]
    if failed:
        line += f"  (exit {', '.join(failed)})"
    print(line, flush=True)


if __name__ == "__main__":
    run_cases(__file__, sys.argv[1:], _cases(),
              f"binary-icde24, {SEEDS} seeds per command, on {machine()}", run_case)
