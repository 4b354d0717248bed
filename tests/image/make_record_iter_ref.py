"""Writes record_iter_ref.rec (7 small PNG images, labels 0..2) and record_iter_ref.npz (what MXNet 1.9.1's
mx.io.ImageRecordIter returns for it under a few settings). Run with real MXNet (numpy<1.24):
~/.venvs/mxref/bin/python make_record_iter_ref.py. The tests only read the two files."""
import os
import struct
import tempfile
import zlib

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [dict(data_shape=(3, 8, 8)),
         dict(data_shape=(3, 8, 9), resize=9, mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=3, std_b=4, scale=0.5),
         dict(data_shape=(3, 12, 16), pad=2, fill_value=7, mirror=True),
         dict(data_shape=(3, 8, 8), mean_img="MEAN")]


def png(pixels):
    """A minimal RGB PNG (no filtering) of an (H, W, 3) uint8 array."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    h, w, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    rec_path = os.path.join(HERE, "record_iter_ref.rec")
    rng = np.random.RandomState(0)
    writer = mx.recordio.MXRecordIO(rec_path, "w")
    for i in range(7):
        pixels = rng.randint(0, 256, (10 + i, 13, 3)).astype(np.uint8)
        writer.write(mx.recordio.pack(mx.recordio.IRHeader(0, float(i % 3), i, 0), png(pixels)))
    writer.close()
    out = {}
    tmp = tempfile.mkdtemp()
    for k, case in enumerate(CASES):
        case = {key: (os.path.join(tmp, "mean.bin") if v == "MEAN" else v) for key, v in case.items()}
        it = mx.io.ImageRecordIter(path_imgrec=rec_path, batch_size=3, **case)
        for j, batch in enumerate(it):
            out[f"{k}_{j}_data"] = batch.data[0].asnumpy()
            out[f"{k}_{j}_label"] = batch.label[0].asnumpy()
            out[f"{k}_{j}_pad"] = np.array(batch.pad)
        it.reset()
        out[f"{k}_again"] = next(it).label[0].asnumpy()
    out["mean_img"] = mx.nd.load(os.path.join(tmp, "mean.bin"))["mean_img"].asnumpy()
    np.savez_compressed(os.path.join(HERE, "record_iter_ref.npz"), **out)


if __name__ == "__main__":
    main()
