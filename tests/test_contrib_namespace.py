"""`mx.contrib.ndarray` / `mx.contrib.symbol` (and `nd` / `sym`) hold the `_contrib_*` ops, like
`mx.nd.contrib` / `mx.sym.contrib`."""
import numpy as np

import mixnet as mx


def test_contrib_ndarray_has_the_contrib_ops():
    public = {k for k in dir(mx.contrib.ndarray) if not k.startswith("_")}
    assert public and public <= set(dir(mx.nd.contrib))
    assert mx.contrib.nd is mx.contrib.ndarray and mx.contrib.sym is mx.contrib.symbol


def test_contrib_ctc_loss_matches_the_main_namespace():
    data = mx.nd.array(np.random.RandomState(0).rand(4, 2, 3))
    label = mx.nd.array([[1, 2], [2, 1]])
    np.testing.assert_allclose(mx.contrib.ndarray.CTCLoss(data, label).asnumpy(),
                               mx.nd.CTCLoss(data, label).asnumpy(), rtol=1e-6)
    sym = mx.contrib.symbol.CTCLoss(mx.sym.var("data"), mx.sym.var("label"))
    assert sym.list_arguments() == ["data", "label"]
