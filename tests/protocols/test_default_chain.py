"""Every protocol's default parameter chain: ``atrec train --protocol ijcai2022`` without
``--params`` reads the protocol's reference values first and, for a configuration they lack,
the values ``atrec tune --protocol ijcai2022`` made, as saito2020's chain does."""

import json

import yaml
from click.testing import CliRunner

from atrec.cli import main
from atrec.protocols import PROTOCOLS, get_protocol
from atrec.params.lookup import get_params

TRAIN = ["train", "--protocol", "ijcai2022", "--dataset", "coat", "--method", "mf-ips",
         "--propensity", "item", "--seeds", "1", "--quiet", "--format", "json"]


def test_every_protocol_names_its_chain_and_files():
    for name in PROTOCOLS.names():
        proto = get_protocol(name)
        assert proto.default_params == ",".join(proto.param_sets)
        assert "tuned" not in proto.start_params.split(",")
        assert proto.tuned_params_path().name == "tuned_params.yaml"
        assert get_protocol(proto) is proto        # resolved once, handed down as it is
        assert proto == name and str(proto) == name
    ijcai = get_protocol("ijcai2022")
    assert ijcai.flag == " --protocol ijcai2022" and get_protocol("saito2020").flag == ""
    assert ijcai.tuned_params_path().parent.name == "ijcai2022"


def test_ijcai2022_chain_reads_reference_then_its_tuned_values(coat_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_DATA_DIR", str(coat_dir))
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    runner = CliRunner()
    # without AT: the protocol's reference values, the chain's first set
    result = runner.invoke(main, [*TRAIN, "--without-at"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["params"] == "reference"
    # with AT, no set has values yet: one line naming the command that makes them
    result = runner.invoke(main, [*TRAIN, "--with-at"])
    assert result.exit_code != 0
    assert "no parameters for coat/item-at in reference, tuned" in result.output
    assert "'atrec tune --protocol ijcai2022 --dataset coat --propensity item --with-at'" \
        in result.output
    result = runner.invoke(main, ["tune", "--protocol", "ijcai2022", "--dataset", "coat",
                                  "--propensity", "item", "--with-at", "--trials", "1",
                                  "--quiet"])
    assert result.exit_code == 0, result.output
    path = get_protocol("ijcai2022").tuned_params_path()
    tuned = yaml.safe_load(path.read_text())["coat"]["item-at"]
    result = runner.invoke(main, [*TRAIN, "--with-at"])
    assert result.exit_code == 0, result.output
    [record_path] = [p for p in (tmp_path / "results" / "protocols" / "ijcai2022").rglob(
        "seed-00.json") if "item-at" in p.parts]
    record = json.loads(record_path.read_text())
    assert record["params_source"] == f"tuned:{path}"
    assert record["params"] == {k: tuned[k] for k in record["params"]}
    # the reference values still come first where they exist
    params, label = get_params(get_protocol("ijcai2022").default_params, "coat", "item", False,
                               "mf-ips", "ijcai2022")
    assert label == "reference"
