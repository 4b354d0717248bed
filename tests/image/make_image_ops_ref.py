"""Writes image_ops_ref.npz: outputs of MXNet 1.9.1's image operators and mx.image.imrotate on small fixed inputs.
Run with real MXNet (numpy<1.24): ~/.venvs/mxref/bin/python make_image_ops_ref.py. The tests only read the file."""
import os

import numpy as np
import mxnet as mx

rng = np.random.RandomState(0)
img = rng.randint(0, 256, (6, 7, 3)).astype(np.uint8)
imgf = rng.uniform(0, 255, (6, 7, 3)).astype(np.float32)
chw = rng.uniform(0, 1, (2, 5, 6)).astype(np.float32)
out = {"img": img, "imgf": imgf, "chw": chw}
for name, a in (("u8", img), ("f32", imgf)):
    x = mx.nd.array(a, dtype=a.dtype)
    out[f"bright_{name}"] = mx.nd.image.random_brightness(x, 1.3, 1.3).asnumpy()
    out[f"contrast_{name}"] = mx.nd.image.random_contrast(x, 0.7, 0.7).asnumpy()
    out[f"hue_{name}"] = mx.nd.image.random_hue(x, 0.15, 0.15).asnumpy()
    out[f"light_{name}"] = mx.nd.image.adjust_lighting(x, alpha=(0.1, -0.2, 0.05)).asnumpy()
    out[f"totensor_{name}"] = mx.nd.image.to_tensor(x).asnumpy()
    out[f"flip_lr_{name}"] = mx.nd.image.flip_left_right(x).asnumpy()
    out[f"crop_{name}"] = mx.nd.image.crop(x, 1, 2, 4, 3).asnumpy()
src = mx.nd.array(chw)
out["rot30"] = mx.image.imrotate(src, 30).asnumpy()
out["rot_batch"] = mx.image.imrotate(mx.nd.array(np.stack([chw, chw[::-1]])), mx.nd.array([-45, 100])).asnumpy()
out["rot30_zoom_in"] = mx.image.imrotate(src, 30, zoom_in=True).asnumpy()
out["rot30_zoom_out"] = mx.image.imrotate(src, 30, zoom_out=True).asnumpy()
np.savez(os.path.join(os.path.dirname(os.path.abspath(__file__)), "image_ops_ref.npz"), **out)
