"""What a run is: :class:`RunSpec`, one configuration to train (dataset, propensity, AT or not,
method, parameters, seeds) under a resolved protocol, and the folder key and label of its records.

The planning of its seeds in groups is :mod:`atrec.experiments.groups`; fitting a group and
writing its records, :mod:`atrec.experiments.fitting`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atrec.names import DEFAULT_METHOD, config_key
from atrec.protocols import Protocol, get_protocol
from atrec.params.lookup import HyperParams
from atrec.results.records import params_label, variant_suffix


@dataclass(frozen=True)
class RunSpec:
    """One configuration to train: what, with which parameters, under which protocol.

    ``method``: a registered method's key (:func:`atrec.methods.registry.canonical`: its name
    and the options that differ from their default, ``dr+form=coded``), trained alone or,
    with ``with_at``, as A1/A2 of asymmetric tri-training.
    """

    dataset: str
    propensity: str
    with_at: bool
    params: HyperParams
    params_source: str
    seeds: tuple[int, ...]
    settings: object = None      # mf.TrainSettings (default: the protocol's)
    at_settings: object = None   # at.ATSettings (default: the protocol's)
    # An estimator object (``estimate(split) -> PairPropensities``) used instead of the named
    # one, and a block stored as ``record["experiment"]`` (the ML-100K variance experiment).
    estimator: object = field(default=None, compare=False)
    experiment: dict | None = field(default=None, compare=False)
    method: str = DEFAULT_METHOD
    # a registered protocol (atrec.protocols), resolved once: a name is resolved here
    protocol: Protocol | str | None = None
    # how the values were made ("authors", "50 trials"; atrec.params.budget.params_budget), stored
    # in each record so that a table reads it from the run, not from today's parameter file
    params_budget: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "protocol", get_protocol(self.protocol))

    @property
    def key(self) -> str:
        """The folder (and progress-line) key: ``config_key``'s; under a binary protocol every
        method's folder is its own (``mf-ips/none``; 1-5 star MF-IPS keeps its old ones)."""
        return config_key(self.propensity, self.with_at, self.method,
                          named=self.protocol.view == "binary")

    @property
    def params_key(self) -> str:
        """The configuration's key in parameter files (:func:`atrec.names.config_key`)."""
        return config_key(self.propensity, self.with_at, self.method)

    @property
    def variant(self) -> str:
        """How the protocol settings deviate from the authors' (``""``, ``+ips``, ...)."""
        settings = self.at_settings if self.with_at and self.at_settings else self.settings
        if not settings or not hasattr(settings, "loss"):   # binary protocols' EpochSettings
            return ""
        return variant_suffix(settings.loss, settings.batch_seed)

    @property
    def label(self) -> str:
        """Folder label: parameter set plus protocol variant (e.g. ``published+ips``)."""
        return params_label(self.params_source) + self.variant
