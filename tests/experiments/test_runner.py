import csv
from importlib import resources

import pytest
from click.testing import CliRunner

from atrec.cli import main
from atrec.errors import AtrecError
from atrec.experiments.driver import run_config
from atrec.experiments.spec import RunSpec
from atrec.experiments.seeds import parse_seeds
from atrec.experiments.training import TrainRequest, train
from atrec.learners import mf
from atrec.propensity.registry import table1_propensities
from atrec.params.lookup import HyperParams
from atrec.results.records import record_path


@pytest.mark.parametrize("spec, seeds", [
    ("3", [0, 1, 2]), (2, [0, 1]), ("2-4", [2, 3, 4]), ("1,5,2", [1, 5, 2]), ("0-1,1,7", [0, 1, 7]),
])
def test_parse_seeds(spec, seeds):
    assert parse_seeds(spec) == seeds


@pytest.mark.parametrize("spec", ["0", "a", "4-2", "1,,x", "-3"])
def test_parse_seeds_rejects(spec):
    with pytest.raises(AtrecError, match="--seeds"):
        parse_seeds(spec)


def _spec(seeds=(0, 1, 2)):
    return RunSpec("tiny", "item", False, HyperParams(4, 1e-3), "published", tuple(seeds),
                   mf.TrainSettings(steps=20, batch_size=32))


def test_records_are_written_and_reruns_resume(tiny_data, tmp_path):
    first = run_config(tiny_data, _spec(), tmp_path)
    assert first.trained == [0, 1, 2] and first.reused == []
    rec = first.records[1]
    assert rec["seed"] == 1 and rec["model_seed"] == 1 and rec["batch_seed"] == 12345
    assert rec["params"] == {"dim": 4, "lam": 1e-3}
    assert set(rec["metrics"]) >= {"mae", "mse", "ndcg3_paper", "ndcg3_standard", "best_step"}
    assert {"command", "atrec_version", "packages", "data_checksums"} <= set(rec["provenance"])
    assert len(rec["val_loss_trace"]) == 20
    path = record_path("tiny", "item", "published", 1, tmp_path)
    assert path.exists()
    # a rerun reuses everything; losing one record recomputes only that seed, identically
    again = run_config(tiny_data, _spec(), tmp_path)
    assert again.trained == [] and again.reused == [0, 1, 2]
    path.unlink()
    third = run_config(tiny_data, _spec(), tmp_path)
    assert third.trained == [1] and third.reused == [0, 2]
    assert third.records[1]["metrics"]["mse"] == pytest.approx(rec["metrics"]["mse"], rel=1e-6)
    forced = run_config(tiny_data, _spec(), tmp_path, force=True)
    assert forced.trained == [0, 1, 2]


def test_cli_bad_options_are_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    runner = CliRunner()
    cases = [
        (["train", "--propensity", "popularity"], "unknown propensity 'popularity'"),
        (["train", "--dataset", "netflix"], "unknown dataset 'netflix'"),
        (["train", "--seeds", "x"], "--seeds x"),
        (["train", "--params", str(tmp_path / "nope.yaml")], "does not exist"),
        (["train", "--dataset", "coat", "--propensity", "item"], "atrec download coat"),
    ]
    for args, fragment in cases:
        result = runner.invoke(main, args)
        assert result.exit_code != 0, args
        assert fragment in result.output, (args, result.output)
        assert "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output


def _paper(with_at: bool) -> dict:
    text = (resources.files("atrec") / "resources" / "paper_table1.csv").read_text()
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {r["propensity"]: r for r in rows
            if r["dataset"] == "coat" and r["with_at"] == str(with_at).lower()}


@pytest.mark.slow
def test_coat_without_at_reproduces_table1_within_one_percent(coat_data, tmp_path, monkeypatch):
    """All six propensities, published parameters, 20 seeds (about 10 s on 2 cores)."""
    monkeypatch.setattr("atrec.experiments.plan.load_data", lambda name: coat_data)
    outcomes = train(TrainRequest(["coat"], list(table1_propensities()), [False], list(range(20))),
                     root=tmp_path)
    paper = _paper(False)
    for outcome in outcomes:
        recs = outcome.records
        assert len(recs) == 20
        for metric in ("mae", "mse"):
            mean = sum(r["metrics"][metric] for r in recs) / 20
            published = float(paper[outcome.spec.propensity][metric])
            assert abs(mean / published - 1) < 0.01, (outcome.spec.propensity, metric, mean)
        ndcg = sum(r["metrics"]["ndcg3_paper"] for r in recs) / 20
        assert abs(ndcg - float(paper[outcome.spec.propensity]["ndcg3_paper"])) < 0.005


def test_protocol_variants_are_filed_and_summarised_apart(tiny_data, tmp_path):
    from atrec.evaluation.summary import resolve_params_label, summarize

    base = _spec((0, 1))
    ips = RunSpec(base.dataset, base.propensity, False, base.params, "published", (0, 1),
                  mf.TrainSettings(steps=20, batch_size=32, loss="ips", batch_seed=None))
    assert base.label == "published" and ips.label == "published+ips+per-seed"
    a = run_config(tiny_data, base, tmp_path)
    b = run_config(tiny_data, ips, tmp_path)
    assert b.trained == [0, 1]  # the protocol's records are not reused for the variant
    assert record_path("tiny", "item", "published+ips+per-seed", 0, tmp_path).exists()
    assert b.records[0]["variant"] == "+ips+per-seed" and a.records[0]["variant"] == ""
    records = a.records + b.records
    protocol = summarize(records, params="published", expected_seeds=2)
    variant = summarize(records, params=resolve_params_label("published+ips+per-seed"),
                        expected_seeds=2)
    cell = protocol.cell("tiny", "item", False, "mse")
    assert cell.values == tuple(r["metrics"]["mse"] for r in a.records)
    assert variant.cell("tiny", "item", False, "mse").values == tuple(
        r["metrics"]["mse"] for r in b.records)


def test_a_fitted_propensitys_diagnostics_go_into_the_records(tiny_data, tmp_path):
    """1bit-mc leaves ``diagnostics`` after each estimate: each seed's record keeps its own in
    ``protocol.propensity_fit``; an estimator without diagnostics adds nothing."""
    spec = RunSpec("tiny", "1bit-mc", False, HyperParams(4, 1e-3), "published", (0, 1),
                   mf.TrainSettings(steps=5, batch_size=32))
    out = run_config(tiny_data, spec, tmp_path)
    fits = [rec["protocol"]["propensity_fit"] for rec in out.records]
    assert all(f["converged"] and f["iterations"] >= 1 and f["duality_gap"] >= -1e-6
               for f in fits)
    assert fits[0]["objective"] != fits[1]["objective"]  # two splits, two fits
    plain = run_config(tiny_data, _spec((0,)), tmp_path)
    assert "propensity_fit" not in plain.records[0]["protocol"]


def test_the_records_name_the_budget_of_their_values(tiny_data, tmp_path):
    """The plan stores how the values were made (params_budget) and each record keeps it, so a
    table reads it from the run; a spec without one (older callers) writes none."""
    spec = RunSpec("tiny", "item", False, HyperParams(4, 1e-3), "tuned-atrec", (0,),
                   mf.TrainSettings(steps=5, batch_size=32), params_budget="50 trials")
    rec = run_config(tiny_data, spec, tmp_path).records[0]
    assert rec["params_budget"] == "50 trials" and rec["params_source"] == "tuned-atrec"
    assert "params_budget" not in run_config(tiny_data, _spec((0,)), tmp_path).records[0]
