"""One behaviour across protocols: each command run under every registered protocol gives the
same kind of answer: neither AT flag means both, the protocol's own default table, hints that
keep --protocol, exit code 3 for missing results, 'did you mean' for a misspelt name, and notes
that say what a method does with --propensity or inside AT."""

import pytest
from click.testing import CliRunner

from atrec.cli import main
from atrec.cli import training as cli_training
from atrec.protocols import get_protocol, protocol_names

PROTOCOLS = protocol_names()
# a method each protocol runs, and one it does not (or None)
METHOD = {p: "mf-ips" for p in PROTOCOLS}
FOREIGN = {p: ("cause" if get_protocol(p).view == "binary" else "dt-ips") for p in PROTOCOLS}
# a dataset each protocol trains on (the truth protocols: ML-100K alone), and a misspelling of it
DATASET = {p: get_protocol(p).datasets[0] for p in PROTOCOLS}
MISSPELT = {"coat": "caot", "ml-100k": "ml-10k", "yahoo": "yaho"}


def test_all_four_protocols_are_covered():
    assert {"saito2020", "ijcai2022", "binary-icde24", "binary-clean"} <= set(PROTOCOLS)


@pytest.fixture
def folders(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("ATREC_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


@pytest.fixture
def asked(monkeypatch):
    """What train and tune were asked for (nothing runs)."""
    seen = []
    monkeypatch.setattr(cli_training, "train", lambda request, **kw: seen.append(request) or [])
    monkeypatch.setattr(cli_training, "tune", lambda request, **kw: seen.append(request) or [])
    return seen


def _flag(protocol):
    return [] if get_protocol(protocol).is_default else ["--protocol", protocol]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("command", ["train", "run", "tune"])
def test_neither_at_flag_means_both(protocol, command, folders, asked):
    args = [command, "--dataset", DATASET[protocol], "--method", METHOD[protocol], "--propensity",
            "item",
            "--quiet", *_flag(protocol)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert list(asked[0].at_options) == [False, True]
    one = CliRunner().invoke(main, [*args, "--without-at"])
    assert one.exit_code == 0 and list(asked[1].at_options) == [False]


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if get_protocol(p).view == "binary"])
def test_methods_that_cannot_serve_in_at_are_skipped_with_a_note(protocol, folders, asked):
    result = CliRunner().invoke(main, ["train", "--method", "all", "--with-at", "--quiet",
                                       "--dataset", DATASET[protocol], *_flag(protocol)])
    assert result.exit_code == 0, result.output
    assert "note: multi-ips" in result.output and "cannot serve in AT" in result.output
    assert "multi-ips" in asked[0].methods


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if get_protocol(p).view == "binary"])
def test_a_binary_method_with_its_own_propensity_says_so(protocol, folders, asked):
    result = CliRunner().invoke(main, ["train", "--method", "mf-ips,dt-ips,mf", "--propensity",
                                       "item", "--quiet", "--dataset", DATASET[protocol],
                                       *_flag(protocol)])
    assert result.exit_code == 0, result.output
    assert ("note: mf-ips, dt-ips weight by their own propensity (learned in the run): "
            "--propensity item does not apply to them") in result.output
    assert "note: mf uses no propensity" in result.output
    assert "mf-ips, dt-ips use no propensity" not in result.output


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_names_misspelt_or_of_another_view_are_one_line_with_a_hint(protocol, folders):
    misspelt = CliRunner().invoke(main, ["train", "--method", "mf-isp", *_flag(protocol)])
    assert misspelt.exit_code == 2 and "did you mean 'mf-ips'?" in misspelt.output
    assert len(misspelt.output.strip().splitlines()) == 1
    foreign = CliRunner().invoke(main, ["train", "--method", FOREIGN[protocol], *_flag(protocol)])
    assert foreign.exit_code == 2 and len(foreign.output.strip().splitlines()) == 1
    assert f"method '{FOREIGN[protocol]}' under protocol '{protocol}': it is a" \
        in foreign.output and "give --protocol" in foreign.output
    name = DATASET[protocol]
    dataset = CliRunner().invoke(main, ["train", "--dataset", MISSPELT[name], *_flag(protocol)])
    assert dataset.exit_code == 2 and f"did you mean '{name}'?" in dataset.output


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_report_export_and_check_without_results(protocol, folders):
    """The protocol's default table without --table, exit code 3 for missing results, and a
    hint that keeps --protocol."""
    runner = CliRunner()
    flag = _flag(protocol)
    keep = f"--protocol {protocol}" if flag else ""
    report = runner.invoke(main, ["report", "--dataset", "coat", "--no-figures", *flag])
    assert report.exit_code == 3, report.output
    assert report.output.startswith("error: no results") and keep in report.output
    export = runner.invoke(main, ["export", *flag])
    assert export.exit_code == 3 and keep in export.output
    check = runner.invoke(main, ["check", *flag])
    if get_protocol(protocol).is_default:
        assert check.exit_code == 3 and check.output.startswith("error: no results")
    else:
        assert check.exit_code == 2 and "has no published table" in check.output
    for result in (report, export, check):
        assert len(result.output.strip().splitlines()) == 1, result.output


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_corrupt_records_hint_keeps_its_protocol(protocol):
    from atrec.errors import AtrecError
    from atrec.evaluation.record_checks import check_record as _check_record

    again = "'atrec train'" if get_protocol(protocol).is_default else (
        f"'atrec train --protocol {protocol}'")
    with pytest.raises(AtrecError, match=f"lacks 'propensity': delete it and rerun {again}"):
        _check_record({"protocol": {"name": protocol}, "dataset": "coat"})


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tune_says_what_it_optimises_where_there_is_no_validation_split(protocol, folders,
                                                                        asked):
    result = CliRunner().invoke(main, ["tune", "--method", METHOD[protocol], "--propensity",
                                       "item", "--dataset", DATASET[protocol], *_flag(protocol)])
    assert result.exit_code == 0, result.output
    said = "has no validation split: each trial's objective is its last epoch's training loss"
    assert (said in result.output) == (not get_protocol(protocol).has_validation)
    # binary-icde24's training: itself and the protocol gap's step that keeps it
    assert (protocol in ("binary-icde24", "binary-icde24-cleantest")) == (
        not get_protocol(protocol).has_validation)
    # the note after a tune names the protocol whose tuned values it wrote
    assert ("--protocol " + protocol in result.output) == (not get_protocol(protocol).is_default)
