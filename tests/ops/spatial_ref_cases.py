"""The cases of spatial_ref.npz, shared by its generator (make_spatial_ref.py, run with MXNet 1.9.1) and by
test_spatial_mxnet_values.py: (name, op, input shapes, attributes, indices of integer label inputs).
Float inputs are uniform in [-1.2, 1.2] (grids stay mostly inside the image, some points fall outside)."""

CASES = [
    ("grid_affine", "GridGenerator", [(2, 6)], {"transform_type": "affine", "target_shape": (3, 4)}, ()),
    ("grid_warp", "GridGenerator", [(1, 2, 3, 4)], {"transform_type": "warp", "target_shape": (3, 4)}, ()),
    ("sampler", "BilinearSampler", [(2, 2, 4, 5), (2, 2, 3, 3)], {}, ()),
    ("stn", "SpatialTransformer", [(2, 1, 5, 5), (2, 6)],
     {"target_shape": (3, 4), "transform_type": "affine", "sampler_type": "bilinear"}, ()),
    ("resize_corners", "_contrib_BilinearResize2D", [(1, 2, 3, 4)], {"height": 5, "width": 7}, ()),
    ("resize_half_pixel", "_contrib_BilinearResize2D", [(1, 2, 6, 5)],
     {"height": 4, "width": 8, "align_corners": False}, ()),
    ("resize_odd_scale", "_contrib_BilinearResize2D", [(1, 1, 5, 6)],
     {"mode": "odd_scale", "scale_height": 2.0, "scale_width": 0.5}, ()),
    ("resize_like", "_contrib_BilinearResize2D", [(1, 1, 4, 4), (1, 3, 6, 3)], {"mode": "like"}, ()),
    ("adaptive_avg", "_contrib_AdaptiveAvgPooling2D", [(1, 2, 5, 7)], {"output_size": (3, 2)}, ()),
    ("im2col", "im2col", [(1, 2, 5, 5)], {"kernel": (2, 3), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)}, ()),
    ("col2im", "col2im", [(1, 12, 9)], {"output_size": (4, 5), "kernel": (2, 3), "stride": (2, 2), "pad": (1, 1)},
     ()),
    ("svm_l2", "SVMOutput", [(4, 3), (4,)], {"margin": 0.5, "regularization_coefficient": 2.0}, (1,)),
    ("svm_l1", "SVMOutput", [(4, 3), (4,)], {"use_linear": True}, (1,)),
    ("upsampling_bilinear", "UpSampling", [(1, 2, 3, 3), (2, 1, 4, 4)],
     {"scale": 2, "sample_type": "bilinear", "num_filter": 2, "num_args": 2}, ()),
]
