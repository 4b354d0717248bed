"""contrib.Proposal / MultiProposal: output layout, the cyclic fill when NMS keeps fewer boxes than
rpn_post_nms_top_n, MXNet's input checks, and zero gradients (MXNet 1.9.1's numbers:
test_mxnet_reference_detection.py)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

ATTRS = {"feature_stride": 4, "scales": (2.0,), "ratios": (1.0,), "rpn_pre_nms_top_n": 20, "rpn_post_nms_top_n": 5,
         "threshold": 0.5, "rpn_min_size": 1}


def _inputs(batch, rng):
    cls = mx.nd.array(rng.rand(batch, 2, 3, 3))
    bbox = mx.nd.zeros((batch, 4, 3, 3))
    info = mx.nd.array([[12, 12, 1.0]] * batch)
    return cls, bbox, info


def test_multiproposal_rows_and_cyclic_fill():
    cls, bbox, info = _inputs(2, np.random.RandomState(0))
    rois, scores = mx.nd.contrib.MultiProposal(cls, bbox, info, output_score=True, **dict(ATTRS, threshold=0.0))
    assert rois.shape == (10, 5) and scores.shape == (10, 1)
    rois = rois.asnumpy()
    assert (rois[:5, 0] == 0).all() and (rois[5:, 0] == 1).all()
    # threshold 0 suppresses every box overlapping a kept one: the anchors (8 x 8 at stride 4) all overlap their
    # neighbours, so few survive and the rows repeat them in order
    kept = len({tuple(r) for r in rois[:5, 1:]})
    assert kept < 5 and (rois[:5][kept:] == rois[:5][:5 - kept]).all()
    single = mx.nd.contrib.Proposal(cls[0:1], bbox[0:1], info[0:1], **dict(ATTRS, threshold=0.0))
    assert isinstance(single, mx.nd.NDArray)              # output_score=False: the boxes only
    np.testing.assert_array_equal(single.asnumpy(), rois[:5])


def test_proposal_checks():
    cls, bbox, info = _inputs(2, np.random.RandomState(1))
    with pytest.raises(MXNetError, match="Proposal.*batch 1"):
        mx.nd.contrib.Proposal(cls, bbox, info, **ATTRS)
    with pytest.raises(MXNetError, match="bbox_pred must have shape"):
        mx.nd.contrib.MultiProposal(cls, bbox[:, :2], info, **ATTRS)
    with pytest.raises(MXNetError, match="cls_prob must be"):
        mx.nd.contrib.MultiProposal(cls, bbox, info, **dict(ATTRS, scales=(1.0, 2.0)))


def test_no_gradient_and_any_head_gradient_in_an_executor():
    names = ("cls_prob", "bbox_pred", "im_info")
    out = mx.sym.contrib.MultiProposal(*(mx.sym.Variable(n) for n in names), **ATTRS)
    cls, bbox, info = _inputs(2, np.random.RandomState(2))
    exe = out.bind(mx.cpu(), args=dict(zip(names, (cls, bbox, info))),
                   args_grad={n: mx.nd.ones(a.shape) for n, a in zip(names, (cls, bbox, info))})
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((5, 5))])       # MXNet never reads it, so its shape is not checked
    assert all(not exe.grad_dict[n].asnumpy().any() for n in names)
