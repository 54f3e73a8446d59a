"""binary-icde24 indexes Yahoo by its 1-based ids (docs/protocols.md, "binary-icde24"): the split
has one more user and item row than the data, and the run's tables must be sized by the split, or
the highest ids fall off the tables (a Yahoo-size run used to stop with a gather out of range)."""

from dataclasses import replace

import numpy as np

from atrec.experiments.fitting import compute_group
from atrec.experiments.spec import RunSpec
from atrec.params.lookup import HyperParams


def test_a_yahoo_run_under_icde24_trains_its_highest_ids(tiny_data):
    yahoo = replace(tiny_data, name="yahoo")
    # the data's last user and item both appear, so their shifted ids are the tables' last rows
    assert tiny_data.train.user.max() == tiny_data.num_users - 1
    assert tiny_data.test.item.max() == tiny_data.num_items - 1
    params = HyperParams.from_values({"dim": 4, "lam": 1e-4, "lr": 0.05, "batch_size": 64})
    spec = RunSpec("yahoo", "none", False, params, "test", (0,), method="mf",
                   protocol="binary-icde24")
    records, _ = compute_group(yahoo, spec, [0])
    assert np.isfinite(records[0]["metrics"]["auc"])
