"""``make reproduce`` / ``atrec reproduce``: every stage of the paper's experiments, in order.

Stages: download -> preprocess -> (tune, with ``tune=True``) -> train Table 1 (every
propensity, without and with AT, published or tuned parameters) -> the ML-100K variance
experiment -> report (tables and figures) -> check against the published numbers.

Every stage is resumable: downloads already verified are kept, preprocessed stores reused,
finished runs (one record per seed) and finished tuning trials are not recomputed. Yahoo! R3 is
used only when its files were installed before (``atrec download yahoo --source ...``) or
``ATREC_YAHOO_SOURCE`` names the Webscope archive or folder; otherwise it is skipped with a
notice. Coat and ML-100K come from ``ATREC_COAT_SOURCE`` / ``ATREC_ML_100K_SOURCE`` when set
(this is how machines without network use local copies), else from their official URLs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from atrec.errors import AtrecError
from atrec.paths import data_dir, results_dir
from atrec.propensity.registry import table1_propensities


@dataclass
class PipelineResult:
    """What :func:`reproduce` did: one line per stage, the outputs, and the check verdict."""

    stages: list[tuple[str, float, str]] = field(default_factory=list)
    outputs: dict[str, Path] = field(default_factory=dict)
    passed: bool | None = None


def reproduce(tune: bool = False, seeds: int = 20, trials: int = 25, variance: bool = True,
              echo: Callable[[str], None] = print, scheduler: str | None = None,
              progress: Callable[[str], None] | None = None) -> PipelineResult:
    """Run every stage; ``echo`` receives one line per stage with its elapsed time, and
    ``progress`` (``None``: none) the lines inside the train and variance stages, one per
    configuration with the seeds done and the time left, so that a long stage is not silent.

    ``scheduler`` (a Dask scheduler address or ``local:N``) trains Table 1 on a Dask cluster
    (:func:`atrec.experiments.training.train`); the other stages run here.
    """
    from atrec.data.catalogue import raw_present
    from atrec.data.download import download_from_env, env_source, source_env

    result = PipelineResult()

    def stage(name: str, func: Callable[[], str]) -> None:
        start = time.perf_counter()
        line = func()
        seconds = time.perf_counter() - start
        result.stages.append((name, seconds, line))
        echo(f"[{name:10s}] {seconds:7.1f} s  {line}")

    available: list[str] = []

    def do_download() -> str:
        done = []
        for name in ("coat", "ml-100k", "yahoo"):
            source = env_source(name)
            if name == "yahoo" and source is None and not raw_present(name):
                done.append(f"yahoo skipped (set {source_env('yahoo')} to your Webscope copy)")
                continue
            if not raw_present(name) or source:
                download_from_env(name, quiet=True)
            available.append(name)
            done.append(f"{name} ok")
        return "; ".join(done) + f" (in {data_dir()})"

    def do_preprocess() -> str:
        from atrec.data.datastats import data_stats
        from atrec.data.preprocess import load_data

        parts = []
        for name in available:
            stats = data_stats(load_data(name))
            kl = f", KL {stats['kl']:.3f}" if stats.get("kl") is not None else ""
            parts.append(f"{name}: {stats['users']} users, {stats['items']} items, "
                         f"{stats['train_ratings']} ratings{kl}")
        return "; ".join(parts)

    table_sets: list[str] = []  # filled once the download stage knows what is available
    params = "tuned" if tune else "published"

    def do_tune() -> str:
        from atrec import tuning

        studies = tuning.tune_all(table_sets, list(table1_propensities()), [False, True], trials=trials,
                                  quiet=True)
        return f"{len(studies)} studies x {trials} trials; best parameters in {tuning_path()}"

    def do_train() -> str:
        from atrec.experiments.training import TrainRequest, train

        outcomes = train(TrainRequest(table_sets, list(table1_propensities()), [False, True],
                                      list(range(seeds)), params=params),
                         scheduler=scheduler, echo=progress)
        trained = sum(len(o.trained) for o in outcomes)
        reused = sum(len(o.reused) for o in outcomes)
        return (f"{len(outcomes)} configurations on {', '.join(table_sets)}: {trained} runs "
                f"trained, {reused} reused ({params} parameters)")

    def do_variance() -> str:
        from atrec.experiments import variance as var

        out = var.reproduce_variance(seeds=seeds, tune_trials=trials if tune else None,
                                     echo=progress)
        result.outputs.update(out.outputs)
        return out.summary

    def do_report() -> str:
        from atrec.fileio import atomic_write_text
        from atrec.reporting.report import report

        out = report(datasets=table_sets, fmt="markdown", std=True, ndcg="both", compare="paper",
                     stats=True, params=params, expected_seeds=seeds)
        path = results_dir() / "report.md"
        atomic_write_text(path, out.text + "\n")
        result.outputs["report"] = path
        for fig in out.figures:
            result.outputs[f"figure {fig.name}"] = fig
        return f"{path} and {len(out.figures)} figure files under {results_dir() / 'figures'}"

    def do_check() -> str:
        from atrec.evaluation.check import check, render_check
        from atrec.fileio import atomic_write_text

        res = check(datasets=table_sets, params_label=params, expected_seeds=seeds)
        path = results_dir() / "check.txt"
        atomic_write_text(path, render_check(res) + "\n")
        result.outputs["check"] = path
        result.passed = res.passed
        return f"{'PASSED' if res.passed else 'FAILED'} ({path})"

    stage("download", do_download)
    stage("preprocess", do_preprocess)
    table_sets.extend(d for d in ("yahoo", "coat") if d in available)
    if not table_sets:
        raise AtrecError("neither Coat nor Yahoo! R3 is available: give a source with "
                         "ATREC_COAT_SOURCE or run 'atrec download coat'")
    if tune:
        stage("tune", do_tune)
    stage("train", do_train)
    if variance and "ml-100k" in available:
        stage("variance", do_variance)
    stage("report", do_report)
    stage("check", do_check)
    result.outputs.setdefault("records", results_dir() / "runs")
    return result


def tuning_path() -> Path:
    from atrec.experiments.params import tuned_params_path

    return tuned_params_path()
