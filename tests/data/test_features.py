"""Side data: Coat's features and shipped propensities, ML-100K's u.user / u.item, refusals."""

import numpy as np
import pytest
from conftest import SHARED  # noqa: E402  (tests/ is on sys.path)

from atrec.data.download import download
from atrec.data.features import load_features, load_shipped_propensities
from atrec.errors import AtrecError, DataError


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("side")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATREC_DATA_DIR", str(folder))
        for name in ("coat", "ml-100k"):
            download(name, source=SHARED / name, quiet=True)
    return folder


def test_coat_features_and_propensities(installed, monkeypatch):
    monkeypatch.setenv("ATREC_DATA_DIR", str(installed))
    f = load_features("coat")
    assert f.user.shape == (290, 14) and f.item.shape == (300, 33)
    assert (f.user.sum(1) == 4).all() and (f.item.sum(1) == 4).all()  # docs/data.md
    assert f.user_names[0] == "gender:men" and len(f.item_names) == 33
    p = load_shipped_propensities("coat")
    first = (SHARED / "coat" / "propensities.ascii").read_text().split("\n")[0].split()
    assert p.shape == (290, 300) and p[0, 0] == float(first[0]) and p[0, -1] == float(first[-1])
    assert abs(p.min() - 0.00253) < 1e-5 and abs(p.max() - 0.69026) < 1e-5


def test_ml100k_features(installed, monkeypatch):
    monkeypatch.setenv("ATREC_DATA_DIR", str(installed))
    f = load_features("ml-100k")
    assert f.user.shape == (943, 2 + 7 + 21) and f.item.shape == (1682, 19 + 7)
    # gender, age group and occupation are one-hot: three ones per user
    assert (f.user.sum(1) == 3).all()
    # user 1 of u.user: 24, M, technician
    assert f.user[0, f.user_names.index("gender:M")] == 1
    assert f.user[0, f.user_names.index("age:18-24")] == 1
    assert f.user[0, f.user_names.index("occupation:technician")] == 1
    # item 1 (Toy Story, 1995): Animation, Children's, Comedy; the 1990s
    assert {f.item_names[k] for k in np.flatnonzero(f.item[0])} == {
        "genre:Animation", "genre:Children's", "genre:Comedy", "decade:1990s"}
    assert (f.item[:, -7:].sum(1) == 1).all()


def test_refusals_and_missing_side_files(data_dir):
    with pytest.raises(AtrecError, match="dataset 'yahoo' has no user / item features"):
        load_features("yahoo")
    with pytest.raises(AtrecError, match="dataset 'ml-100k' ships no propensities: only coat"):
        load_shipped_propensities("ml-100k")
    with pytest.raises(DataError, match="download coat --force"):
        load_shipped_propensities("coat")
