"""ImageFolderDataset and ImageRecordDataset: listing and labels; decoding needs Pillow (a clear error without)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon.data.vision import ImageFolderDataset, ImageRecordDataset

try:
    from PIL import Image
except ImportError:
    Image = None


def _png_bytes(pixels):
    import io
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def test_image_folder_lists_classes_and_skips_other_files(tmp_path):
    for cls, names in (("cat", ["b.png", "a.jpg", "notes.txt"]), ("ant", ["x.JPEG"])):
        (tmp_path / cls).mkdir()
        for name in names:
            (tmp_path / cls / name).write_bytes(b"")
    (tmp_path / "README").write_text("not a class")
    with pytest.warns(UserWarning):
        ds = ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["ant", "cat"]
    assert [(p.split("/")[-1], label) for p, label in ds.items] == [("x.JPEG", 0), ("a.jpg", 1), ("b.png", 1)]
    assert len(ds) == 3
    if Image is None:
        with pytest.raises(MXNetError, match="Pillow"):
            ds[0]


def test_image_record_dataset(tmp_path):
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), str(tmp_path / "d.rec"), "w")
    pixels = [np.full((3, 4, 3), i * 40, dtype=np.uint8) for i in range(3)]
    for i, p in enumerate(pixels):
        payload = _png_bytes(p) if Image is not None else b"\x89PNG-not-decodable-here"
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i), i, 0), payload))
    rec.close()
    ds = ImageRecordDataset(str(tmp_path / "d.rec"))
    assert len(ds) == 3
    if Image is None:
        with pytest.raises(MXNetError, match="Pillow"):
            ds[1]
        return
    img, label = ds[1]
    assert label == 1.0 and img.shape == (3, 4, 3)
    np.testing.assert_array_equal(img.asnumpy(), pixels[1])
