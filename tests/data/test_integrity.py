"""verify_file: the row count is checked before the checksum, for a clearer message."""

import pytest

from atrec.data.catalogue import get_spec
from atrec.data.integrity import verify_file
from atrec.errors import DataError


def test_verify_file_counts_rows_before_the_checksum(tmp_path):
    path = tmp_path / "u.data"
    path.write_bytes(b"1\t2\t3\t4\n")
    with pytest.raises(DataError, match="has 1 rows, expected 100,000"):
        verify_file(path, get_spec("ml-100k").files[0])
