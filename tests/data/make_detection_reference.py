"""Makes tests/data/ops/detection_reference.npz with real MXNet 1.9.1 (never run by the tests themselves):

    ~/.venvs/mxref/bin/python tests/data/make_detection_reference.py

For each case of CASES (an op of the detection / correlation / attention / quantization family, fixed float32
inputs from a seeded generator, attributes): the inputs, the outputs and, for differentiable ops, the gradients
of sum(output * head) for a seeded head gradient. Keys are "<case>/in<i>", "<case>/out<i>", "<case>/head<i>",
"<case>/grad<i>"; "<case>/attrs" holds the attributes as JSON. tests/ops/test_mxnet_reference_detection.py
replays every case with mixnet and compares.
"""
import json
import os

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))


def _uniform(seed, shape, low=0.0, high=1.0):
    return np.random.RandomState(seed).uniform(low, high, shape).astype("float32")


ROIS = np.array([[0, 1.1, 1.1, 6.2, 6.2], [1, 0.3, 2.1, 7.9, 5.2], [0, 3.0, 3.0, 3.0, 3.0],
                 [1, -1.0, 0.5, 4.5, 9.5]], dtype="float32")
RROIS = np.array([[0, 4.0, 3.5, 5.0, 3.0, 30.0], [1, 2.5, 6.0, 4.0, 7.5, 135.0], [0, 8.0, 1.0, 2.0, 0.5, -60.0]],
                 dtype="float32")
_PROPOSAL = {"feature_stride": 4, "scales": (2.0, 4.0), "ratios": (0.5, 2.0), "rpn_pre_nms_top_n": 30,
             "rpn_post_nms_top_n": 12, "threshold": 0.6, "rpn_min_size": 4}

# (case name, op path under mx.nd, inputs, attrs, index of the inputs that get a gradient)
CASES = [
    ("selfatt_qk", "contrib.interleaved_matmul_selfatt_qk", [_uniform(1, (3, 2, 12))], {"heads": 2}, [0]),
    ("selfatt_valatt", "contrib.interleaved_matmul_selfatt_valatt",
     [_uniform(2, (3, 2, 12)), _uniform(3, (4, 3, 3))], {"heads": 2}, [0, 1]),
    ("encdec_qk", "contrib.interleaved_matmul_encdec_qk", [_uniform(4, (3, 2, 6)), _uniform(5, (2, 2, 12))],
     {"heads": 3}, [0, 1]),
    ("encdec_valatt", "contrib.interleaved_matmul_encdec_valatt",
     [_uniform(6, (2, 2, 12)), _uniform(7, (6, 3, 2))], {"heads": 3}, [0, 1]),
    ("corr_mul", "Correlation", [_uniform(8, (2, 3, 7, 6)), _uniform(9, (2, 3, 7, 6))],
     {"kernel_size": 3, "max_displacement": 2, "stride1": 2, "stride2": 1, "pad_size": 2}, [0, 1]),
    ("corr_abs", "Correlation", [_uniform(10, (1, 2, 6, 6)), _uniform(11, (1, 2, 6, 6))],
     {"kernel_size": 1, "max_displacement": 2, "stride2": 2, "pad_size": 1, "is_multiply": False}, [0, 1]),
    ("roipool", "ROIPooling", [_uniform(12, (2, 3, 8, 9)), ROIS], {"pooled_size": (3, 2), "spatial_scale": 1.0},
     [0]),
    ("roipool_scaled", "ROIPooling", [_uniform(13, (2, 2, 8, 9)), ROIS * 1.5],
     {"pooled_size": (2, 3), "spatial_scale": 0.7}, [0]),
    ("roialign", "contrib.ROIAlign", [_uniform(14, (2, 3, 8, 9)), ROIS],
     {"pooled_size": (3, 2), "spatial_scale": 1.0}, [0]),
    ("roialign_sampled", "contrib.ROIAlign", [_uniform(15, (2, 2, 8, 9)), ROIS * 1.5],
     {"pooled_size": (2, 2), "spatial_scale": 0.7, "sample_ratio": 2}, [0]),
    ("roialign_ps_aligned", "contrib.ROIAlign", [_uniform(16, (2, 8, 8, 9)), ROIS[:2]],
     {"pooled_size": (2, 2), "spatial_scale": 1.0, "position_sensitive": True, "aligned": True}, [0]),
    ("psroipool", "contrib.PSROIPooling", [_uniform(19, (2, 18, 8, 9)), ROIS],
     {"spatial_scale": 1.0, "output_dim": 2, "pooled_size": 3}, [0]),
    ("psroipool_grouped", "contrib.PSROIPooling", [_uniform(20, (2, 8, 8, 9)), ROIS * 1.5],
     {"spatial_scale": 0.7, "output_dim": 2, "pooled_size": 3, "group_size": 2}, [0]),
    ("rroialign", "contrib.RROIAlign", [_uniform(21, (2, 3, 8, 9)), RROIS], {"pooled_size": (2, 3),
                                                                             "spatial_scale": 1.0}, []),
    ("rroialign_sampled", "contrib.RROIAlign", [_uniform(22, (2, 2, 8, 9)), (RROIS * [1, 2, 2, 2, 2, 1]).astype("float32")],
     {"pooled_size": (2, 2), "spatial_scale": 0.5, "sampling_ratio": 2}, []),
    ("deformable_conv", "contrib.DeformableConvolution",
     [_uniform(23, (2, 4, 5, 6)), _uniform(24, (2, 36, 5, 6), -1.5, 1.5), _uniform(25, (4, 2, 3, 3), -1, 1),
      _uniform(26, (4,))],
     {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1), "num_group": 2, "num_deformable_group": 2}, [0, 1, 2, 3]),
    ("deformable_conv_strided", "contrib.DeformableConvolution",
     [_uniform(27, (1, 2, 6, 7)), _uniform(28, (1, 8, 2, 3), -2, 2), _uniform(29, (3, 2, 2, 2), -1, 1)],
     {"kernel": (2, 2), "num_filter": 3, "stride": (2, 2), "dilate": (2, 2), "no_bias": True}, [0, 1, 2]),
    ("multi_proposal", "contrib.MultiProposal",
     [_uniform(30, (2, 8, 5, 6)), _uniform(31, (2, 16, 5, 6), -0.3, 0.3), np.float32([[20, 24, 1.0], [15, 18, 0.8]])],
     dict(_PROPOSAL, output_score=True), []),
    ("proposal_iou", "contrib.Proposal",
     [_uniform(32, (1, 8, 5, 6)), _uniform(33, (1, 16, 5, 6), -2, 2), np.float32([[17, 22, 1.5]])],
     dict(_PROPOSAL, iou_loss=True, rpn_pre_nms_top_n=-1), []),
    ("quantize_uint8", "contrib.quantize", [_uniform(17, (3, 4), 0.1, 0.9), np.float32([0.05]),
                                            np.float32([0.95])], {"out_type": "uint8"}, []),
    ("quantize_int8", "contrib.quantize", [_uniform(18, (3, 4), -1, 1), np.float32([-1.5]), np.float32([0.7])],
     {"out_type": "int8"}, []),
    ("quantize_v2_own_range", "contrib.quantize_v2", [_uniform(34, (3, 4), -0.7, 1.3)], {}, []),
    ("quantize_v2_uint8", "contrib.quantize_v2", [_uniform(35, (2, 5), 0.0, 2.0)],
     {"out_type": "uint8", "min_calib_range": 0.1, "max_calib_range": 1.5}, []),
    ("quantize_v2_auto", "contrib.quantize_v2", [_uniform(36, (6,), -1.0, 1.0)],
     {"out_type": "auto", "min_calib_range": -0.5, "max_calib_range": 0.8}, []),
    ("dequantize_uint8", "contrib.dequantize", [np.arange(0, 256, 17, dtype=np.uint8), np.float32([-0.5]),
                                                np.float32([2.0])], {}, []),
    ("dequantize_int8", "contrib.dequantize", [np.arange(-127, 128, 17, dtype=np.int8), np.float32([-0.5]),
                                               np.float32([2.0])], {}, []),
]


def _op(path):
    fn = mx.nd
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn


def main():
    out = {}
    for k, (name, path, inputs, attrs, wrt) in enumerate(CASES):
        arrays = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
        for i in wrt:
            arrays[i].attach_grad()
        with mx.autograd.record():
            result = _op(path)(*arrays, **attrs)
        results = result if isinstance(result, (list, tuple)) else [result]
        heads = [mx.nd.array(_uniform(100 + k, r.shape, -1, 1)) for r in results]
        if wrt:
            mx.autograd.backward(results, heads)
        out[f"{name}/attrs"] = np.array(json.dumps({"op": path, "attrs": attrs, "wrt": wrt}))
        for i, x in enumerate(inputs):
            out[f"{name}/in{i}"] = x
        for i, (r, h) in enumerate(zip(results, heads)):
            out[f"{name}/out{i}"], out[f"{name}/head{i}"] = r.asnumpy(), h.asnumpy()
        for i in wrt:
            out[f"{name}/grad{i}"] = arrays[i].grad.asnumpy()
    np.savez_compressed(os.path.join(HERE, "ops", "detection_reference.npz"), **out)


if __name__ == "__main__":
    main()
