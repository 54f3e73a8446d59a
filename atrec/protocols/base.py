"""The contract of a protocol: a named, validated object that the experiment code reads.

A protocol declares, as class attributes readable without TensorFlow:

- ``name`` (the ``--protocol`` value), ``label``, ``description`` and ``reference``;
- ``view``: how ratings are seen (``stars``: the 1-5 ratings as they are);
- ``metrics``: the registered metrics (:mod:`atrec.evaluation.registry`) every record carries,
  and ``selection``: the criterion whose lowest value over the schedule selects the step at
  which the ``selected`` metrics (MSE, MAE) are read;
- ``schedule``: a :class:`Schedule` (the kind of schedule and its defaults), and
  ``method_steps``: per method, the settings that differ from it (a method whose cycle holds
  steps that do not move the predictor takes more loop steps for the same predictor steps);
- ``ranking_part``: which part of the MCAR test set the ranking metrics rank (``test``: the
  evaluated slice; ``test_full``: the whole set);
- ``param_sets``: the parameter sets that exist under it, in the order of its default chain;
  ``reference_params`` the one it ships (``dataset -> config key -> values``), if any;

and implements :meth:`Protocol.split`, the per-seed :class:`~atrec.data.splits.Split`.

A request resolves its protocol once (:func:`atrec.protocols.get_protocol`) and hands the
object down; the object owns the names made from it: where its records, studies and tuned values
live (:meth:`Protocol.results_root`, :meth:`Protocol.tuned_params_path`), its studies' prefix
(:meth:`Protocol.study_prefix`), the ``--protocol`` flag that repeats it in a command
(:attr:`Protocol.flag`) and its default parameter chain (:attr:`Protocol.default_params`). A
protocol equals its name, so a record's ``"saito2020"`` compares with it.

Records of a protocol live under ``<results>/protocols/<name>``, so they never mix in a table;
a protocol with ``legacy_names`` (``saito2020``, older than protocols) keeps the names it had
before: its records under ``<results>``, its studies and tuned file unprefixed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from atrec.data.ratings import RatingData
from atrec.data.splits import Split
from atrec.names import DEFAULT_PROTOCOL, TABLE_DATASETS, TUNED
from atrec.paths import results_dir
from atrec.run_settings import (  # noqa: F401  (Schedule re-exported: its home is run_settings)
    AUTHORS_BATCH_SEED,
    SCHEDULE_KINDS,
    ATSettings,
    Schedule,
    TrainSettings,
)

VIEWS = ("stars", "binary")   # 1-5 ratings as they are; labels y = 1{rating >= 3}
RANKING_PARTS = ("test", "test_full")
PROTOCOLS_FOLDER = "protocols"


def protocol_flag(name: str | None) -> str:
    """`` --protocol <name>``: how a command line names the protocol ``name`` (a registered one
    or a name a record holds); ``""`` for the command line's default, which needs no flag."""
    return "" if name in (None, DEFAULT_PROTOCOL) else f" --protocol {name}"


class Protocol:
    """Base class of protocols (module doc); subclasses set the attributes and ``split``."""

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str] = ""
    reference: ClassVar[str] = ""
    view: ClassVar[str] = "stars"
    metrics: ClassVar[tuple[str, ...]] = ()
    selection: ClassVar[str] = ""
    schedule: ClassVar[Schedule] = Schedule()
    method_steps: ClassVar[dict] = {}
    ranking_part: ClassVar[str] = "test_full"
    param_sets: ClassVar[tuple[str, ...]] = ()
    reference_params: ClassVar[dict] = {}
    # the datasets it trains on ('--dataset' choices of train and tune)
    datasets: ClassVar[tuple[str, ...]] = TABLE_DATASETS
    # dataset -> the dataset whose methods' reference values stand in for it (a dataset the
    # reference codes never ran, e.g. the semi-synthetic truth's)
    reference_from: ClassVar[dict] = {}
    # the seeds of a complete cell of its tables (its paper's n; reports warn below it)
    seeds: ClassVar[int] = 20
    # how each seed splits the data, in words (records and 'atrec methods')
    split_description: ClassVar[str] = ""
    # whether each seed's split holds a validation part: tuning's objective is the lowest
    # validation loss where it does, the last epoch's training loss where it does not
    has_validation: ClassVar[bool] = True
    # records, studies and tuned values keep the names they had before protocols existed
    # (saito2020): under the results folder itself, studies not prefixed with the name
    legacy_names: ClassVar[bool] = False
    # whether its named sets are atrec's shared ones (the paper's published file, atrec's tuned
    # file, every method's reference values: saito2020) rather than its own (its
    # reference_params, atrec/resources/<name>_tuned_params.yaml, its own tuned file)
    shared_sets: ClassVar[bool] = False

    def __eq__(self, other) -> bool:
        if isinstance(other, Protocol):
            return other.name == self.name
        return isinstance(other, str) and other == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<protocol {self.name}>"

    def split(self, data: RatingData, seed: int) -> Split:  # pragma: no cover - abstract
        """The split seed ``seed`` trains and is measured on."""
        raise NotImplementedError

    def split_record(self) -> dict:
        """How the split was made, for the records' ``protocol`` block."""
        return {}

    @property
    def is_default(self) -> bool:
        """Whether ``--protocol`` may be left out for it (the command line's default)."""
        return self.name == DEFAULT_PROTOCOL

    @property
    def flag(self) -> str:
        """`` --protocol <name>``, to repeat in a command line it names; ``""`` for the command
        line's default."""
        return protocol_flag(self.name)

    @property
    def default_params(self) -> str:
        """The ``--params`` value read when none is given: its ``param_sets``, comma-separated,
        each configuration taking its values from the first set that has them."""
        return ",".join(self.param_sets)

    @property
    def start_params(self) -> str:
        """The sets a new study's first trial comes from when ``atrec tune`` is given no
        ``--params``: :attr:`default_params` without ``tuned``, the set a study writes."""
        return ",".join(s for s in self.param_sets if s != TUNED)

    def results_root(self, root: Path | None = None) -> Path:
        """Where this protocol's records, studies and tuned values live: ``root/protocols/<name>``
        (``root`` default the results folder), ``root`` itself with ``legacy_names``."""
        base = results_dir() if root is None else Path(root)
        return base if self.legacy_names else base / PROTOCOLS_FOLDER / self.name

    def tuned_params_path(self, root: Path | None = None) -> Path:
        """Where ``atrec tune`` exports its best values and ``--params tuned`` reads them."""
        return self.results_root(root) / "tuned_params.yaml"

    def study_prefix(self, prefix: str) -> str:
        """The prefix of its studies' names: ``prefix-<name>`` (``prefix`` with
        ``legacy_names``), so studies of two protocols never share a name."""
        return prefix if self.legacy_names else f"{prefix}-{self.name}"

    def train_settings(self, method: str, loss: str = "snips",
                       batch_seed: int | None = AUTHORS_BATCH_SEED) -> TrainSettings:
        """The :class:`~atrec.run_settings.TrainSettings` of ``method`` under this protocol."""
        s = self.schedule
        settings = TrainSettings(steps=s.steps, batch_size=s.batch_size,
                                 learning_rate=s.learning_rate, loss=loss,
                                 batch_seed=batch_seed, bias_init=s.bias_init)
        return replace(settings, **self.method_steps.get(method, {}))

    def at_settings(self, loss: str = "snips", batch_seed: int | None = AUTHORS_BATCH_SEED) -> ATSettings:
        """AT's settings under this protocol: the paper's schedule with this protocol's batch
        size, learning rate and bias initialisation."""
        s = self.schedule
        return ATSettings(batch_size=s.batch_size, learning_rate=s.learning_rate, loss=loss,
                          batch_seed=batch_seed, bias_init=s.bias_init)

    @classmethod
    def summary(cls) -> dict:
        """One row of ``atrec methods``' protocol table."""
        return {"protocol": cls.name, "label": cls.label, "view": cls.view,
                "metrics": ", ".join(cls.metrics), "selection": cls.selection,
                "schedule": cls.schedule.describe(), "split": cls.split_description,
                "parameter sets": ", ".join(cls.param_sets), "description": cls.description}


def validate_protocol_class(cls: type) -> None:
    """Raise ``ValueError`` naming the field when ``cls`` breaks the :class:`Protocol` contract.

    Its metrics are names here (this layer sits below the metric registry); a name that is not
    registered is a one-line error when a run computes it."""
    if not (isinstance(cls, type) and issubclass(cls, Protocol)):
        raise TypeError(f"{cls!r} is not a subclass of atrec.protocols.base.Protocol")
    if not isinstance(getattr(cls, "label", None), str) or not cls.label:
        raise ValueError(f"protocol class {cls.__name__} lacks a non-empty 'label'")
    if cls.view not in VIEWS:
        raise ValueError(f"protocol class {cls.__name__}: view must be one of "
                         f"{', '.join(VIEWS)}, got {cls.view!r}")
    if not isinstance(cls.schedule, Schedule):
        raise TypeError(f"protocol class {cls.__name__}: schedule must be a Schedule")
    if cls.ranking_part not in RANKING_PARTS:
        raise ValueError(f"protocol class {cls.__name__}: ranking_part must be one of "
                         f"{', '.join(RANKING_PARTS)}, got {cls.ranking_part!r}")
    metrics = cls.metrics
    if (not isinstance(metrics, tuple) or not all(isinstance(m, str) for m in metrics)
            or not {"mae", "mse"} <= set(metrics)):
        raise ValueError(f"protocol class {cls.__name__}: metrics must be a tuple of metric "
                         f"names (atrec.evaluation.registry) holding mae and mse, got "
                         f"{metrics!r}")
    if cls.split is Protocol.split:
        raise ValueError(f"protocol class {cls.__name__} does not implement split()")
