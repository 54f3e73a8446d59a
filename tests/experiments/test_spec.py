"""What a run is (:class:`atrec.experiments.spec.RunSpec`): its protocol resolved once into the
object every step reads, which survives the trip to a Dask worker and compares with its name."""

import pickle

from atrec.experiments.plan import TrainRequest
from atrec.experiments.spec import RunSpec
from atrec.params.lookup import HyperParams
from atrec.protocols import Protocol, get_protocol


def test_a_spec_holds_its_resolved_protocol():
    spec = RunSpec("coat", "none", False, HyperParams(8, 0.1), "reference", (0,),
                   method="mf", protocol="binary-clean")
    assert isinstance(spec.protocol, Protocol) and spec.protocol == "binary-clean"
    assert spec.key == "mf/none"                       # the binary view names every method
    again = pickle.loads(pickle.dumps(spec))           # as a Dask worker receives it
    assert again == spec and again.protocol.name == "binary-clean"
    resolved = get_protocol("ijcai2022")
    assert RunSpec("coat", "item", False, HyperParams(8, 0.1), "reference", (0,),
                   protocol=resolved).protocol is resolved
    default = RunSpec("coat", "item", False, HyperParams(8, 0.1), "published", (0,))
    assert default.protocol == "saito2020" and default.key == "item"


def test_a_request_resolves_its_protocol_once():
    request = TrainRequest(["coat"], ["item"], [False], [0], protocol="ijcai2022")
    assert isinstance(request.protocol, Protocol) and request.protocol.name == "ijcai2022"
    assert TrainRequest(["coat"], ["item"], [False], [0]).protocol == "saito2020"
