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
- The MCAR split seed is :data:`atrec.data.splits.MCAR_SPLIT_SEED` (a property of the split).
"""

from __future__ import annotations

from dataclasses import dataclass

LOSSES = ("snips", "ips")
AUTHORS_BATCH_SEED = 12345
TUNING_SEED = 12345
SAMPLER_SEED = 123
# Trials per tuning study. The tuning of Table 1 uses the paper's 25 (``atrec reproduce
# --tune``); every study ``atrec tune`` runs gets TUNING_BUDGET unless ``--trials`` says
# otherwise, the same for every method, and the shipped ``tuned-atrec`` values were made with it.
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
