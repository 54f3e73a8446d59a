import math

import pytest
from synthetic_records import WITH, WITHOUT, make_record, paper_values, write_records

from atrec.errors import AtrecError
from atrec.evaluation.summary import Cell, load_summary, resolve_params_label, summarize
from atrec.results.records import params_label

# sd (ddof=1) of the offsets (-0.02, -0.01, 0, 0.01, 0.02): sqrt(0.001 / 4)
SD = math.sqrt(0.001 / 4)
# t_{0.975, 4} = 2.7764451 (printed t tables), half width = t * sd / sqrt(5)
T975_4 = 2.7764451


@pytest.fixture(scope="session")
def root(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("records"))


@pytest.fixture(scope="session")
def summary(root):
    return load_summary(root, params="published", expected_seeds=5)


def test_means_sds_and_cis_match_hand_values(summary):
    cell = summary.cell("coat", "item", True, "mae")
    assert cell.seeds == (0, 1, 2, 3, 4)
    assert cell.values == pytest.approx([0.832 + o for o in WITH])
    assert cell.n == 5
    assert cell.mean == pytest.approx(0.832)
    assert cell.sd == pytest.approx(SD)
    low, high = cell.ci95
    half = T975_4 * SD / math.sqrt(5)
    assert low == pytest.approx(0.832 - half, abs=1e-7)
    assert high == pytest.approx(0.832 + half, abs=1e-7)


def test_every_cell_of_table1_is_present_with_its_paper_mean(summary):
    for (dataset, propensity, with_at), metrics in paper_values().items():
        for metric, value in metrics.items():
            assert summary.mean(dataset, propensity, with_at, metric) == pytest.approx(value)
    assert summary.mean("yahoo", "user", False, "ndcg3_standard") == pytest.approx(0.6)
    assert summary.datasets == ("yahoo", "coat")


def test_other_parameter_sets_are_never_averaged_in(root, summary):
    # the tuned record (coat/uniform seed 0, MAE 9.0) must not leak into the published cell
    assert summary.mean("coat", "uniform", False, "mae") == pytest.approx(0.873)
    tuned = load_summary(root, params="tuned", expected_seeds=5)
    assert tuned.cell("coat", "uniform", False, "mae").values == (9.0,)
    assert tuned.mean("coat", "item", False, "mae") is None
    assert any("1 of 5 seeds" in w for w in tuned.warnings)


def test_no_warning_for_complete_cells_and_one_per_short_configuration(summary, root):
    assert summary.warnings == ()
    twenty = load_summary(root, params="published", expected_seeds=20)
    assert len(twenty.warnings) == 24  # one per configuration, not per metric
    assert "coat/item with AT: 5 of 20 seeds" in " ".join(twenty.warnings)


def test_missing_seed_gives_a_warning_not_an_error(tmp_path):
    root = write_records(tmp_path, datasets=("coat",), skip=[("coat", "user", True, 3)])
    s = load_summary(root, expected_seeds=5)
    cell = s.cell("coat", "user", True, "mse")
    assert cell.seeds == (0, 1, 2, 4)
    assert cell.mean == pytest.approx(1.115 + (0.01 - 0.02 + 0.02 + 0.0) / 4)
    assert s.warnings == (
        "coat/user with AT: 4 of 5 seeds; run the missing seeds for a full table",)


def test_dataset_filter_and_unknown_results(root):
    s = load_summary(root, datasets=["coat"], expected_seeds=5)
    assert s.datasets == ("coat",)
    assert not s.has_results("yahoo") and s.has_results("coat")
    assert s.mean("yahoo", "user", False, "mae") is None


def test_traces_are_stacked_by_seed(summary):
    trace = summary.traces[("coat", "nb-true")]
    assert trace.seeds == (0, 1, 2, 3, 4)
    assert trace.series("test_mse").shape == (5, 100)
    # step 1 of seed 1: 1.3 + WITH[1]; (a)+(b) at the last step of seed 0: 0.5 + 0.1 + 2 * 0.01
    assert trace.series("test_mse")[1, 0] == pytest.approx(1.3 + WITH[1])
    assert trace.series("a+b")[0, -1] == pytest.approx(0.6 + 2 * WITH[0])
    assert ("coat", "nb-true") in summary.traces and len(summary.traces) == 12


def test_non_finite_metric_is_left_out_with_a_warning():
    records = [make_record("coat", "item", False, s, {"mae": v}) for s, v in
               enumerate([0.8, float("nan"), 1.0])]
    s = summarize(records, expected_seeds=2)
    assert s.cell("coat", "item", False, "mae").values == (0.8, 1.0)
    assert any("mae is nan" in w for w in s.warnings)


def test_malformed_records_are_one_line_errors():
    record = make_record("coat", "item", False, 0, {"mae": 1.0})
    del record["metrics"]
    with pytest.raises(AtrecError, match="coat/item seed 0 lacks 'metrics'.*rerun"):
        summarize([record])
    with pytest.raises(AtrecError, match="malformed 'metrics'"):
        summarize([make_record("coat", "item", False, 0, [1.0])])
    with pytest.raises(AtrecError, match="not a JSON object"):
        summarize([[1, 2]])


def test_corrupt_record_file_is_reported_by_load_summary(tmp_path):
    path = tmp_path / "runs" / "coat" / "item" / "published" / "seed-00.json"
    path.parent.mkdir(parents=True)
    path.write_text("{half a record")
    with pytest.raises(AtrecError, match=r"seed-00.json is corrupt \(not valid JSON.*\): delete it"):
        load_summary(tmp_path)


def test_resolve_params_label_matches_the_training_label(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("coat: {}\n")
    assert resolve_params_label("published") == "published"
    assert resolve_params_label("tuned") == "tuned"
    assert resolve_params_label(str(path)) == params_label(f"file:{path.resolve()}")
    assert resolve_params_label("file-0123456789") == "file-0123456789"


@pytest.mark.parametrize("kwargs, message", [
    ({"seeds": (0, 1), "values": (1.0,)}, "equal lengths"),
    ({"seeds": (1, 0), "values": (1.0, 2.0)}, "unique and increasing"),
    ({"seeds": (0,), "values": (1.0,), "metric": "rmse"}, "unknown metric 'rmse'"),
])
def test_cell_validation(kwargs, message):
    args = {"dataset": "coat", "propensity": "item", "with_at": False, "params": "published",
                "metric": "mae"} | kwargs
    with pytest.raises(ValueError, match=message):
        Cell(**args)


def test_single_seed_cell_has_nan_sd_and_ci():
    cell = Cell("coat", "item", False, "published", "mae", (0,), (0.9,))
    assert cell.mean == 0.9 and math.isnan(cell.sd) and all(map(math.isnan, cell.ci95))


def test_offsets_are_a_permutation_so_means_are_exact():
    # guards the fixture's hand-computed design
    assert sorted(WITH) == sorted(WITHOUT) and sum(WITH) == pytest.approx(0.0)
