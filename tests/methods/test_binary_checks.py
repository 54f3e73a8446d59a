"""The binary conformance checks fail where they should: a class that breaks the contract is
named with the check it fails, and ``check_method`` gives a binary class the binary contract
(atrec.testing.binary)."""

import pytest

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.methods.binary.ips import BinaryMF, reference_table
from atrec.methods.options import Option
from atrec.runtime import tf
from atrec.testing import check_binary_method, check_method
from atrec.testing.binary import BinaryMethodChecks

VALUES = {"dim": 4, "lam": 1e-4, "lr": 0.01, "batch_size": 128}


def _swapped_labels_step(state, b):
    # each replica learns its pairs with the NEXT replica's labels: replicas leak
    labels = tf.roll(b.labels, 1, axis=0)

    def loss(p):
        return tf.reduce_mean(losses.bce(bm.mf_prob(p, "pred", b.users, b.items), labels), -1)
    return state.minimize("pred", loss)


def _binary(name: str, **attrs) -> type:
    body = {"name": name, "label": name, "description": "a broken binary MF",
            "serves_in_at": False,
            "reference_params": reference_table(name, VALUES, VALUES), **attrs}
    return type(name.title().replace("-", ""), (BinaryMF,), body)


def test_a_sound_class_passes_its_declarations():
    checks = BinaryMethodChecks(_binary("sound-mf"))
    checks.declares_the_contract()
    checks.reference_values()
    checks.bad_hyperparameters()


@pytest.mark.parametrize("attrs, check, message", [
    ({"leaks": True}, "declares_the_contract", "a method that leaks declares uses_mcar"),
    ({"reference_forms": "the code's bug"}, "declares_the_contract",
     "declares the form option"),
    ({"options": (Option("scale", (("one", "as is"),), "two"),)}, "declares_the_contract",
     "option scale's default 'two' is not among one"),
    ({"reference_params": {d: {**v, "x-mf/none-at": {**VALUES, "epsilon": 0.1}}
                           for d, v in reference_table("x-mf", VALUES, VALUES).items()}},
     "reference_values", "has entry 'x-mf/none-at'"),
    ({"reference_params": {"coat": reference_table("x-mf", VALUES, VALUES)["coat"]}},
     "reference_values", "no reference values for yahoo"),
    ({"reference_params": reference_table("x-mf", VALUES, {**VALUES, "lr": -1.0})},
     "reference_values", "lr"),
])
def test_a_broken_declaration_is_named_with_its_check(attrs, check, message):
    cls = _binary("x-mf", **attrs)
    with pytest.raises(AssertionError, match=f"class XMf fails check '{check}'") as err:
        check_binary_method(cls)
    assert message in str(err.value)


def test_check_method_gives_a_binary_class_the_binary_contract():
    with pytest.raises(AssertionError, match="binary method class XMf fails check "
                                             "'declares_the_contract'"):
        check_method(_binary("x-mf", reference_forms="the code's bug"))


def test_replicas_that_read_each_other_fail_the_independence_check():
    cls = _binary("leaky-mf", step=staticmethod(_swapped_labels_step))
    checks = BinaryMethodChecks(cls)
    checks.result_shapes("binary-icde24")        # shapes and epochs are no defence
    with pytest.raises(AssertionError, match="seed 0's scores beside seed 1"):
        checks.replicas_are_independent("binary-icde24")


def test_a_plugins_options_are_checked_each_value_under_each_protocol():
    """A plug-in's own option is checked as the built-ins' are: one fit per value under each
    binary protocol (atrec.methods.options.option_cases), each fit with the value it names."""
    seen = []

    class Scaled(BinaryMF):
        name, label, description, serves_in_at = "scaled-mf", "Scaled MF", "MF", False
        reference_params = reference_table("scaled-mf", VALUES, VALUES)
        options = (Option("scale", (("one", "as is"), ("half", "half the lr")), "one",
                          "the learning rate's scale"),)

        def fit(self, problem, params, settings):
            seen.append((settings.stopping, self.option_values["scale"]))
            if self.option_values["scale"] == "half":
                params = {**params, "lr": params["lr"] / 2}
            return super().fit(problem, params, settings)

    check_binary_method(Scaled)
    assert set(seen) == {(s, v) for s in ("reference", "validation") for v in ("one", "half")}
