"""mx.io.ImageRecordIter against MXNet 1.9.1's batches for the same .rec (tests/image/record_iter_ref.*, made by
tests/image/make_record_iter_ref.py). Decoding needs Pillow (the `image` extra): without it those cases skip."""
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

HERE = os.path.join(os.path.dirname(__file__), "image")
REC = os.path.join(HERE, "record_iter_ref.rec")
CASES = [dict(data_shape=(3, 8, 8)),
         dict(data_shape=(3, 8, 9), resize=9, mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=3, std_b=4, scale=0.5),
         dict(data_shape=(3, 12, 16), pad=2, fill_value=7, mirror=True),
         dict(data_shape=(3, 8, 8), mean_img="MEAN")]


def _pillow():
    try:
        import PIL  # noqa: F401
    except ImportError:
        pytest.skip("decoding images needs Pillow (pip install mixnet[image])")


@pytest.mark.parametrize("k", range(len(CASES)))
def test_batches_match_mxnet(k, tmp_path):
    _pillow()
    ref = np.load(os.path.join(HERE, "record_iter_ref.npz"))
    mean_path = str(tmp_path / "mean.bin")
    case = {key: (mean_path if v == "MEAN" else v) for key, v in CASES[k].items()}
    it = mx.io.ImageRecordIter(path_imgrec=REC, batch_size=3, **case)
    batches = list(it)
    assert len(batches) == 3
    for j, batch in enumerate(batches):
        np.testing.assert_allclose(batch.data[0].asnumpy(), ref[f"{k}_{j}_data"], rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(batch.label[0].asnumpy(), ref[f"{k}_{j}_label"])
        assert batch.pad == int(ref[f"{k}_{j}_pad"])
    it.reset()                       # round_batch: the epoch after a wrap starts after the wrapped examples
    np.testing.assert_array_equal(next(it).label[0].asnumpy(), ref[f"{k}_again"])
    if "mean_img" in case:           # the mean image was computed and saved in MXNet's format
        np.testing.assert_allclose(mx.nd.load(mean_path)["mean_img"].asnumpy(), ref["mean_img"], rtol=1e-5)


def test_seed_aug_makes_augmentation_repeatable():
    _pillow()
    kwargs = dict(path_imgrec=REC, batch_size=3, data_shape=(3, 8, 8), rand_crop=True, rand_mirror=True,
                  max_random_contrast=0.3, max_random_illumination=20)
    first = [b.data[0].asnumpy() for b in mx.io.ImageRecordIter(seed_aug=3, **kwargs)]
    again = [b.data[0].asnumpy() for b in mx.io.ImageRecordIter(seed_aug=3, **kwargs)]
    other = [b.data[0].asnumpy() for b in mx.io.ImageRecordIter(seed_aug=4, **kwargs)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


def test_errors():
    with pytest.raises(MXNetError, match="channels"):
        mx.io.ImageRecordIter(path_imgrec=REC, batch_size=2, data_shape=(5, 8, 8))
    with pytest.raises(MXNetError, match="max_rotate_angle"):
        mx.io.ImageRecordIter(path_imgrec=REC, batch_size=2, data_shape=(3, 8, 8), max_rotate_angle=10)
    with pytest.raises(MXNetError, match="unknown"):
        mx.io.ImageRecordIter(path_imgrec=REC, batch_size=2, data_shape=(3, 8, 8), rand_flip=True)
    it = mx.io.ImageRecordIter(path_imgrec=REC, batch_size=2, data_shape=(3, 8, 8), preprocess_threads=4)
    assert it.provide_data[0].shape == (2, 3, 8, 8) and it.provide_label[0].shape == (2,)
