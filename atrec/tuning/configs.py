"""Tuning the protocol's configurations: one study per (dataset, method, propensity, with/without
AT), named ``<prefix>-<dataset>-<config key>`` (e.g. ``atrec-coat-item-at``). Objective:
:func:`atrec.experiments.runner.validation_loss`, the lowest validation loss of one run on the
seed-12345 split; search space: the method's (:class:`atrec.tuning.space.SearchSpace`).

Compilation: the objective passes ``lam`` and ``epsilon`` to the compiled loops as values, so a
process compiles once per ``dim`` (at most 10 shapes) and every other trial costs one run (a
Coat trial about 0.03 s once compiled).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from atrec.data.preprocess import load_data
from atrec.errors import AtrecError
from atrec.experiments.runner import validation_loss
from atrec.methods.registry import configurations
from atrec.names import DEFAULT_METHOD, DEFAULT_PROTOCOL, config_key
from atrec.protocol import SAMPLER_SEED, settings_dict
from atrec.protocols import get_protocol
from atrec.results.params import (
    DEFAULT_CHAIN,
    NAMED_SETS,
    REFERENCE,
    TUNED,
    HyperParams,
    chain_lookup,
    chain_sets,
    load_param_table,
    method_reference_params,
    tuned_params_path,
)
from atrec.runtime import compiled
from atrec.tuning.export import export_best
from atrec.tuning.space import SearchSpace
from atrec.tuning.storage import open_storage, resolve_url
from atrec.tuning.study import (
    DEFAULT_PREFIX,
    DEFAULT_TRIALS,
    Objective,
    Progress,
    StudyOutcome,
    WorkerSettings,
    run_study,
)

# The sets a study's first trial is taken from, in order (``atrec tune --params``): the default
# chain without ``tuned``, the set a study writes, so a new study never depends on what an
# earlier one left in the results folder.
START_SETS = tuple(s for s in DEFAULT_CHAIN if s != TUNED)
START_PARAMS = ",".join(START_SETS)
NO_START = "none"    # --params none: the sampler alone (the tuning of Table 1)


def study_name(prefix: str, dataset: str, propensity: str, with_at: bool,
               method: str = DEFAULT_METHOD) -> str:
    """``<prefix>-<dataset>-<config key>``, e.g. ``atrec-coat-item-at`` (MF-IPS) or
    ``atrec-coat-mf-umi/item-at`` (another method)."""
    return f"{prefix}-{dataset}-{config_key(propensity, with_at, method)}"


def make_objective(data, propensity: str, with_at: bool, settings=None,
                   at_settings=None, method: str = DEFAULT_METHOD,
                   protocol: str = DEFAULT_PROTOCOL) -> Objective:
    """The protocol's objective for one configuration: ``params -> validation_loss(...)``."""
    def objective(params: HyperParams) -> float:
        return validation_loss(data, propensity, with_at, params, settings=settings,
                               at_settings=at_settings, method=method, protocol=protocol)

    return objective


@dataclass(frozen=True)
class TuneRequest:
    """The selection of ``atrec tune`` (names already validated with :func:`atrec.names.expand`).

    ``settings`` / ``at_settings``: protocol settings of the objective (``None``: the paper's
    protocol's).
    """

    datasets: tuple[str, ...]
    propensities: tuple[str, ...]
    at_options: tuple[bool, ...]
    trials: int = DEFAULT_TRIALS
    storage: str | None = None
    study_prefix: str = DEFAULT_PREFIX
    settings: object = None
    at_settings: object = None
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    methods: tuple[str, ...] = (DEFAULT_METHOD,)
    protocol: str = DEFAULT_PROTOCOL
    start: str | None = START_PARAMS   # the sets of the first trial (chain_start); None: none

    def __post_init__(self) -> None:
        if int(self.trials) != self.trials or self.trials < 1:
            raise AtrecError(f"--trials {self.trials}: give a positive number of trials (e.g. 25)")
        prefix = self.study_prefix
        if not prefix or any(c.isspace() for c in prefix):
            raise AtrecError(f"--study-prefix {prefix!r}: give a non-empty name without spaces")
        if self.storage is not None:
            resolve_url(self.storage)  # an unusable URL or missing driver: before any data loads


OBJECTIVE_NOTE = "min validation loss, split seed 12345"


def study_attrs(dataset: str, propensity: str, with_at: bool, checksums: dict, settings=None,
                at_settings=None, objective: str = OBJECTIVE_NOTE,
                method: str = DEFAULT_METHOD, protocol: str | None = None) -> dict:
    """What a study measures (stored with it; see ``attrs`` of :func:`run_study`). MF-IPS's
    attributes name no method, as they did before methods were named, so its studies resume."""
    attrs = {"dataset": dataset, "propensity": propensity, "with_at": with_at,
             "objective": objective,
             "settings": settings_dict(settings, at_settings, with_at),
             "search_space": SearchSpace.for_method(method, protocol).as_dict(),
             "sampler_seed": SAMPLER_SEED, "data": dict(checksums)}
    if method != DEFAULT_METHOD:
        attrs["method"] = method
    return attrs


def check_start(sets: str) -> str | None:
    """A ``--params`` value of ``atrec tune`` checked before any work: ``None`` for ``none``,
    else the sets, each a named set or an existing parameter file (one-line error naming it)."""
    if str(sets).strip().lower() == NO_START:
        return None
    for name in chain_sets(sets):
        if name not in NAMED_SETS:
            load_param_table(name)      # a file must exist and parse
    return sets


def chain_start(dataset: str, propensity: str, with_at: bool, method: str = DEFAULT_METHOD,
                sets: str | None = START_PARAMS) -> tuple[dict, str] | None:
    """The first trial of a study and the set it comes from: the values of the first set of
    ``sets`` (comma-separated; default :data:`START_SETS`, the chain that train and run read)
    that has this configuration, so tuning is never worse on the objective than the values a
    train without ``--params`` would use; with AT and no set holding the configuration, the
    first set's values of the same configuration without AT (``epsilon`` then sampled).
    ``None`` where no set has either, or ``sets`` is ``None`` / ``none`` (the sampler alone)."""
    if sets is None or str(sets).strip().lower() == NO_START:
        return None
    chain = chain_sets(sets)
    found = chain_lookup(chain, dataset, propensity, with_at, method)
    if found is None and with_at:
        found = chain_lookup(chain, dataset, propensity, False, method)
    if found is None:
        return None
    params, label = found
    return params.as_dict(), label


def reference_start(dataset: str, propensity: str, with_at: bool,
                    method: str = DEFAULT_METHOD, protocol: str | None = None) -> dict | None:
    """The first trial of a study: the method's ``reference`` values for this configuration
    (:attr:`~atrec.methods.base.Method.reference_params`), so tuning is never worse on the
    objective than its authors' values; with AT and no values of their own, those of the same
    configuration without AT (``epsilon`` then sampled). ``None`` where the method has none.
    The first trial under a protocol other than saito2020 (whose is :func:`chain_start`'s)."""
    table = method_reference_params(method, protocol).get(dataset) or {}
    values = table.get(config_key(propensity, with_at, method))
    if values is None and with_at:
        values = table.get(config_key(propensity, False, method))
    return dict(values) if values else None


def tune_config(data, propensity: str, with_at: bool, trials: int = DEFAULT_TRIALS,
                storage=None, *, objective: Objective | None = None,
                objective_note: str = OBJECTIVE_NOTE, settings=None, at_settings=None,
                study_prefix: str = DEFAULT_PREFIX, worker: WorkerSettings | None = None,
                progress: Callable[[Progress], None] | None = None,
                export_path: Path | None = None, method: str = DEFAULT_METHOD,
                notice: Callable[[str], None] | None = None,
                protocol: str = DEFAULT_PROTOCOL,
                start: str | None = START_PARAMS) -> StudyOutcome:
    """Tune one configuration on ``data`` and merge its best parameters into the tuned file.

    The study is ``study_name(study_prefix, data.name, propensity, with_at, method)``;
    ``objective``
    defaults to :func:`make_objective` (then ``objective_note`` should say what a custom one
    measures, since it is stored with the study). ``storage``: a URL or an opened storage
    (:func:`open_storage`); ``export_path`` defaults to the tuned parameter file; ``notice``
    as in :func:`run_study` (what this worker waits for). A new study's first trial is
    :func:`chain_start`'s from the sets ``start`` names (default :data:`START_PARAMS`).
    """
    if objective is None:
        objective = make_objective(data, propensity, with_at, settings, at_settings, method,
                                   protocol)
    attrs = study_attrs(data.name, propensity, with_at, data.checksums, settings, at_settings,
                        objective_note, method, protocol)
    if protocol != DEFAULT_PROTOCOL:
        attrs["protocol"] = protocol
    name = study_name(study_prefix, data.name, propensity, with_at, method)
    if protocol == DEFAULT_PROTOCOL:
        first = chain_start(data.name, propensity, with_at, method, start)
    else:   # another protocol's sets are its own: its methods' reference values
        values = reference_start(data.name, propensity, with_at, method, protocol)
        first = (values, REFERENCE) if values else None
    outcome = run_study(name, objective, with_at, trials, storage, worker=worker, attrs=attrs,
                        progress=progress, space=SearchSpace.for_method(method, protocol),
                        notice=notice, first_trial=first[0] if first else None,
                        first_label=first[1] if first else REFERENCE)
    outcome.dataset, outcome.propensity, outcome.with_at = data.name, propensity, with_at
    outcome.method = method
    export_best([outcome], export_path, protocol)
    return outcome


def tune(request: TuneRequest, progress: Callable[[Progress], None] | None = None,
         export_path: Path | None = None, loader: Callable | None = None,
         notice: Callable[[str], None] | None = None) -> list[StudyOutcome]:
    """Run every selected study to ``request.trials`` COMPLETE trials and export the best values.

    Studies run family by family (:func:`atrec.runtime.compiled.in_families`: the studies of
    one method with or without AT share their loops, one per ``dim`` tried), and a finished
    family's compiled loops are released (:func:`atrec.runtime.compiled.retire`);
    the order changes no trial value, since each study has its own sampler.

    Datasets are read with ``loader(name)`` (default :func:`atrec.data.preprocess.load_data`). After
    each study, its best parameters are merged into ``export_path`` (default the tuned file).
    ``notice(line)``: when a worker starts waiting for a killed worker's trial (:func:`run_study`).
    """
    loader = loader or load_data
    datasets = [loader(name) for name in request.datasets]  # a missing one fails before any work
    storage = open_storage(request.storage, request.worker)
    proto = get_protocol(request.protocol)
    # another protocol's studies and tuned values are named and filed apart from saito2020's
    prefix = request.study_prefix if proto.is_default else f"{request.study_prefix}-{proto.name}"
    if export_path is None and not proto.is_default:
        export_path = tuned_params_path(proto.name)
    outcomes = []
    for data in datasets:
        family = None
        configs = configurations(request.methods, request.propensities, request.at_options,
                                 data.name, proto.name)
        for method, propensity, with_at in compiled.in_families(configs, lambda c: (c[0], c[2])):
            if family is not None and (method, with_at) != family:
                compiled.retire()      # the previous family's studies are done
            family = (method, with_at)
            settings, at_settings = request.settings, request.at_settings
            if not proto.is_default:
                settings = settings or proto.train_settings(method)
                at_settings = at_settings or proto.at_settings()
            outcomes.append(tune_config(
                data, propensity, with_at, request.trials, storage,
                settings=settings, at_settings=at_settings,
                study_prefix=prefix, worker=request.worker,
                progress=progress, export_path=export_path, method=method, notice=notice,
                protocol=proto.name, start=request.start))
    return outcomes


def tune_all(datasets, propensities, at_options, trials: int = DEFAULT_TRIALS,
             storage: str | None = None, study_prefix: str = DEFAULT_PREFIX, quiet: bool = True,
             progress: Callable[[Progress], None] | None = None) -> list[StudyOutcome]:
    """:func:`tune` of a selection given as lists (``quiet`` drops ``progress``): the tuning of
    Table 1 (``atrec reproduce --tune``; docs/protocol.md, "Tuning"), from the sampler alone like
    the authors' (a first trial at their published values would decide what it is meant to
    find)."""
    request = TuneRequest(tuple(datasets), tuple(propensities), tuple(at_options), trials,
                          storage, study_prefix, start=None)
    return tune(request, progress=None if quiet else progress)
