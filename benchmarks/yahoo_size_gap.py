"""The protocol gap on Yahoo-size synthetic data (not a speed benchmark; ``make bench`` does not
run it). Yahoo! R3 cannot be shipped, so this is the Yahoo-size half of the README's "protocol
gap":

    python benchmarks/yahoo_size_gap.py [--tune M1,M2] [--methods M1,M2,...] [FOLDER]

In FOLDER (default: a new temporary folder) it installs the Yahoo-size synthetic data
(:data:`atrec.data.synthetic.YAHOO_SIZE`, seed 0) as the processed ``yahoo`` store, then runs
atrec's own commands, each printed before it runs:

1. with ``--tune``: ``atrec tune --protocol binary-clean`` of those methods on these data
   (atrec's budget, 50 trials each, the first at the reference values);
2. ``atrec train --protocol binary-icde24 --params reference`` of ``--methods`` (default: MF,
   IPS and DR-JL), 20 seeds (``atrec train``'s default);
3. ``atrec train --protocol binary-clean`` of the same, 20 seeds: ``--params tuned`` for the
   tuned methods, ``reference`` for the others (the ICDE 2024 code's Yahoo values, chosen
   without a validation split);
4. ``atrec report --table protocol-gap --dataset yahoo``.

The tuned values are for the synthetic data and stay in FOLDER's results; they are not
``tuned-atrec``'s Yahoo values. A rerun with the same FOLDER resumes where it stopped.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _shared import run_on_yahoo_size  # noqa: E402

DEFAULT_METHODS = "mf,mf-ips,dr-jl"
DATA = ["--dataset", "yahoo", "--quiet", "--without-at"]   # the methods alone


def commands(methods: list[str], tuned: list[str]) -> list[list[str]]:
    """The atrec commands of the module doc, in order."""
    out = []
    if tuned:
        out.append(["tune", "--protocol", "binary-clean", "--method", ",".join(tuned), *DATA])
    out.append(["train", "--protocol", "binary-icde24", "--params", "reference",
                "--method", ",".join(methods), *DATA])
    untuned = [m for m in methods if m not in tuned]
    for params, group in (("tuned", [m for m in methods if m in tuned]), ("reference", untuned)):
        if group:
            out.append(["train", "--protocol", "binary-clean", "--params", params,
                        "--method", ",".join(group), *DATA])
    out.append(["report", "--table", "protocol-gap", "--dataset", "yahoo",
                "--format", "markdown"])
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--methods", default=DEFAULT_METHODS)
    parser.add_argument("--tune", default="")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    tuned = [m for m in args.tune.split(",") if m]
    methods += [m for m in tuned if m not in methods]
    return run_on_yahoo_size(args.folder, "atrec-ys-gap-", commands(methods, tuned))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
