"""What an interrupted run says it leaves (StageProgress.interrupted): the seeds left and the
command that resumes them, or, when Ctrl-C came after the last seed was saved, that nothing is
left to resume."""

from atrec.experiments.progress import StageProgress


def test_an_interrupted_stage_names_what_a_rerun_resumes():
    stage = StageProgress()
    stage.expect(2, 10)
    stage.saved("coat item", 5)
    stage.done("coat item", 5, 0)
    stage.saved("coat item-at", 2)
    line = stage.interrupted()
    assert line == ("1 of 2 configurations done, 2 seed(s) of coat item-at saved; 3 of 10 seeds "
                    "left: run the same command again to resume them")


def test_with_nothing_left_it_does_not_ask_for_a_rerun():
    stage = StageProgress()
    stage.expect(1, 4)
    stage.reused(1)
    stage.saved("coat item", 3)
    line = stage.interrupted()
    assert line == ("0 of 1 configurations done, 3 seed(s) of coat item saved; all 4 seeds "
                    "saved: nothing left to resume")
    assert "resume them" not in line


def test_binary_ips_has_a_name_of_its_own_in_progress_lines():
    """MF-IPS's configuration key names no method; without a propensity (the binary protocols'
    IPS) its lines said only 'coat none'."""
    from atrec.experiments.groups import ConfigPlan
    from atrec.experiments.spec import RunSpec
    from atrec.params.lookup import HyperParams

    def name(propensity, method, with_at=False, protocol="binary-icde24"):
        spec = RunSpec("coat", propensity, with_at, HyperParams(4, 0.1), "reference", (0,),
                       method=method, protocol=protocol)
        return ConfigPlan(spec, None, [], None).name

    assert name("none", "mf-ips") == "coat mf-ips/none"
    assert name("none", "mf-ips", True) == "coat mf-ips/none-at"
    assert name("none", "mf") == "coat mf/none"
    assert name("item", "mf-ips", protocol="saito2020") == "coat item"   # as before
