"""Flagged nuisance models in the binary benchmark table (atrec.reporting.nuisance): a row with
a seed whose record's nuisance flags are set is marked, its seeds and reasons are noted, and a
row without is not."""

from atrec.names import NO_PROPENSITY, config_key
from atrec.protocols import get_protocol
from atrec.protocols.binary import BINARY_CLEAN_METRICS
from atrec.reporting.benchmark_render import benchmark_report
from atrec.reporting.nuisance import FLAG_MARK, flag_notices, flagged_runs
from atrec.results.records import record_path, save_record

CLEAN = "binary-clean"
BAD = ["propensity AUC 0.510 <= 0.6", "mean weight 0.400 outside [0.8, 1.2]"]


def _record(method, seed, flags):
    metrics = dict.fromkeys(BINARY_CLEAN_METRICS, 0.5)
    record = {"schema": 1, "dataset": "coat", "propensity": NO_PROPENSITY, "with_at": False,
              "method": method, "seed": seed, "params": {"dim": 4},
              "params_source": "reference", "metrics": metrics, "protocol": {"name": CLEAN},
              "provenance": {}}
    if flags is not None:
        record["nuisance"] = {"propensity_auc": 0.51, "mean_weight": 0.4, "flags": flags}
    return record


def test_flagged_runs_count_seeds_and_name_reasons_once():
    records = [_record("mf-ips", 0, BAD), _record("mf-ips", 1, []),
               _record("mf-ips", 2, BAD[:1]), _record("mf", 0, None)]
    got = flagged_runs(records, ["reference"])
    assert list(got) == [("coat", "mf-ips", NO_PROPENSITY)]
    entry = got[("coat", "mf-ips", NO_PROPENSITY)]
    assert entry["seeds"] == [0, 2] and entry["of"] == 3
    assert entry["reasons"] == ["propensity AUC <= 0.6", "mean weight outside [0.8, 1.2]"]
    assert flagged_runs(records, ["tuned"]) == {}
    note = flag_notices(got, lambda m: "IPS")[0]
    assert note.startswith(f"{FLAG_MARK} coat IPS: 2 of 3 seeds")


def test_a_configuration_is_counted_in_the_set_its_row_shows(tmp_path):
    """With several parameter sets, a row shows the first set with records: the flags and the
    seed count are that set's, not the sets' together."""
    root = get_protocol(CLEAN).results_root(tmp_path)

    def save(method, seed, label, flags):
        save_record({**_record(method, seed, flags), "params_source": label},
                    record_path("coat", config_key(NO_PROPENSITY, False, method), label, seed,
                                root))

    for s in range(3):
        save("mf", s, "tuned-atrec", None)
        save("mf-ips", s, "tuned-atrec", [])
    for s in range(2):
        save("mf-ips", s, "reference", BAD)

    def notices(params):
        return [n for n in benchmark_report(root, ["coat"], params, fmt="table",
                                            expected_seeds=2, protocol=CLEAN).notices
                if n.startswith(f"{FLAG_MARK} coat IPS")]

    assert notices("tuned-atrec,reference") == []
    assert notices("reference,tuned-atrec")[0].startswith(f"{FLAG_MARK} coat IPS: 2 of 2 seeds")
    save("mf-ips", 0, "tuned-atrec", BAD)
    assert notices("tuned-atrec,reference")[0].startswith(f"{FLAG_MARK} coat IPS: 1 of 3 seeds")


def test_the_benchmark_marks_the_flagged_row_and_notes_it(tmp_path):
    root = get_protocol(CLEAN).results_root(tmp_path)
    for method, flags in (("mf", None), ("mf-ips", BAD)):
        for s in range(2):
            save_record(_record(method, s, flags if s == 1 else []),
                        record_path("coat", config_key(NO_PROPENSITY, False, method),
                                    "reference", s, root))
    out = benchmark_report(root, ["coat"], "reference", fmt="table", expected_seeds=2,
                           protocol=CLEAN)
    rows = {line.split()[1]: line for line in out.text.splitlines()
            if line.startswith("Coat ")}
    assert f"IPS{FLAG_MARK}" in rows and f"MF{FLAG_MARK}" not in rows and "MF" in rows
    assert any(n.startswith(f"{FLAG_MARK} coat IPS: 1 of 2 seeds") for n in out.notices)
