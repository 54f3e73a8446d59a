import numpy as np


def test_records_are_standard_json_with_null_for_nan(tmp_path):
    import json

    from atrec.results.records import load_record, save_record

    path = tmp_path / "r.json"
    save_record({"trace": {"pseudo_loss": np.array([0.5, np.nan]), "n": [np.float32(np.inf), 1]},
                 "m": float("nan")}, path)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    rec = load_record(path, validate=False)  # not a whole record: only the encoding
    assert rec["m"] is None and rec["trace"]["n"] == [None, 1]
    assert np.isnan(np.asarray(rec["trace"]["pseudo_loss"], dtype=float)[1])
