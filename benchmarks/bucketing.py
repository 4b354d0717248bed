"""Issue 12: length bucketing shared by the data pipeline and the compiler, on a skewed length distribution.

Data: N sequences of token ids, lengths lognormal (median 25) clipped to 5..200; labels from the last token.
Model: Embedding(64, 32) -> GRU(64, NTC, use_sequence_length) -> SequenceLast -> Dense(4), hybridized,
SoftmaxCrossEntropyLoss, Adam; batch 32. Configurations, each in a fresh process (one epoch with its compiles,
then a second epoch), rounds interleaved:
  batch-max   random batches padded to their longest sample (pad_sequence / Pad()): little padding, but nearly
              every batch is a new shape, so a new compile
  longest     random batches padded to the longest sequence (one static shape, one compile): the most padding
  bucket      FixedBucketSampler(num_buckets=10, shuffle=True, last_batch='rollover') + Pad(bucket_keys=...):
              one shape, one compile, per bucket
  bucket+pre  the same after net.precompile(one entry per bucket shape) (the compile time, reported apart, is
              out of the epoch)
Prints one JSON line per configuration: padding waste (% of the computed time steps, over the batches run, that
are padding), sequences/s in epoch 1 (compiles included) and epoch 2, compiles (signatures traced), compile
seconds, and ratios vs 'longest'.

    OMP_NUM_THREADS=1 python3 benchmarks/bucketing.py [--rounds 3] [--n 1536] [--configs bucket,longest,...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

CONFIGS = ("batch-max", "longest", "bucket", "bucket+pre")
BATCH, VOCAB, CLASSES = 32, 64, 4


def make_data(n, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.round(rng.lognormal(np.log(25), 0.8, size=n)), 5, 200).astype(int)
    seqs = [rng.integers(1, VOCAB, size=k).astype("float32") for k in lengths]
    labels = [float(int(s[-1]) % CLASSES) for s in seqs]          # learnable from the last valid token
    return lengths.tolist(), seqs, labels


def build_net():
    from mixnet import gluon
    from mixnet.gluon import nn, rnn

    class Classifier(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.emb = nn.Embedding(VOCAB, 32)
                self.gru = rnn.GRU(64, layout="NTC", use_sequence_length=True, input_size=32)
                self.out = nn.Dense(CLASSES, in_units=64)

        def hybrid_forward(self, F, tokens, length):
            h = self.gru(self.emb(tokens), sequence_length=length)
            return self.out(F.SequenceLast(h, sequence_length=length, use_sequence_length=True, axis=1))

    net = Classifier()
    net.initialize()
    net.hybridize()
    return net


def run_config(config, n):
    import numpy as np

    import mixnet as mx
    from mixnet import autograd, gluon
    from mixnet.gluon.data import BatchSampler, DataLoader, FixedBucketSampler, RandomSampler, SimpleDataset
    from mixnet.gluon.data.batchify import Pad, Stack, Tuple

    np.random.seed(0)
    mx.random.seed(0)
    lengths, seqs, labels = make_data(n)
    dataset = SimpleDataset(list(zip(seqs, labels)))
    if config.startswith("bucket"):
        sampler = FixedBucketSampler(lengths, BATCH, num_buckets=10, shuffle=True, last_batch="rollover")
        keys = sampler.bucket_keys
    else:
        sampler = BatchSampler(RandomSampler(n), BATCH, "rollover")
        keys = [max(lengths)] if config == "longest" else None
    pad = Pad(axis=0, pad_val=0, ret_length=True, bucket_keys=keys)
    loader = DataLoader(dataset, batch_sampler=sampler, batchify_fn=Tuple(pad, Stack("float32")))
    net = build_net()
    precompile_s = 0.0
    if config == "bucket+pre":
        start = time.perf_counter()
        net.precompile([((BATCH, k), (BATCH,)) for k in keys], dtype=["float32", "int32"], progress=False)
        precompile_s = time.perf_counter() - start
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.005})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    epochs = []
    for _ in range(2):
        computed = valid = seen = 0
        start = time.perf_counter()
        for (tokens, length), label in loader:
            with autograd.record():
                loss = loss_fn(net(tokens, length), label)
            loss.backward()
            trainer.step(tokens.shape[0])
            computed += tokens.shape[0] * tokens.shape[1]
            valid += int(length.asnumpy().sum())
            seen += tokens.shape[0]
        loss.wait_to_read()
        epochs.append({"seconds": time.perf_counter() - start, "sequences": seen,
                       "padding": (computed - valid) / computed})
    plans = net.compiled_plans()
    return {"config": config, "padding_pct": round(100 * epochs[0]["padding"], 1),
            "epoch1_seq_s": round(epochs[0]["sequences"] / epochs[0]["seconds"], 1),
            "epoch2_seq_s": round(epochs[1]["sequences"] / epochs[1]["seconds"], 1),
            "compiles": len(plans), "compile_s": round(sum(r.seconds for r in plans), 2),
            "precompile_s": round(precompile_s, 2), "final_loss": round(float(loss.mean().asscalar()), 3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=1536, help="sequences per epoch")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_config(args.worker, args.n)))
        return
    configs = args.configs.split(",")
    results = {c: [] for c in configs}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for _ in range(args.rounds):
        for config in configs:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", config, "--n", str(args.n)],
                                 env=env, capture_output=True, text=True, check=True)
            results[config].append(json.loads(out.stdout.strip().splitlines()[-1]))
    medians = {}
    for config, runs in results.items():
        medians[config] = {k: (statistics.median(r[k] for r in runs) if isinstance(runs[0][k], (int, float))
                               else runs[0][k]) for k in runs[0]}
    base = medians.get("longest")
    for config, m in medians.items():
        if base is not None:
            m["epoch1_x_longest"] = round(m["epoch1_seq_s"] / base["epoch1_seq_s"], 2)
            m["epoch2_x_longest"] = round(m["epoch2_seq_s"] / base["epoch2_seq_s"], 2)
        m["rounds"] = len(results[config])
        m["load"] = round(os.getloadavg()[0], 1)
        print(json.dumps(m))


if __name__ == "__main__":
    main()
