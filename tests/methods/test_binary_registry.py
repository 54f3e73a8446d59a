"""The binary methods' registry: a protocol's view picks the registry, a binary name shared with
a 1-5 star method means the binary one under a binary protocol, and 'atrec methods' lists them."""

import json

import pytest
from click.testing import CliRunner

from atrec.cli import main
from atrec.errors import AtrecError
from atrec.methods.binary.ips import BinaryIPS
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.methods.mf_ips import MFIPS
from atrec.methods.registry import method_class, registry_for


def test_the_protocol_picks_the_registry():
    assert method_class("mf-ips") is MFIPS
    assert method_class("mf-ips", "ijcai2022") is MFIPS
    assert method_class("mf-ips", "binary-icde24") is BinaryIPS
    assert registry_for("binary-clean") is BINARY_METHODS
    with pytest.raises(AtrecError, match="unknown binary method 'cause'"):
        method_class("cause", "binary-icde24")


def test_a_star_method_is_refused_by_the_binary_registry():
    with pytest.raises(ValueError, match="view = 'binary'"):
        BINARY_METHODS.register(type("Star", (MFIPS,), {"name": "star-x", "label": "X"}))


def test_methods_lists_the_binary_methods_apart():
    out = CliRunner().invoke(main, ["methods", "--format", "json"])
    assert out.exit_code == 0, out.output
    listed = json.loads(out.output[:out.output.rindex("}") + 1])
    names = [row["method"] for row in listed["binary_methods"]]
    assert names[:3] == ["mf", "mf-ips", "mf-snips"]
    assert "cause" in [row["method"] for row in listed["methods"]] and "cause" not in names
    forms = {row["method"]: row["code's form"] for row in listed["binary_methods"]}
    assert "not weighted" in forms["dr-jl"] and forms["mf"] == "-"


def test_a_binary_protocols_tuned_file_is_checked_against_its_own_methods(tmp_path):
    from atrec.params.lookup import read_tuned_file

    path = tmp_path / "tuned_params.yaml"
    path.write_text("coat:\n  mf/none: {dim: 10, lam: 0.001, lr: 0.01, batch_size: 128}\n")
    assert read_tuned_file(path, "binary-clean")["coat"]["mf/none"]["lr"] == 0.01
    with pytest.raises(AtrecError, match="unknown configuration 'mf/none'"):
        read_tuned_file(path)           # 'mf' is no 1-5 star method
    path.write_text("coat:\n  mf/none: {dim: 10, lam: 0.001, lr: 0.01, batch: 128}\n")
    with pytest.raises(AtrecError, match="unknown hyperparameter 'batch'"):
        read_tuned_file(path, "binary-clean")


def test_a_users_parameter_file_is_read_with_the_binary_protocols_methods(tmp_path):
    """'--params FILE' under a binary protocol: the file's binary method is found and its
    values validated by the binary class, alone and in a chain; under saito2020 it is not."""
    from atrec.params.lookup import get_params

    path = tmp_path / "mine.yaml"
    path.write_text("coat:\n  mf/none: {dim: 6, lam: 0.001, lr: 0.02, batch_size: 256}\n")
    for source in (str(path), f"{path},reference"):
        params, label = get_params(source, "coat", "none", False, "mf", "binary-icde24")
        assert (params.dim, dict(params.extra)["lr"]) == (6, 0.02)
        assert label == f"file:{path.resolve()}"
    with pytest.raises(AtrecError, match="unknown configuration 'mf/none'"):
        get_params(str(path), "coat", "none", False, "mf-ips")
    path.write_text("coat:\n  mf/none: {dim: 6, lam: 0.001, lr: 0.02, batch: 256}\n")
    with pytest.raises(AtrecError, match="unknown hyperparameter 'batch'"):
        get_params(str(path), "coat", "none", False, "mf", "binary-clean")


def test_binary_clean_takes_shipped_tuned_values_first_then_the_reference():
    from atrec.protocols import get_protocol
    from atrec.params.lookup import get_params

    chain = ",".join(get_protocol("binary-clean").param_sets)
    assert chain.startswith("tuned-atrec,reference")
    _, label = get_params(chain, "coat", "none", False, "mf-ips", "binary-clean")
    assert label == "tuned-atrec"
    # an old name of binary-clean's default form is that run: its tuned values
    assert get_params(chain, "coat", "none", False, "dr-jl-textbook", "binary-clean") == \
        get_params(chain, "coat", "none", False, "dr-jl", "binary-clean")
    # the shipped file tunes each method's default form only: the code's form has no entry
    # there and reads the script's constants, not the corrected form's tuned values
    values, label = get_params(chain, "coat", "none", False, "dr-jl[form=coded]", "binary-clean")
    assert label == "reference"
    assert values != get_params(chain, "coat", "none", False, "dr-jl", "binary-clean")[0]
    # a form without a tuned entry: the script's constants, the same in either form
    values, label = get_params(chain, "coat", "none", False, "dr+form=coded", "binary-clean")
    assert label == "reference" and values.dim == 16


def test_a_method_that_cannot_serve_in_at_is_skipped_there_and_refused_alone():
    from atrec.methods.registry import at_skipped, configurations

    assert configurations(["mf"], [], [True], "coat", "binary-icde24") == [("mf", "none", True)]
    # Multi-IPS's predictor is a tower, not the MF whose probabilities AT's third model learns:
    # beside others it runs without AT only (the commands say so), alone with AT it is refused
    assert configurations(["mf", "multi-ips"], [], [False, True], "coat", "binary-icde24") == [
        ("mf", "none", False), ("mf", "none", True), ("multi-ips", "none", False)]
    assert configurations(["mf", "multi-ips"], [], [True], "coat", "binary-icde24") == [
        ("mf", "none", True)]
    assert at_skipped(["mf", "multi-ips"], [False, True], "binary-icde24") == ["multi-ips"]
    assert at_skipped(["mf", "multi-ips"], [False], "binary-icde24") == []
    with pytest.raises(AtrecError, match="multi-ips cannot serve in AT .* --without-at"):
        configurations(["multi-ips"], [], [True], "coat", "binary-icde24")
