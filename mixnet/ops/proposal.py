"""contrib.Proposal / contrib.MultiProposal: Faster R-CNN's region proposal layer (MXNet's contrib/proposal.cc,
multi_proposal.cc, CPU path), in float32 as MXNet computes it.

For each image: anchors (every ratio x scale around a feature_stride square, ratio-major) are laid on the
(H, W) feature grid (proposal index (h * W + w) * A + a), moved by bbox_pred's (dx, dy, dw, dh) and clipped to the
image (im_info = [height, width, scale]); proposals beyond the image's real feature extent, or smaller than
rpn_min_size * scale (those are also widened by it), get score -1. The top rpn_pre_nms_top_n by the foreground
score (cls_prob's second half of channels; a stable sort) go through greedy non-maximum suppression (IoU with
+1 pixel areas > threshold suppresses), keeping at most rpn_post_nms_top_n; the output rows
[batch_index, x1, y1, x2, y2] repeat the kept ones cyclically up to rpn_post_nms_top_n rows. No gradient (MXNet
gives zeros).
"""
import numpy as np

from .attrs import Attr, parse_bool, parse_float, parse_float_tuple, parse_int
from .registry import OpDef, OpTest, register

_F32 = np.float32

_ATTRS = {"rpn_pre_nms_top_n": Attr(parse_int, 6000), "rpn_post_nms_top_n": Attr(parse_int, 300),
          "threshold": Attr(parse_float, 0.7), "rpn_min_size": Attr(parse_int, 16),
          "scales": Attr(parse_float_tuple, (4.0, 8.0, 16.0, 32.0)), "ratios": Attr(parse_float_tuple, (0.5, 1.0, 2.0)),
          "feature_stride": Attr(parse_int, 16), "output_score": Attr(parse_bool, False),
          "iou_loss": Attr(parse_bool, False)}


def _check(shapes, dtypes, a, single):
    cls, bbox, info = (tuple(s) for s in shapes)
    anchors = len(a["scales"]) * len(a["ratios"])
    if len(cls) != 4 or cls[1] != 2 * anchors:
        raise ValueError(f"cls_prob must be (batch, 2 * len(scales) * len(ratios) = {2 * anchors}, H, W), got {cls}")
    if bbox != (cls[0], 4 * anchors) + cls[2:]:
        raise ValueError(f"bbox_pred must have shape {(cls[0], 4 * anchors) + cls[2:]}, got {bbox}")
    if info != (cls[0], 3):
        raise ValueError(f"im_info must have shape {(cls[0], 3)} of [height, width, scale], got {info}")
    if single and cls[0] != 1:
        raise ValueError(f"Proposal takes one image (batch 1), got batch {cls[0]}: use MultiProposal")
    if a["rpn_post_nms_top_n"] < 1:
        raise ValueError(f"rpn_post_nms_top_n must be positive, got {a['rpn_post_nms_top_n']}")
    if any(d is not None and np.dtype(d) != _F32 for d in dtypes):
        raise ValueError(f"inputs must be float32, got {', '.join(str(np.dtype(d)) for d in dtypes)}")
    return cls[0]


def _infer(single):
    def infer(shapes, dtypes, **a):
        rows = _check(shapes, dtypes, a, single) * a["rpn_post_nms_top_n"]
        return [(rows, 5), (rows, 1)], [np.dtype(_F32)] * 2
    return infer


def _anchors(feature_stride, ratios, scales):
    """(A, 4) base anchors, ratio-major, as MXNet's GenerateAnchors."""
    size = float(feature_stride)
    ctr = _F32(0.5 * (size - 1.0))
    out = []
    for ratio in ratios:
        for scale in scales:
            new_w = _F32(np.floor(np.sqrt(_F32(np.floor(_F32(size * size) / _F32(ratio)))) + _F32(0.5))
                         * _F32(scale))
            new_h = _F32(np.floor(new_w / _F32(scale) * _F32(ratio) + _F32(0.5)) * _F32(scale))
            out.append([ctr - _F32(0.5) * (new_w - _F32(1)), ctr - _F32(0.5) * (new_h - _F32(1)),
                        ctr + _F32(0.5) * (new_w - _F32(1)), ctr + _F32(0.5) * (new_h - _F32(1))])
    return np.array(out, _F32)


def _decode(boxes, deltas, im_h, im_w, iou_loss):
    """Boxes (n, 4) moved by deltas (n, 4) and clipped to the image, in float32."""
    if iou_loss:
        pred = boxes + deltas
    else:
        width = boxes[:, 2] - boxes[:, 0] + _F32(1)
        height = boxes[:, 3] - boxes[:, 1] + _F32(1)
        ctr_x = boxes[:, 0] + _F32(0.5) * (width - _F32(1))
        ctr_y = boxes[:, 1] + _F32(0.5) * (height - _F32(1))
        pred_x, pred_y = deltas[:, 0] * width + ctr_x, deltas[:, 1] * height + ctr_y
        half_w = _F32(0.5) * (np.exp(deltas[:, 2]) * width - _F32(1))
        half_h = _F32(0.5) * (np.exp(deltas[:, 3]) * height - _F32(1))
        pred = np.stack([pred_x - half_w, pred_y - half_h, pred_x + half_w, pred_y + half_h], axis=1)
    limits = np.array([im_w, im_h, im_w, im_h], _F32) - _F32(1)
    return np.maximum(np.minimum(pred, limits), _F32(0)).astype(_F32)


def _nms(dets, threshold, limit):
    """Indices of the boxes greedy NMS keeps, at most `limit`, in score order (dets are sorted)."""
    from ._nms_kernel import nms  # lazy: imports numba
    return nms(np.ascontiguousarray(dets, dtype=_F32), _F32(threshold), int(limit))


def _one_image(scores, deltas, info, a):
    """(post, 4) boxes and (post,) scores of one image: scores (A, H, W), deltas (4A, H, W)."""
    num, height, width = scores.shape
    stride = a["feature_stride"]
    shifts = np.stack(np.meshgrid(np.arange(width) * stride, np.arange(height) * stride), axis=-1)   # (H, W, 2)
    boxes = (_anchors(stride, a["ratios"], a["scales"])[None, None] + np.tile(shifts, 2)[:, :, None]).reshape(-1, 4)
    deltas = deltas.reshape(num, 4, height, width).transpose(2, 3, 0, 1).reshape(-1, 4)
    score = scores.transpose(1, 2, 0).reshape(-1).copy()
    boxes = _decode(boxes.astype(_F32), deltas, info[0], info[1], a["iou_loss"])
    real_h, real_w = int(info[0] / _F32(stride)), int(info[1] / _F32(stride))
    if real_h > height or real_w > width:
        raise ValueError(f"im_info {info[:2].tolist()} is larger than the feature map {height} x {width} times "
                         f"feature_stride {stride}")
    hh, ww = np.divmod(np.arange(height * width), width)
    score[np.repeat((hh >= real_h) | (ww >= real_w), num)] = -1
    min_size = _F32(a["rpn_min_size"] * info[2])
    small = ((boxes[:, 2] - boxes[:, 0] + _F32(1)) < min_size) | ((boxes[:, 3] - boxes[:, 1] + _F32(1)) < min_size)
    boxes[small] += np.array([-1, -1, 1, 1], _F32) * (min_size / _F32(2))
    score[small] = -1
    pre = min(a["rpn_pre_nms_top_n"] if a["rpn_pre_nms_top_n"] > 0 else len(score), len(score))
    order = np.argsort(-score, kind="stable")[:pre]
    dets = np.concatenate([boxes[order], score[order, None]], axis=1)
    keep = _nms(dets, a["threshold"], min(a["rpn_post_nms_top_n"], pre))
    rows = keep[np.arange(a["rpn_post_nms_top_n"]) % len(keep)]
    return dets[rows, :4], dets[rows, 4]


def _kernel(single):
    def kernel(xp, cls_prob, bbox_pred, im_info, **a):
        batch = _check([cls_prob.shape, bbox_pred.shape, im_info.shape],
                       [cls_prob.dtype, bbox_pred.dtype, im_info.dtype], a, single)
        host = [x if xp is np else xp.asnumpy(x) for x in (cls_prob, bbox_pred, im_info)]
        anchors = cls_prob.shape[1] // 2
        rois, scores = [], []
        for b in range(batch):
            boxes, score = _one_image(host[0][b, anchors:], host[1][b], host[2][b], a)
            rois.append(np.concatenate([np.full((len(boxes), 1), b, _F32), boxes], axis=1))
            scores.append(score[:, None])
        return xp.asarray(np.concatenate(rois).astype(_F32)), xp.asarray(np.concatenate(scores).astype(_F32))
    return kernel


def _ref(cls_prob, bbox_pred, im_info, **a):
    """Box by box: MXNet's loops over anchors and positions, its sort and its NMS."""
    anchors = cls_prob.shape[1] // 2
    base = _anchors(a["feature_stride"], a["ratios"], a["scales"])
    rois, scores = [], []
    for b in range(cls_prob.shape[0]):
        height, width = cls_prob.shape[2:]
        info = im_info[b]
        props = np.zeros((height * width * anchors, 5), _F32)
        for h, w, k in np.ndindex(height, width, anchors):
            i = (h * width + w) * anchors + k
            box = base[k] + _F32(a["feature_stride"]) * np.array([w, h, w, h], _F32)
            props[i, :4] = _decode(box[None], bbox_pred[b, 4 * k:4 * k + 4, h, w][None], info[0], info[1],
                                   a["iou_loss"])[0]
            props[i, 4] = cls_prob[b, anchors + k, h, w]
            if h >= int(info[0] / a["feature_stride"]) or w >= int(info[1] / a["feature_stride"]):
                props[i, 4] = -1
            min_size = _F32(a["rpn_min_size"] * info[2])
            if props[i, 2] - props[i, 0] + 1 < min_size or props[i, 3] - props[i, 1] + 1 < min_size:
                props[i, :4] += np.array([-1, -1, 1, 1], _F32) * (min_size / _F32(2))
                props[i, 4] = -1
        pre = min(a["rpn_pre_nms_top_n"] if a["rpn_pre_nms_top_n"] > 0 else len(props), len(props))
        dets = props[sorted(range(len(props)), key=lambda j: -props[j, 4])[:pre]]
        suppressed, keep = np.zeros(len(dets), bool), []
        for i in range(len(dets)):
            if suppressed[i] or len(keep) >= min(a["rpn_post_nms_top_n"], pre):
                continue
            keep.append(i)
            for j in range(i + 1, len(dets)):
                inter = (max(_F32(0), min(dets[i, 2], dets[j, 2]) - max(dets[i, 0], dets[j, 0]) + 1)
                         * max(_F32(0), min(dets[i, 3], dets[j, 3]) - max(dets[i, 1], dets[j, 1]) + 1))
                areas = [(d[2] - d[0] + 1) * (d[3] - d[1] + 1) for d in (dets[i], dets[j])]
                suppressed[j] |= inter / (areas[0] + areas[1] - inter) > a["threshold"]
        for r in range(a["rpn_post_nms_top_n"]):
            d = dets[keep[r % len(keep)]]
            rois.append([b, d[0], d[1], d[2], d[3]])
            scores.append([d[4]])
    return np.array(rois, _F32), np.array(scores, _F32)


def _outputs(a):
    return 2 if a["output_score"] else 1


_SMALL = {"feature_stride": 4, "scales": (1.0, 2.0), "ratios": (0.5, 1.0), "rpn_pre_nms_top_n": 12,
          "rpn_post_nms_top_n": 6, "rpn_min_size": 1, "threshold": 0.5, "output_score": True}
# im_info drawn as whole numbers in [6, 10): a real extent of 1 or 2 feature cells of 4 pixels; a min_size
# (rpn_min_size * scale) of 6 to 9 pixels filters some boxes
_INFO = {2: (6, 10)}

for _name, _single, _batch in (("_contrib_Proposal", True, 1), ("_contrib_MultiProposal", False, 2)):
    register(OpDef(
        name=_name, kernel=_kernel(_single), inputs=("cls_prob", "bbox_pred", "im_info"), attrs=_ATTRS,
        infer=_infer(_single), num_outputs=2, num_visible=_outputs, output_names=("output", "score"),
        differentiable=False,
        test=OpTest(ref=_ref, grad=False, grad2=False, domain=(0.0, 1.0), int_inputs=_INFO, cases=(
            (((_batch, 8, 3, 2), (_batch, 16, 3, 2), (_batch, 3)), _SMALL),
            (((_batch, 8, 2, 2), (_batch, 16, 2, 2), (_batch, 3)), dict(_SMALL, iou_loss=True, rpn_min_size=0)),
        )),
        doc="Region proposals from RPN scores and box deltas: decoded anchors, filtered, sorted and reduced by "
            "NMS to rpn_post_nms_top_n rows [batch_index, x1, y1, x2, y2] per image (and their scores with "
            "output_score)."))
