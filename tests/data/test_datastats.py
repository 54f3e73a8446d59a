"""The data statistics table: golden values by hand and from docs/data.md."""

import math

import pytest
from conftest import SHARED  # noqa: E402  (tests/ is on sys.path)

from atrec.data.datastats import STATS_COLUMNS, data_stats, kl_divergence, rating_shares, stats_rows
from atrec.data.preprocess import parse_coat_matrix
from atrec.data.ratings import RatingData, Ratings
from atrec.data.synthetic import SOURCE
from atrec.reporting.tables import render


def _toy() -> RatingData:
    # train ratings 1, 1, 5, 5 and test ratings 1, 1, 1, 5 on 2 users x 4 items
    train = Ratings.from_arrays([0, 0, 1, 1], [0, 1, 2, 3], [1, 1, 5, 5])
    test = Ratings.from_arrays([0, 1, 0, 1], [2, 0, 3, 1], [1, 1, 1, 5])
    return RatingData("toy", train, test, 2, 4, {})


def test_a_store_of_synthetic_data_names_its_generator_in_the_statistics():
    made = RatingData("yahoo", _toy().train, _toy().test, 2, 4, {SOURCE: "YAHOO_SIZE, seed 0"})
    assert data_stats(made)["synthetic"] == "YAHOO_SIZE, seed 0"
    assert data_stats(_toy())["synthetic"] is None


def test_hand_computed_toy():
    s = data_stats(_toy())
    assert (s["users"], s["items"], s["train_ratings"], s["test_ratings"]) == (2, 4, 4, 4)
    assert s["sparsity"] == 0.5
    assert s["train_mean"] == 3.0 and s["test_mean"] == 2.0
    assert s["train_shares"] == [0.5, 0, 0, 0, 0.5] and s["test_shares"] == [0.75, 0, 0, 0, 0.25]
    # 0.5 ln(0.5 / 0.75) + 0.5 ln(0.5 / 0.25) = 0.5 ln(4 / 3)
    assert s["kl"] == pytest.approx(0.5 * math.log(4 / 3), rel=1e-12)


def test_kl_edge_cases():
    assert kl_divergence([0.2, 0.8], [0.2, 0.8]) == 0.0
    assert kl_divergence([0.0, 1.0], [0.5, 0.5]) == pytest.approx(math.log(2))
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf
    assert rating_shares(Ratings.from_arrays([], [], [])) is None


def test_yahoo_shares_from_provenance_give_0_4689():
    # docs/data.md: histograms of Yahoo! R3 (train 311,704; test 54,000 ratings)
    train = [97844, 39652, 49131, 48480, 76597]
    test = [28417, 13064, 7770, 3371, 1378]
    p = [c / sum(train) for c in train]
    q = [c / sum(test) for c in test]
    assert round(kl_divergence(p, q), 4) == 0.4689


def test_coat_from_the_real_files():
    train = parse_coat_matrix(SHARED / "coat" / "train.ascii")
    test = parse_coat_matrix(SHARED / "coat" / "test.ascii")
    s = data_stats(RatingData("coat", train, test, 290, 300, {}))
    assert round(s["kl"], 4) == 0.0490  # docs/data.md; paper 0.049
    assert [round(x, 4) for x in s["train_shares"]] == [0.2731, 0.2065, 0.2467, 0.1832, 0.0905]
    assert [round(x, 4) for x in s["test_shares"]] == [0.4050, 0.1938, 0.2159, 0.1381, 0.0472]
    assert s["sparsity"] == pytest.approx(6960 / 87000)


def test_empty_test_part_and_rows():
    toy = _toy()
    no_test = RatingData("ml", toy.train, Ratings.from_arrays([], [], []), 2, 4, {})
    s = data_stats(no_test)
    assert s["test_mean"] is None and s["kl"] is None and s["test_shares"] is None
    rows = stats_rows([data_stats(toy), s])
    assert [list(r) for r in rows] == [list(STATS_COLUMNS)] * 2
    assert rows[1]["KL(train||test)"] is None and rows[0]["train ratings"] == 4
    assert "toy" in render(rows, "markdown") and render(rows, "csv").count("\n") == 2
