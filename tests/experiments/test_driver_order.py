"""The driver trains configurations family by family (the ones that share compiled loops) and
releases a family's loops once it has nothing left: one compilation per loop, one family held at
a time, and the same records as a run that keeps every loop."""

from atrec.experiments import driver
from atrec.experiments.fitting import loop_family
from atrec.experiments.groups import plan_config
from atrec.experiments.spec import RunSpec
from atrec.run_settings import ATSettings, TrainSettings
from atrec.params.lookup import HyperParams
from atrec.results.records import load_record, record_path
from atrec.runtime import compiled

SHORT = TrainSettings(steps=20, batch_size=32)
SHORT_AT = ATSettings(pre_steps=6, iterations=2, steps_per_iteration=2, batch_size=32)
SEEDS = (0, 1)
# (propensity, with_at, dim) in the order a user listed them: three families, interleaved
CONFIGS = [("item", False, 4), ("item", True, 4), ("uniform", False, 4), ("uniform", True, 4),
           ("user", False, 3)]


def _spec(propensity, with_at, dim):
    params = HyperParams(dim, 1e-3, 0.2 if with_at else None)
    return RunSpec("tiny", propensity, with_at, params, "published", SEEDS, SHORT,
                   SHORT_AT if with_at else None)


def _work(data, root):
    return [(data, [plan_config(data, _spec(*c), root) for c in CONFIGS])]


def test_groups_come_family_by_family_in_first_appearance_order(tiny_data, tmp_path):
    order = [(plan.spec.propensity, plan.spec.with_at, fam)
             for _, plan, _, fam in driver.by_family(_work(tiny_data, tmp_path))]
    assert [o[:2] for o in order] == [("item", False), ("uniform", False), ("item", True),
                                      ("uniform", True), ("user", False)]
    families = [o[2] for o in order]
    assert families[0] == families[1] != families[2] == families[3] != families[4]
    # the family names what changes the compiled code, not the propensity
    assert loop_family(tiny_data, _spec("item", True, 4)) == \
        loop_family(tiny_data, _spec("nb-true", True, 4))
    assert loop_family(tiny_data, _spec("item", True, 4)) != \
        loop_family(tiny_data, _spec("item", True, 5))


def _metrics(root):
    out = {}
    for c in CONFIGS:
        spec = _spec(*c)
        for seed in SEEDS:
            rec = load_record(record_path("tiny", spec.key, spec.label, seed, root))
            out[(spec.key, seed)] = (rec["metrics"], rec.get("trace"), rec.get("val_loss_trace"))
    return out


def test_a_finished_family_is_released_and_the_records_do_not_change(tiny_data, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")        # keep every loop
    before = compiled.releases
    driver.train_plans(_work(tiny_data, tmp_path / "kept"))
    assert compiled.releases == before
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "1000000")  # a bound no fit reaches: retire alone
    driver.train_plans(_work(tiny_data, tmp_path / "released"))
    assert compiled.releases == before + 2                  # after the 1st and the 2nd family
    kept, released = _metrics(tmp_path / "kept"), _metrics(tmp_path / "released")
    assert len(kept) == len(CONFIGS) * len(SEEDS)
    assert released == kept                                 # bit for bit


def test_retire_keeps_loops_while_a_fit_runs_or_with_no_bound(monkeypatch):
    calls = []
    monkeypatch.setattr(compiled, "release", lambda: calls.append(1))
    monkeypatch.setattr(compiled, "_keys", {"a"})
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")
    assert not compiled.retire() and calls == []
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "1000000")
    with compiled.before_fit("a"):
        assert not compiled.retire() and calls == []       # a fit is running
    assert compiled.retire() and calls == [1]
    monkeypatch.setattr(compiled, "_keys", set())
    assert not compiled.retire()                            # nothing held
