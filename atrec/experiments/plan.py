"""The plan of ``atrec train`` and ``atrec run``: a selection of datasets, methods, propensities
and AT options (:class:`TrainRequest`) turned into the plan of every configuration
(:func:`plan_request`), which a local run (:func:`atrec.experiments.training.train`) and a run
on a Dask cluster (:mod:`atrec.experiments.distributed`) both train."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from atrec.data.catalogue import raw_present
from atrec.data.download import download_from_env
from atrec.data.preprocess import load_data
from atrec.data.ratings import RatingData
from atrec.experiments.groups import ConfigPlan, plan_config
from atrec.experiments.spec import RunSpec
from atrec.methods.registry import configurations
from atrec.names import DEFAULT_METHOD, config_key
from atrec.run_settings import AUTHORS_BATCH_SEED
from atrec.protocols import Protocol, get_protocol
from atrec.params.lookup import (
    DEFAULT_PARAMS,
    chain_lookup,
    chain_sets,
    get_params,
    missing_values_error,
)
from atrec.params.budget import params_budget


def ensure_data(name: str, quiet: bool = False) -> RatingData:
    """The preprocessed dataset, downloading and preprocessing it first if needed.

    A download takes its source from ``ATREC_<NAME>_SOURCE`` (e.g. ``ATREC_COAT_SOURCE``,
    ``ATREC_YAHOO_SOURCE``) when set, else the official URL (Yahoo has none: see
    ``atrec download yahoo``).
    """
    if not raw_present(name):
        download_from_env(name, quiet=quiet)
    return load_data(name)


@dataclass
class TrainRequest:
    """The selection of ``atrec train`` / ``atrec run`` (names already validated)."""

    datasets: list[str]
    propensities: list[str]
    at_options: list[bool]
    seeds: list[int]
    params: str = DEFAULT_PARAMS   # saito2020's chain; the CLI gives its protocol's
    force: bool = False
    batch_seed: int | None = AUTHORS_BATCH_SEED
    loss: str = "snips"
    download: bool = False
    methods: list[str] = field(default_factory=lambda: [DEFAULT_METHOD])
    # resolved once (a name is resolved here): the object every step below reads
    protocol: Protocol | str | None = None

    def __post_init__(self) -> None:
        self.protocol = get_protocol(self.protocol)

    def configurations(self, dataset: str | None = None) -> list[tuple[str, str, bool]]:
        """``(method, propensity, with_at)`` in training order (:func:`configurations`), for
        ``dataset`` when given (estimators that do not apply to it left out)."""
        return configurations(self.methods, self.propensities, self.at_options, dataset,
                              self.protocol)


def plan_request(request: TrainRequest, root=None) -> Iterator[tuple[RatingData, list[ConfigPlan]]]:
    """Per dataset of ``request``: the data and the plan of every configuration, in training
    order. Shared by local and Dask runs (:func:`train`)."""
    configs = {d: request.configurations(d) for d in request.datasets}
    # resolve every parameter set first: a bad --params fails before any data is touched
    tables: dict = {}     # the chain's sets, each loaded once
    chosen, missing = {}, []
    for d in request.datasets:
        for c in configs[d]:
            if "," in str(request.params):   # a chain, under every protocol
                found = chain_lookup(chain_sets(request.params), d, c[1], c[2], c[0], tables,
                                     request.protocol)
                if found is None:
                    missing.append((d, *c))    # every gap named at once, not the first alone
                    continue
                chosen[(d, c)] = found
            else:
                chosen[(d, c)] = get_params(request.params, d, c[1], c[2], c[0],
                                            request.protocol, tables)
    if missing:
        raise missing_values_error(missing, chain_sets(request.params), request.protocol)
    sets: dict = {}       # the sets params_budget reads, each loaded once
    protocol = request.protocol
    for dataset in request.datasets:
        if request.download:
            data = ensure_data(dataset, quiet=True)
        else:
            data = load_data(dataset)
        plans = []
        for method, propensity, with_at in configs[dataset]:
            params, source = chosen[(dataset, (method, propensity, with_at))]
            at_settings = (protocol.at_settings(request.loss, request.batch_seed)
                           if with_at else None)
            spec = RunSpec(
                dataset, propensity, with_at, params, source, tuple(request.seeds),
                protocol.train_settings(method, request.loss, request.batch_seed), at_settings,
                method=method, protocol=protocol,
                params_budget=params_budget(source, dataset, config_key(propensity, with_at,
                                                                        method), sets,
                                            protocol))
            plans.append(plan_config(data, spec, root, force=request.force))
        yield data, plans
