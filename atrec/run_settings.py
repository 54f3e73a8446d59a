"""Run settings as plain data: the training schedules, the fixed seeds and the budgets
(docs/protocol.md).

This module imports no TensorFlow, so that options, parameter files, records and reports can be
validated and read without loading the training engine. The learners (:mod:`atrec.learners`)
take these settings; every record stores them (``as_dict``).

Fixed seeds, each with one home here:

- :data:`AUTHORS_BATCH_SEED` (12345): the authors reset NumPy's generator to it before every run,
  so all seeds draw the same batch positions (``--batch-seed fixed``).
- :data:`TUNING_SEED` (12345): the split on which a tuning trial is measured.
- :data:`SAMPLER_SEED` (123): Optuna's TPE sampler seed.
- The MCAR split seed is :data:`atrec.data.splits.MCAR_SPLIT_SEED` (a property of the split),
  ``ijcai2022``'s slice seed :data:`atrec.protocols.ijcai2022.MCAR_SLICE_SEED`.

The schedules, each class with its home here: :class:`Schedule` (what a protocol declares),
:class:`TrainSettings` and :class:`ATSettings` (one run's steps, alone or in AT) and
:class:`EpochSettings` (the binary protocols' epochs, capped at :data:`MAX_EPOCHS`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

LOSSES = ("snips", "ips")
AUTHORS_BATCH_SEED = 12345
TUNING_SEED = 12345
SAMPLER_SEED = 123
# Trials per tuning study. The tuning of Table 1 uses the paper's 25 (``atrec reproduce
# --tune``); every study ``atrec tune`` runs gets TUNING_BUDGET unless ``--trials`` says
# otherwise, the same for every method; the shipped 1-5 star ``tuned-atrec`` values were made
# with it (binary-clean's with ``--trials 10 --splits 3``: its file's header says why).
PAPER_TRIALS = 25
TUNING_BUDGET = 50
# When AT's candidate pool is re-drawn: every pseudo-labelling step (the authors' code) or once
# per iteration (the paper's Algorithm 1).
RESAMPLE = ("step", "iteration")
# AT's pseudo-label sampler, recorded with its settings: records made before the survivor-mask
# sampler (same law, other draws) have no such field.
AT_SAMPLER = "survivor-mask"
# How the bias terms start: N(0, 0.01^2) with b = 0.001 (the Saito 2020 code), or all zero (the
# IJCAI 2022 code). Embedding tables are Glorot-uniform under both.
BIAS_INITS = ("normal", "zero")
# The binary protocols' epochs: the reference code's num_epoch (binary-clean's cap too) and the
# epochs binary-clean waits for a better validation criterion.
MAX_EPOCHS = 1000
PATIENCE = 5
# binary-clean's one selection rule for every method (:class:`EpochSettings`): early stopping
# and tuning on the pooled AUC of the MCAR slice carved from the training side, its patience
# and its cap counted in optimiser steps (an epoch is 1 to about 100 steps, depending on the
# batch size), so that no method's batch size buys it more or less patience.
SELECTIONS = ("method", "mcar-auc")
PATIENCE_UNITS = ("epochs", "steps")
PATIENCE_STEPS = 300
MAX_STEPS = 50_000
SCHEDULE_KINDS = ("steps", "epochs")


def _check_bias_init(value: str) -> None:
    if value not in BIAS_INITS:
        raise ValueError(f"unknown bias_init '{value}': choose from {', '.join(BIAS_INITS)}")


def _with_bias_init(block: dict, bias_init: str) -> dict:
    """``block`` plus ``bias_init`` when it is not the default (so saito2020's records keep the
    settings they always had)."""
    return block if bias_init == "normal" else {**block, "bias_init": bias_init}


def _batch_seed_dict(batch_seed: int | None):
    return "per-seed" if batch_seed is None else batch_seed


@dataclass(frozen=True)
class TrainSettings:
    """Protocol settings of one MF-IPS training run (docs/protocol.md, "MF-IPS", by default)."""

    steps: int = 500
    batch_size: int = 1024
    learning_rate: float = 0.01
    loss: str = "snips"
    batch_seed: int | None = AUTHORS_BATCH_SEED
    bias_init: str = "normal"

    def __post_init__(self) -> None:
        _check_bias_init(self.bias_init)
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss '{self.loss}': choose from {', '.join(LOSSES)}")
        if self.batch_seed is not None and self.batch_seed < 0:
            raise ValueError(f"batch_seed must be >= 0 or None, got {self.batch_seed}")

    def as_dict(self) -> dict:
        return _with_bias_init({"steps": self.steps, "batch_size": self.batch_size,
                                "learning_rate": self.learning_rate, "loss": self.loss,
                                "batch_seed": _batch_seed_dict(self.batch_seed)}, self.bias_init)


@dataclass(frozen=True)
class ATSettings:
    """Protocol settings of one AT run (docs/protocol.md, "Asymmetric tri-training", by default: the
    authors' code)."""

    pre_steps: int = 150
    iterations: int = 10
    steps_per_iteration: int = 10
    batch_size: int = 1024
    learning_rate: float = 0.01
    candidate_factor: int = 5
    loss: str = "snips"
    batch_seed: int | None = AUTHORS_BATCH_SEED
    resample: str = "step"
    bias_init: str = "normal"

    def __post_init__(self) -> None:
        if self.resample not in RESAMPLE:
            raise ValueError(f"unknown resample '{self.resample}': choose from "
                             f"{', '.join(RESAMPLE)}")
        for label in ("pre_steps", "iterations", "steps_per_iteration", "batch_size",
                      "candidate_factor"):
            value = getattr(self, label)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{label} must be a positive integer, got {value!r}")
        # TrainSettings validates learning rate, loss and batch seed the same way as MF-IPS
        self.pretrain_settings()

    @property
    def pl_steps(self) -> int:
        """Number of pseudo-labelling steps, ``iterations * steps_per_iteration``."""
        return self.iterations * self.steps_per_iteration

    def pretrain_settings(self) -> TrainSettings:
        """The MF-IPS settings whose ``3 * pre_steps`` batches are the pre-training batches."""
        return TrainSettings(steps=3 * self.pre_steps, batch_size=self.batch_size,
                             learning_rate=self.learning_rate, loss=self.loss,
                             batch_seed=self.batch_seed, bias_init=self.bias_init)

    def as_dict(self) -> dict:
        return {"pre_steps": self.pre_steps, "iterations": self.iterations,
                "steps_per_iteration": self.steps_per_iteration, "batch_size": self.batch_size,
                "learning_rate": self.learning_rate, "candidate_factor": self.candidate_factor,
                "loss": self.loss, "resample": self.resample, "sampler": AT_SAMPLER,
                "batch_seed": _batch_seed_dict(self.batch_seed)} | (
                    {} if self.bias_init == "normal" else {"bias_init": self.bias_init})


def variant_suffix(loss: str = "snips", batch_seed: int | None = AUTHORS_BATCH_SEED) -> str:
    """How a run deviates from the authors' protocol, as a label suffix (``""`` when it does not).

    ``+ips`` for the paper's Eq. 3 loss, ``+per-seed`` for per-seed batch streams. Runs of a
    variant are filed and summarised apart (``published+ips``), never mixed with the protocol's.
    """
    parts = []
    if loss != "snips":
        parts.append(loss)
    if batch_seed is None:
        parts.append("per-seed")
    elif batch_seed != AUTHORS_BATCH_SEED:
        parts.append(f"batch-seed-{batch_seed}")
    return "".join("+" + p for p in parts)


def settings_dict(settings: TrainSettings | None, at_settings: ATSettings | None,
                  with_at: bool) -> dict:
    """The settings a run or a tuning objective trains under (``None``: the paper's protocol's), as
    the plain data that records and studies store."""
    if with_at:
        return (at_settings or ATSettings()).as_dict()
    return (settings or TrainSettings()).as_dict()


@dataclass(frozen=True)
class Schedule:
    """How a method trains under a protocol and the defaults it starts from.

    ``kind``: ``steps`` (a fixed number of steps, the reported step the one of lowest
    validation criterion, first on ties) or ``epochs`` (the binary protocols' epochs of
    shuffled full batches, :mod:`atrec.learners.epochs`; ``steps`` is then the cap on epochs and
    a method's parameters give its batch size and learning rate); ``steps``, ``batch_size`` (drawn with replacement),
    ``learning_rate``, ``adam_epsilon`` (added to ``sqrt(v)`` as TensorFlow 1 does),
    ``bias_init`` (:data:`atrec.run_settings.BIAS_INITS`; tables are Glorot-uniform), ``l2``
    (``whole-table``: ``lam * sum of l2`` over every row of every table, every step) and
    ``batch_seed`` (NumPy's generator reset to it before every run).
    """

    kind: str = "steps"
    steps: int = 500
    batch_size: int = 1024
    learning_rate: float = 0.01
    adam_epsilon: float = 1e-8
    bias_init: str = "normal"
    l2: str = "whole-table"
    batch_seed: int = AUTHORS_BATCH_SEED

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULE_KINDS:
            raise ValueError(f"unknown schedule kind '{self.kind}': choose from "
                             f"{', '.join(SCHEDULE_KINDS)}")
        if self.bias_init not in BIAS_INITS:
            raise ValueError(f"unknown bias_init '{self.bias_init}': choose from "
                             f"{', '.join(BIAS_INITS)}")
        if self.l2 != "whole-table":
            raise ValueError(f"unknown l2 form '{self.l2}': only 'whole-table' is implemented")
        if self.adam_epsilon != 1e-8:
            raise ValueError(f"adam_epsilon {self.adam_epsilon!r}: the compiled loops use "
                             f"TensorFlow 1's 1e-8")
        TrainSettings(steps=self.steps, batch_size=self.batch_size,
                      learning_rate=self.learning_rate)  # the same checks as a run's

    def describe(self) -> str:
        """``2500 steps of 2048, lr 0.01, zero biases, Adam eps 1e-08, whole-table L2``."""
        if self.kind == "epochs":
            return (f"epochs of shuffled full batches (up to {self.steps}), PyTorch's Adam, "
                    f"per-method batch size, learning rate and weight decay")
        return (f"{self.steps} steps of {self.batch_size}, lr {self.learning_rate:g}, "
                f"{self.bias_init} biases, Adam eps {self.adam_epsilon:g}, {self.l2} L2")


def form_value(forms: str) -> str:
    """A record's ``forms`` setting in today's words: ``reference`` (older records) is
    ``coded``."""
    return "coded" if forms == "reference" else forms


@dataclass(frozen=True)
class EpochSettings:
    """How a binary method trains under a protocol: ``stopping`` (``reference``: the code's rule
    on the training loss, last epoch evaluated; ``validation``: early stopping on the validation
    criterion with ``patience``), ``max_epochs``, and ``forms`` (``coded``: each method as
    its code computes it; ``corrected``: the corrected forms): the default of a method's
    ``form`` option, and in a record the form that ran. Records made before the option say
    ``reference`` for ``coded`` (:func:`form_value`).

    ``selection``: what the validation criterion is, ``method`` (each method's own: its mean
    cross-entropy on the MNAR validation part, propensity-weighted where it has propensities)
    or ``mcar-auc`` (one rule for every method: ``1 -`` the pooled AUC of the predictor's
    scores on the MCAR slice the protocol carves from the training side, which estimates the
    MCAR test's AUC without reading a test label). ``unit``: what ``patience`` counts, epochs
    or optimiser steps; with ``steps`` the main stage's cap is ``max_steps`` steps (and never
    more than ``max_epochs`` epochs), and a run still improving when it hits the cap is flagged
    in its record. The three are left out of :meth:`as_dict` at their defaults, so records
    made before them keep their settings."""

    stopping: str = "reference"
    patience: int = PATIENCE
    max_epochs: int = MAX_EPOCHS
    forms: str = "coded"
    selection: str = "method"
    unit: str = "epochs"
    max_steps: int = 0

    def __post_init__(self) -> None:
        if self.forms not in ("coded", "corrected", "reference"):
            raise ValueError(f"forms must be coded or corrected, got {self.forms!r}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {', '.join(SELECTIONS)}, "
                             f"got {self.selection!r}")
        if self.unit not in PATIENCE_UNITS:
            raise ValueError(f"unit must be epochs or steps, got {self.unit!r}")
        object.__setattr__(self, "forms", form_value(self.forms))

    def main_cap(self, steps_per_epoch: int) -> int:
        """The epochs the main stage may run: ``max_epochs``, and with patience in steps no
        more than ``ceil(max_steps / steps_per_epoch)``."""
        if self.unit != "steps" or self.max_steps <= 0:
            return self.max_epochs
        return min(self.max_epochs, -(-self.max_steps // max(1, steps_per_epoch)))

    def as_dict(self) -> dict:
        out = asdict(self)
        for key, default in (("selection", "method"), ("unit", "epochs"), ("max_steps", 0)):
            if out[key] == default:
                del out[key]
        return out
