"""mx.test_utils.get_bz2_data: decompresses a downloaded (here: already present) archive once."""
import bz2

import pytest

import mixnet as mx


def test_present_archive_is_decompressed_and_removed(tmp_path):
    (tmp_path / "x.t.bz2").write_bytes(bz2.compress(b"1 0:1\n2 1:2\n"))
    mx.test_utils.get_bz2_data(str(tmp_path), "x.t", "http://invalid.example/x.t.bz2", "x.t.bz2")
    assert (tmp_path / "x.t").read_bytes() == b"1 0:1\n2 1:2\n"
    assert not (tmp_path / "x.t.bz2").exists()


def test_existing_target_is_kept_and_offline_download_names_the_file(tmp_path):
    (tmp_path / "y.t").write_bytes(b"kept")
    mx.test_utils.get_bz2_data(str(tmp_path), "y.t", "http://invalid.example/y.t.bz2", "y.t.bz2")
    assert (tmp_path / "y.t").read_bytes() == b"kept"
    with pytest.raises(ConnectionError, match="z.t.bz2"):
        mx.test_utils.get_bz2_data(str(tmp_path), "z.t", "http://invalid.invalid/z.t.bz2", "z.t.bz2")
