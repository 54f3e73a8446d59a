"""atrec's contracts as public checks, for plug-in authors and for atrec's own tests.

As scikit-learn's ``check_estimator`` and Optuna's ``optuna.testing`` do, one line in a
plug-in's tests checks a new class against everything atrec relies on:

    from atrec.testing import check_method, check_propensity

    def test_my_method_keeps_the_contract():
        check_method(MyMethod)

Each raises ``AssertionError`` naming the class and the first check it fails. The checks one
by one are :class:`~atrec.testing.methods.MethodChecks` and
:class:`~atrec.testing.propensity.PropensityChecks` (atrec's own suite runs each as a test,
over every registered class).
"""

from atrec.testing.binary import BinaryMethodChecks, check_binary_method
from atrec.testing.data import small_data
from atrec.testing.methods import MethodChecks, check_method
from atrec.testing.propensity import PropensityChecks, check_propensity

__all__ = ["BinaryMethodChecks", "MethodChecks", "PropensityChecks", "check_binary_method",
           "check_method", "check_propensity", "small_data"]
