"""Makes the reference files for tests/test_module.py with real MXNet 1.9.1 (never run by the tests themselves).

    MXNET_MKLDNN_ENABLED=0 ~/.venvs/mxref/bin/python tests/data/make_module_checkpoint.py

Writes into tests/data/module/:
* mlp-symbol.json, mlp-0000.params: an MLP (FullyConnected/Activation/FullyConnected/SoftmaxOutput) with
  fixed parameters, saved by Module.save_checkpoint before training;
* mlp-0002.params: the same Module after `fit` for 2 epochs (SGD, momentum 0.9, lr 0.1, batches of 4 from an
  unshuffled NDArrayIter over the data in mlp-io.json);
* mlp-io.json: the data, the labels, and the predictions of the trained module on the data.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module")


def main():
    os.makedirs(HERE, exist_ok=True)
    rng = np.random.RandomState(7)
    x = rng.uniform(-1, 1, size=(8, 6)).astype(np.float32)
    y = rng.randint(0, 3, size=(8,)).astype(np.float32)
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=5, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    args = {"fc1_weight": rng.normal(0, 0.5, (5, 6)), "fc1_bias": rng.normal(0, 0.1, (5,)),
            "fc2_weight": rng.normal(0, 0.5, (3, 5)), "fc2_bias": rng.normal(0, 0.1, (3,))}
    args = {k: mx.nd.array(v.astype(np.float32)) for k, v in args.items()}

    it = mx.io.NDArrayIter(x, y, batch_size=4, shuffle=False)
    mod = mx.mod.Module(net)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(arg_params=args)
    prefix = os.path.join(HERE, "mlp")
    mod.save_checkpoint(prefix, 0)
    mod.fit(it, num_epoch=2, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            eval_metric="acc")
    mod.save_checkpoint(prefix, 2)
    pred = mod.predict(mx.io.NDArrayIter(x, batch_size=4)).asnumpy()
    with open(os.path.join(HERE, "mlp-io.json"), "w") as f:
        json.dump({"data": x.tolist(), "label": y.tolist(), "predict": pred.tolist()}, f)


if __name__ == "__main__":
    main()
