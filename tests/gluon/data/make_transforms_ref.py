"""Generate transforms_ref.npz (reference outputs of MXNet 1.9.1's image transforms) for
test_data_transforms.py.

Run it with MXNet 1.9.1's Python (NOT mixnet's); the test suite does not run it:

    ~/.venvs/mxref/bin/python tests/gluon/data/make_transforms_ref.py

The .npz holds only plain numeric arrays (the tests load it with allow_pickle=False). Keys:
``img{i}`` a random uint8 HWC image, ``resize_{u8|f32}_{i}_{interp}`` what ``mx.image.imresize(img, w, h,
interp)`` returns for the (w, h) in CASES[i], and ``totensor_norm`` ToTensor + Normalize of img0.
"""
import os

import numpy as np
import mxnet as mx
from mxnet.gluon.data.vision import transforms as T

assert mx.__version__ == "1.9.1", mx.__version__

CASES = [((17, 23, 3), (9, 5)), ((17, 23, 3), (40, 31)), ((32, 32, 3), (24, 24)), ((8, 50, 1), (13, 7)),
         ((30, 30, 3), (7, 30)), ((12, 10, 3), (37, 29))]


def main():
    rng = np.random.RandomState(1)
    out = {}
    for i, (shape, (w, h)) in enumerate(CASES):
        img = rng.randint(0, 256, shape).astype("uint8")
        out[f"img{i}"] = img
        for interp in (0, 1):
            out[f"resize_u8_{i}_{interp}"] = mx.image.imresize(mx.nd.array(img, dtype="uint8"), w, h,
                                                               interp=interp).asnumpy()
            out[f"resize_f32_{i}_{interp}"] = mx.image.imresize(mx.nd.array(img, dtype="float32"), w, h,
                                                                interp=interp).asnumpy()
    img0 = mx.nd.array(out["img0"], dtype="uint8")
    out["totensor_norm"] = T.Compose([T.ToTensor(), T.Normalize((0.485, 0.456, 0.406),
                                                                (0.229, 0.224, 0.225))])(img0).asnumpy()
    out["center_crop_big"] = T.CenterCrop((30, 25))(img0).asnumpy()
    out["resize_keep"] = T.Resize(11, keep_ratio=True)(img0).asnumpy()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "transforms_ref.npz")
    np.savez_compressed(path, **out)
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
