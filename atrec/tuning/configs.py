"""Tuning the protocol's configurations: one study per (dataset, method, propensity, with/without
AT), named ``<prefix>-<dataset>-<config key>`` (e.g. ``atrec-coat-item-at``). Objective:
:func:`atrec.experiments.fitting.validation_loss`, the lowest validation loss of one run on the
seed-12345 split; search space: the method's (:class:`atrec.tuning.space.SearchSpace`).
:func:`tune_config_splits` repeats a configuration's tuning on several splits
(:mod:`atrec.tuning.splits`).

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
from atrec.limits import MAX_SPLITS
from atrec.evaluation.fits import at_constant, criterion_constant
from atrec.experiments.fitting import validation_loss
from atrec.methods.registry import configurations
from atrec.names import DEFAULT_METHOD, config_key
from atrec.run_settings import SAMPLER_SEED, TUNING_SEED, settings_dict
from atrec.protocols import Protocol, get_protocol
from atrec.params.lookup import (
    NAMED_SETS,
    REFERENCE,
    HyperParams,
    chain_lookup,
    chain_sets,
    load_param_table,
    start_params,
)
from atrec.runtime import compiled
from atrec.results.tuning_spread import SPREAD_FILE, spread_path
from atrec.tuning.export import export_best
from atrec.tuning.space import SearchSpace
from atrec.tuning.splits import combine, cross_evaluator, save_spreads, split_seeds
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

# The sets a study's first trial is taken from, in order (``atrec tune --params``), under the
# default protocol: the chain train reads without ``tuned``, the set a study writes, so a new
# study never depends on what an earlier one left in the results folder. Under another protocol
# the same rule over its own sets (:func:`atrec.params.lookup.start_params`).
START_PARAMS = start_params()
START_SETS = tuple(chain_sets(START_PARAMS))
NO_START = "none"    # --params none: the sampler alone (the tuning of Table 1)


def study_name(prefix: str, dataset: str, propensity: str, with_at: bool,
               method: str = DEFAULT_METHOD) -> str:
    """``<prefix>-<dataset>-<config key>``, e.g. ``atrec-coat-item-at`` (MF-IPS) or
    ``atrec-coat-mf-umi/item-at`` (another method)."""
    return f"{prefix}-{dataset}-{config_key(propensity, with_at, method)}"


def make_objective(data, propensity: str, with_at: bool, settings=None,
                   at_settings=None, method: str = DEFAULT_METHOD,
                   protocol: Protocol | str | None = None,
                   seed: int = TUNING_SEED) -> Objective:
    """The protocol's objective for one configuration: ``params -> validation_loss(...)`` on
    the split (and model seed) ``seed``."""
    def objective(params: HyperParams) -> float:
        return validation_loss(data, propensity, with_at, params, seed=seed, settings=settings,
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
    protocol: Protocol | str | None = None   # resolved once, here: a name is looked up
    start: str | None = START_PARAMS   # the sets of the first trial (chain_start); None: none
    splits: int = 1    # validation splits each configuration is tuned on (atrec.tuning.splits)

    def __post_init__(self) -> None:
        if int(self.trials) != self.trials or self.trials < 1:
            raise AtrecError(f"--trials {self.trials}: give a positive number of trials (e.g. 25)")
        if int(self.splits) != self.splits or not 1 <= self.splits <= MAX_SPLITS:
            raise AtrecError(f"--splits {self.splits}: give a number of validation splits from "
                             f"1 to {MAX_SPLITS} (e.g. 3)")
        prefix = self.study_prefix
        if not prefix or any(c.isspace() for c in prefix):
            raise AtrecError(f"--study-prefix {prefix!r}: give a non-empty name without spaces")
        object.__setattr__(self, "protocol", get_protocol(self.protocol))
        if self.storage is not None:
            resolve_url(self.storage)  # an unusable URL or missing driver: before any data loads


OBJECTIVE_NOTE = f"min validation loss, split seed {TUNING_SEED}"
TRAINING_OBJECTIVE_NOTE = (f"last epoch's training loss, split seed {TUNING_SEED} (the protocol has no "
                           "validation split)")


def objective_note_for(protocol: Protocol | str | None = None, seed: int = TUNING_SEED) -> str:
    """What a study under ``protocol`` minimises, in words (stored with the study): the lowest
    validation loss, or, under a protocol without a validation part (``binary-icde24``), the
    training loss of the last epoch, which is what that protocol evaluates; on the split of
    ``seed`` (another seed than :data:`TUNING_SEED` is another study: ``atrec tune --splits``)."""
    note = OBJECTIVE_NOTE if get_protocol(protocol).has_validation else TRAINING_OBJECTIVE_NOTE
    return note.replace(f"split seed {TUNING_SEED}", f"split seed {seed}")


def study_attrs(dataset: str, propensity: str, with_at: bool, checksums: dict, settings=None,
                at_settings=None, objective: str = OBJECTIVE_NOTE,
                method: str = DEFAULT_METHOD, protocol: Protocol | str | None = None) -> dict:
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


def check_start(sets: str | None, protocol: Protocol | str | None = None) -> str | None:
    """A ``--params`` value of ``atrec tune`` checked before any work: ``None`` for ``none``,
    the protocol's default (:func:`atrec.params.lookup.start_params`) for ``None``, else the
    sets, each a set that exists under ``protocol`` or an existing parameter file (one-line
    error naming it)."""
    if sets is None:
        return start_params(protocol)
    if str(sets).strip().lower() == NO_START:
        return None
    proto = get_protocol(protocol)
    allowed = NAMED_SETS if proto.shared_sets else proto.param_sets
    for name in chain_sets(sets):
        if name in allowed:
            continue
        if name in NAMED_SETS:
            raise AtrecError(f"parameter set '{name}' does not exist under protocol "
                             f"'{proto.name}': choose from {', '.join(allowed)}, give a "
                             f"parameter file, or 'none' (the sampler alone)")
        load_param_table(name, proto)      # a file must exist and parse
    return sets


def chain_start(dataset: str, propensity: str, with_at: bool, method: str = DEFAULT_METHOD,
                sets: str | None = START_PARAMS,
                protocol: Protocol | str | None = None) -> tuple[dict, str] | None:
    """The first trial of a study and the set it comes from: the values of the first set of
    ``sets`` (comma-separated; default the chain that train and run read under ``protocol``,
    less ``tuned``) that has this configuration under ``protocol``, so tuning is never worse
    on the objective than the values a train without ``--params`` would use; with AT and no
    set holding the configuration, the first set's values of the same configuration without
    AT (``epsilon`` then sampled). ``None`` where no set has either, or ``sets`` is ``None`` /
    ``none`` (the sampler alone). The same rule under every protocol: another protocol's sets
    are its own (its reference values, its shipped ``tuned-atrec``, a file)."""
    if sets is None or str(sets).strip().lower() == NO_START:
        return None
    chain = chain_sets(sets)
    found = _lookup_start(chain, dataset, propensity, with_at, method, protocol)
    if found is None and with_at:
        found = _lookup_start(chain, dataset, propensity, False, method, protocol)
    if found is None:
        return None
    params, label = found
    return params.as_dict(), label


def _lookup_start(chain, dataset, propensity, with_at, method, protocol):
    return chain_lookup(chain, dataset, propensity, with_at, method, None, protocol)


def tune_config(data, propensity: str, with_at: bool, trials: int = DEFAULT_TRIALS,
                storage=None, *, export_path: Path | None = None,
                **options) -> StudyOutcome:
    """Tune one configuration on ``data`` (:func:`study_config`, whose keyword ``options`` it
    takes) and merge its best parameters into the tuned file (``export_path``, default the
    protocol's tuned parameter file)."""
    outcome = study_config(data, propensity, with_at, trials, storage, **options)
    export_best([outcome], export_path, options.get("protocol"))
    return outcome


def tune_config_splits(data, propensity: str, with_at: bool, trials: int = DEFAULT_TRIALS,
                       storage=None, splits: int = 3, *, export_path: Path | None = None,
                       spread_file: Path | None = None,
                       objective_for: Callable[[int], Objective] | None = None,
                       **options) -> StudyOutcome:
    """Tune one configuration on ``splits`` validation splits (:mod:`atrec.tuning.splits`):
    one :func:`study_config` per seed of :func:`split_seeds`, each winner measured on the other
    splits, the winner of :data:`SPLIT_RULE` merged into the tuned file with the spread, and
    every split's result into ``spread_file`` (default the protocol's
    :func:`atrec.results.tuning_spread.spread_path`). ``objective_for(seed)``: the objective on
    the split of ``seed`` (default :func:`make_objective`'s; a custom one needs
    ``objective_note``). ``splits=1`` is :func:`tune_config` exactly."""
    if splits == 1:
        if objective_for is not None:
            options["objective"] = objective_for(TUNING_SEED)
        return tune_config(data, propensity, with_at, trials, storage, export_path=export_path,
                           **options)
    protocol = get_protocol(options.pop("protocol", None))
    if storage is None or isinstance(storage, str):
        storage = open_storage(storage, options.get("worker"))
    if objective_for is None:
        def objective_for(seed: int) -> Objective:
            return make_objective(data, propensity, with_at, options.get("settings"),
                                  options.get("at_settings"),
                                  options.get("method", DEFAULT_METHOD), protocol, seed)
    outcomes = [study_config(data, propensity, with_at, trials, storage,
                             objective=objective_for(seed), seed=seed, protocol=protocol,
                             **options)
                for seed in split_seeds(splits)]
    outcome = combine(outcomes, cross_evaluator(outcomes, storage, objective_for))
    export_best([outcome], export_path, protocol)
    if spread_file is None:   # beside the tuned file it belongs to
        spread_file = (export_path.with_name(SPREAD_FILE) if export_path is not None
                       else spread_path(protocol))
    save_spreads([outcome], spread_file, protocol.name)
    return outcome


def study_config(data, propensity: str, with_at: bool, trials: int = DEFAULT_TRIALS,
                 storage=None, *, objective: Objective | None = None,
                 objective_note: str | None = None, settings=None, at_settings=None,
                 study_prefix: str = DEFAULT_PREFIX, worker: WorkerSettings | None = None,
                 progress: Callable[[Progress], None] | None = None,
                 method: str = DEFAULT_METHOD,
                 notice: Callable[[str], None] | None = None,
                 protocol: Protocol | str | None = None,
                 start: str | None = START_PARAMS, seed: int = TUNING_SEED) -> StudyOutcome:
    """Run the study of one configuration on ``data``, measured on the split of ``seed``;
    export nothing.

    The study is ``study_name(study_prefix, data.name, propensity, with_at, method)``, with
    ``-seed<seed>`` appended for another split than :data:`TUNING_SEED`'s
    (:func:`split_study_name`); ``objective`` defaults to :func:`make_objective` on that split
    (then ``objective_note`` should say what a custom one measures, since it is stored with the
    study). ``storage``: a URL or an opened storage (:func:`open_storage`); ``notice`` as in
    :func:`run_study` (what this worker waits for). A new study's first trial is
    :func:`chain_start`'s from the sets ``start`` names (default :data:`START_PARAMS`). The
    outcome's ``failed`` says why its best trial is a failed fit (:func:`failed_study`).
    """
    protocol = get_protocol(protocol)
    if objective is None:
        objective = make_objective(data, propensity, with_at, settings, at_settings, method,
                                   protocol, seed)
    objective_note = objective_note or objective_note_for(protocol, seed)
    attrs = study_attrs(data.name, propensity, with_at, data.checksums, settings, at_settings,
                        objective_note, method, protocol)
    if not protocol.legacy_names:
        attrs["protocol"] = protocol.name
    name = split_study_name(study_name(study_prefix, data.name, propensity, with_at, method),
                            seed)
    if start == START_PARAMS:      # the default: train's chain under this protocol
        start = protocol.start_params
    first = chain_start(data.name, propensity, with_at, method, start, protocol)
    outcome = run_study(name, objective, with_at, trials, storage, worker=worker, attrs=attrs,
                        progress=progress, space=SearchSpace.for_method(method, protocol),
                        notice=notice, first_trial=first[0] if first else None,
                        first_label=first[1] if first else REFERENCE)
    outcome.dataset, outcome.propensity, outcome.with_at = data.name, propensity, with_at
    outcome.method, outcome.seed = method, seed
    outcome.failed = failed_study(outcome, protocol)
    return outcome


def split_study_name(name: str, seed: int) -> str:
    """The study of configuration ``name`` measured on the split of ``seed``: ``name`` itself
    for :data:`TUNING_SEED`'s (the study a single-split tune has always made, so it resumes),
    ``<name>-seed<seed>`` for another."""
    return name if seed == TUNING_SEED else f"{name}-seed{seed}"


def failed_study(outcome: StudyOutcome, protocol: str) -> str | None:
    """Why a study under a binary protocol failed: its best trial's validation criterion is no
    better than the constant 1/2's ``ln 2`` (rule 2 of :mod:`atrec.evaluation.fits`; a trial
    reads no test label, so rules 1 and 3 do not apply); ``None`` when it did not."""
    proto = get_protocol(protocol)
    if proto.view != "binary" or outcome.best_value is None:
        return None
    selection = proto.epochs.selection   # a binary protocol's
    if not at_constant(outcome.best_value, selection):
        return None
    constant, tolerance, words = criterion_constant(selection)
    return (f"its best validation criterion {outcome.best_value:.4f} is within "
            f"{tolerance} of {constant:.4f}, {words}: every trial failed to fit")


def tune(request: TuneRequest, progress: Callable[[Progress], None] | None = None,
         export_path: Path | None = None, loader: Callable | None = None,
         notice: Callable[[str], None] | None = None) -> list[StudyOutcome]:
    """Run every selected study to ``request.trials`` COMPLETE trials and export the best values.

    With ``request.splits`` above 1, each configuration is tuned on that many validation splits
    and one winner exported (:func:`tune_config_splits`).

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
    proto = request.protocol
    # each protocol's studies and tuned values are named and filed apart (Protocol.study_prefix)
    prefix = proto.study_prefix(request.study_prefix)
    if export_path is None and not proto.legacy_names:
        export_path = proto.tuned_params_path()
    outcomes = []
    for data in datasets:
        family = None
        configs = configurations(request.methods, request.propensities, request.at_options,
                                 data.name, proto)
        for method, propensity, with_at in compiled.in_families(configs, lambda c: (c[0], c[2])):
            if family is not None and (method, with_at) != family:
                compiled.retire()      # the previous family's studies are done
            family = (method, with_at)
            settings, at_settings = request.settings, request.at_settings
            if not proto.legacy_names:   # saito2020's studies keep the attributes they had
                settings = settings or proto.train_settings(method)
                at_settings = at_settings or proto.at_settings()
            outcomes.append(tune_config_splits(
                data, propensity, with_at, request.trials, storage, request.splits,
                settings=settings, at_settings=at_settings,
                study_prefix=prefix, worker=request.worker,
                progress=progress, export_path=export_path, method=method, notice=notice,
                protocol=proto, start=request.start))
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
