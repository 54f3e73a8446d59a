"""``atrec reproduce --binary`` (``BINARY=1 make reproduce``): every registered binary method
in each of its forms under both binary protocols on every dataset there is, then the
protocol-gap report.

:func:`plan_binary` says what runs, without training anything: per protocol of
:data:`~atrec.reporting.protocol_gap.GAP_PROTOCOLS`, per dataset, every method in each form
(:func:`~atrec.methods.registry.every_form`) grouped by the parameter set they train with, the
one :mod:`atrec.reporting.protocol_gap` reads:

* ``binary-icde24``: ``reference`` (the reference code's values), each protocol's
  :data:`~atrec.reporting.protocol_gap.GAP_PARAMS`;
* ``binary-clean``: the first of its sets in ``train``'s default order that has values for the
  method on that dataset: atrec's shipped ``tuned-atrec``, then ``reference``, then the user's
  ``tuned`` (nothing is tuned here: tuning every method is a study of its own,
  ``atrec tune --protocol binary-clean --method all``).

So the route trains the values the README's protocol-gap figures come from, and the report
reads the records it trains. Each protocol runs its own number of seeds (``binary-icde24`` 10,
``binary-clean`` 20: :attr:`~atrec.protocols.Protocol.seeds`, as the README's figures), fewer
when the caller asks for fewer (:func:`binary_seeds`).

A method without values for a dataset in either set is left out with a notice.
:func:`plan_gap_steps` adds the runs between the two protocols that split the gap into its parts
(:data:`~atrec.reporting.protocol_gap.STEPS`: ``binary-icde24-cleantest``,
``binary-clean-icde24rule`` and ``binary-clean``, all at ``reference``, every form, the chain's
10 seeds).
:func:`train_binary` trains the plans (resumable: finished seeds are reused) and
:func:`write_gap_report` writes ``<results>/protocol_gap.md`` and its figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from atrec.errors import AtrecError
from atrec.experiments.training import TrainRequest, train
from atrec.fileio import atomic_write_text
from atrec.methods.registry import every_form
from atrec.names import NO_PROPENSITY
from atrec.paths import results_dir
from atrec.protocols import get_protocol
from atrec.reporting.protocol_gap import GAP_PARAMS, GAP_PROTOCOLS, STEP_SEEDS, STEPS
from atrec.reporting.protocol_gap_report import gap_reports
from atrec.params.lookup import chain_sets, get_params

GAP_FILE = "protocol_gap.md"


@dataclass(frozen=True)
class BinaryPlan:
    """One ``atrec train`` of the binary stage: ``methods`` under ``protocol`` on ``dataset``
    with the parameter set ``params``; ``seeds``: at most that many (``None``: the
    protocol's own)."""

    protocol: str
    dataset: str
    params: str
    methods: tuple[str, ...]
    seeds: int | None = None


def _params_set(protocol: str, dataset: str, method: str, tables: dict) -> str | None:
    """The first set of ``protocol``'s preference (module doc) that holds values for
    ``method`` on ``dataset``, read as ``atrec train`` reads it; ``None`` when none does."""
    for name in chain_sets(GAP_PARAMS[protocol]):
        try:
            get_params(name, dataset, NO_PROPENSITY, False, method, protocol, tables)
        except AtrecError:
            continue
        return name
    return None


def plan_binary(datasets: Sequence[str], methods: Sequence[str] | None = None
                ) -> tuple[list[BinaryPlan], list[str]]:
    """The plans (module doc) and a notice per method left out; ``methods`` default: every
    registered binary method in each of its forms."""
    plans, notices = [], []
    for protocol in GAP_PROTOCOLS:
        names = list(methods) if methods else every_form(protocol)
        tables: dict = {}
        for dataset in datasets:
            groups: dict[str, list[str]] = {}
            for name in names:
                params = _params_set(protocol, dataset, name, tables)
                if params is not None:
                    groups.setdefault(params, []).append(name)
                else:
                    notices.append(f"{name} left out under {protocol} on {dataset}: no "
                                   f"reference or tuned values for it")
            plans += [BinaryPlan(protocol, dataset, params, tuple(group))
                      for params, group in groups.items()]
    return plans, notices


def plan_gap_steps(datasets: Sequence[str]) -> list[BinaryPlan]:
    """The chain's runs (module doc): per step and dataset, every method in each form that has
    ``reference`` values there, at most :data:`STEP_SEEDS` seeds."""
    plans = []
    for protocol, params in STEPS.values():
        tables: dict = {}
        for dataset in datasets:
            names = []
            for name in every_form(protocol):
                try:
                    get_params(params, dataset, NO_PROPENSITY, False, name, protocol, tables)
                except AtrecError:
                    continue
                names.append(name)
            if names:
                plans.append(BinaryPlan(protocol, dataset, params, tuple(names), STEP_SEEDS))
    return plans


def binary_seeds(protocol: str, seeds: int | None = None) -> int:
    """The seeds the route runs under ``protocol``: its own (:attr:`Protocol.seeds`), or
    ``seeds`` when fewer."""
    own = get_protocol(protocol).seeds
    return own if seeds is None else min(seeds, own)


def train_binary(plans: Sequence[BinaryPlan], seeds: int | None = None,
                 progress: Callable[[str], None] | None = None) -> list:
    """Train seeds 0..n-1 of every plan, n = :func:`binary_seeds` of its protocol; returns the
    :class:`~atrec.experiments.groups.ConfigOutcome` list."""
    outcomes = []
    for plan in plans:
        n = binary_seeds(plan.protocol, seeds)
        n = n if plan.seeds is None else min(n, plan.seeds)
        outcomes += train(TrainRequest([plan.dataset], [NO_PROPENSITY], [False],
                                       list(range(n)), params=plan.params,
                                       methods=list(plan.methods), protocol=plan.protocol),
                          echo=progress)
    return outcomes


def write_gap_report(datasets: Sequence[str], seeds: int | None = None,
                     root: Path | None = None) -> tuple[Path, list[Path], list[str]]:
    """Write the protocol-gap report of ``datasets`` (markdown) to ``<root>/protocol_gap.md``
    and its figures under ``<root>/figures``; returns ``(path, figures, notices)``. Datasets
    without binary results are left out with a notice. ``seeds``: as :func:`train_binary`'s
    (each protocol's own when it asks for no fewer)."""
    base = results_dir() if root is None else Path(root)
    fewer = seeds is not None and any(binary_seeds(p, seeds) < get_protocol(p).seeds
                                      for p in GAP_PROTOCOLS)
    parts, figures, notices = [], [], []
    for dataset in datasets:
        try:
            outs = gap_reports([dataset], "markdown", True, seeds if fewer else None, root=base)
        except AtrecError as exc:
            if exc.exit_code != 3:
                raise
            notices.append(str(exc))
            continue
        for out in outs:
            parts.append(out.text)
            figures += out.figures
            notices += out.notices
    path = base / GAP_FILE
    atomic_write_text(path, "\n\n".join(parts or ["(no binary results)"]) + "\n")
    return path, figures, notices
