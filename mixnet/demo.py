"""The mixnet demo (`python -m mixnet.demo [--quick]`): MXNet 1.x Gluon code, run by mixnet.

A recurrent net learns arithmetic from strings: it reads "43+3" one character at a time (an Embedding, a
stack of GRU layers told each string's length, the output at the last valid step) and spells the answer
("  46") with a small Dense head. The data is generated here; batches are bucketed by length
(FixedBucketSampler + Pad), so the hybridized net compiles one graph per batch shape and computes little
padding; the graphs of the training buckets are compiled before the first epoch. At the end the net is
exported and reloaded as a SymbolBlock, which must predict the same.

BLAS runs single-threaded here: the GEMMs of this model are small (64 x 128 x 384 per GRU step), where
OpenBLAS's threads cost more than they give (6-10x slower on two cores with anything else running).
"""
import argparse
import os
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.gluon import nn, rnn
from mixnet.gluon.data import batchify
from mixnet.gluon.data.sampler import padding_fraction
from mixnet import _demo_data as data

# Settings: the full run, and --quick (the test suite's). Accuracy is exact-answer accuracy on problems the
# net never saw in training; QUICK_ACCURACY is what --quick reliably reaches (the test checks it).
FULL = dict(max_digits=3, train=48000, valid=2000, epochs=6, hidden=128, layers=2, batch_size=64, lr=5e-3)
QUICK = dict(max_digits=2, train=4000, valid=1000, epochs=10, hidden=128, layers=2, batch_size=32, lr=1e-2)
QUICK_ACCURACY = 0.7


class Calculator(gluon.HybridBlock):
    """Characters -> embedding -> GRU stack (valid lengths) -> last valid step -> per-position answer classes."""

    def __init__(self, hidden, layers, width, **kwargs):
        super().__init__(**kwargs)
        self._width = width
        with self.name_scope():
            self.embed = nn.Embedding(len(data.SYMBOLS) + 1, 32)
            self.gru = rnn.GRU(hidden, num_layers=layers, layout="NTC", use_sequence_length=True)
            self.head = nn.HybridSequential()
            self.head.add(nn.Dense(2 * hidden, activation="relu"),
                          nn.Dense(width * len(data.ANSWER_SYMBOLS)))

    def hybrid_forward(self, F, chars, length):
        steps = self.gru(self.embed(chars), sequence_length=length)           # (batch, time, hidden)
        last = F.SequenceLast(steps, sequence_length=length, use_sequence_length=True, axis=1)
        return self.head(last).reshape((0, self._width, len(data.ANSWER_SYMBOLS)))


def bucketed_loader(texts, answers, width, batch_size, training):
    """Batches of problems of one length each (one bucket per length). In training a bucket's remainder rolls
    over into the next epoch, so every training batch of a bucket has the same shape: one compiled graph."""
    samples = [(data.encode(t), data.encode_answer(a, width)) for t, a in zip(texts, answers)]
    lengths = [len(t) for t in texts]
    sampler = gluon.data.FixedBucketSampler(lengths, batch_size, bucket_keys=sorted(set(lengths)),
                                            shuffle=training, last_batch="rollover" if training else "keep")
    batchify_fn = batchify.Tuple(batchify.Pad(ret_length=True, bucket_keys=sampler.bucket_keys),
                                 batchify.Stack())
    loader = gluon.data.DataLoader(gluon.data.SimpleDataset(samples), batch_sampler=sampler,
                                   batchify_fn=batchify_fn)
    return loader, sampler


def predict(net, loader, sampler):
    """Predicted answers (ints, or None) in the dataset's order; the loader's batches come bucket by bucket."""
    guesses = []
    for (chars, length), _ in loader:
        guesses += data.decode_answers(net(chars, length.astype("float32")).argmax(axis=-1).asnumpy())
    ordered = [None] * len(guesses)
    for index, guess in zip((i for batch in sampler for i in batch), guesses):
        ordered[index] = guess
    return ordered


def train(max_digits, train, valid, epochs, hidden, layers, batch_size, lr, ops="+", seed=0, progress=True):
    """Trains the calculator; prints what it did and returns a dict of the measured figures."""
    mx.random.seed(seed)
    np.random.seed(seed)                                  # FixedBucketSampler shuffles with numpy's global RNG
    texts, answers = data.make_problems(train + valid, max_digits, seed, ops)
    width = data.answer_width(max_digits)
    train_loader, sampler = bucketed_loader(texts[:train], answers[:train], width, batch_size, training=True)
    valid_loader, valid_sampler = bucketed_loader(texts[train:], answers[train:], width, 4 * batch_size,
                                                  training=False)
    print(f"data: {train} training and {valid} validation problems such as {texts[0]!r} = {answers[0]} "
          f"(operands of 1-{max_digits} digits, lengths {min(map(len, texts))}-{max(map(len, texts))})")

    net = Calculator(hidden, layers, width)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net.precompile([((batch_size, k), (batch_size,)) for k in sampler.bucket_keys], dtype="float32",
                   progress=progress)                 # one training graph per bucket, before the first epoch
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": lr, "clip_gradient": 1.0})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(axis=-1)
    steps, step = epochs * len(sampler), 0
    start = time.perf_counter()
    for epoch in range(epochs):
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{epochs}", unit="batch", disable=not progress)
        seen = correct = 0
        total_loss, epoch_start = 0.0, time.perf_counter()
        for (chars, length), target in bar:
            trainer.set_learning_rate(lr * 0.5 * (1 + np.cos(np.pi * step / steps)))      # cosine decay
            with autograd.record():
                out = net(chars, length.astype("float32"))
                loss = loss_fn(out, target)
            loss.backward()
            trainer.step(chars.shape[0])
            step += 1
            exact = (out.argmax(axis=-1) == target).min(axis=-1)
            seen += chars.shape[0]
            correct += exact.sum().asscalar()
            total_loss += loss.sum().asscalar()
            bar.set_postfix_str(f"loss {total_loss / seen:.3f}, acc {correct / seen:.1%}, "
                                f"{seen / (time.perf_counter() - epoch_start):,.0f} seq/s")
    train_seconds = time.perf_counter() - start

    guesses = predict(net, valid_loader, valid_sampler)
    accuracy = float(np.mean([g == a for g, a in zip(guesses, answers[train:])]))
    print(f"\nvalidation: {accuracy:.1%} exact answers on {valid} unseen problems "
          f"(training: {train_seconds:.0f} s, {epochs} epochs)")
    show_predictions(texts[train:], guesses, answers[train:])

    lengths = [len(t) for t in texts]
    train_shapes = batch_shapes(sampler, lengths)
    valid_shapes = batch_shapes(valid_sampler, lengths[train:])
    plans = net.compiled_plans()
    print(f"\nbuckets (padded length): {sampler.bucket_keys}; {len(plans)} graphs compiled for {train_shapes} "
          f"training + {valid_shapes} validation batch shapes:")
    print(plans)
    waste_bucketed = sampler.padding_fraction()
    random_batches = list(gluon.data.BatchSampler(gluon.data.RandomSampler(train), batch_size))
    waste_plain = padding_fraction(lengths[:train], random_batches)
    print(f"padding: {waste_bucketed:.1%} of computed time steps with bucketing, "
          f"{waste_plain:.1%} with random batches")
    same = export_round_trip(net, valid_loader, valid_sampler, guesses)
    return dict(accuracy=accuracy, train_seconds=train_seconds, graphs=len(plans),
                batch_shapes=train_shapes + valid_shapes,
                buckets=sampler.bucket_keys, waste_bucketed=waste_bucketed, waste_plain=waste_plain,
                export_same=same)


def batch_shapes(sampler, lengths):
    """How many distinct (batch size, padded length) shapes the sampler's batches have."""
    return len({(len(batch), max(lengths[i] for i in batch)) for batch in sampler})


def show_predictions(texts, guesses, answers, count=6):
    """A few validation problems of increasing length."""
    picks = np.argsort([len(t) for t in texts], kind="stable")[np.linspace(0, len(texts) - 1, count).astype(int)]
    for i in picks:
        mark = "✓" if guesses[i] == answers[i] else f"✗ (is {answers[i]})"
        print(f"  {texts[i]:>8} -> {guesses[i]} {mark}")


def export_round_trip(net, loader, sampler, guesses):
    """export() the net, load it back as a SymbolBlock, and check it predicts the same answers."""
    with tempfile.TemporaryDirectory() as folder:
        symbol_file, params_file = net.export(os.path.join(folder, "calculator"))
        loaded = gluon.SymbolBlock.imports(symbol_file, ["data0", "data1"], params_file)
        reloaded = predict(loaded, loader, sampler)
    if reloaded != guesses:
        differ = sum(a != b for a, b in zip(reloaded, guesses))
        raise RuntimeError(f"export round trip: the reloaded SymbolBlock changed {differ} of {len(guesses)} "
                           "predictions")
    print(f"export -> SymbolBlock.imports: same {len(guesses)} predictions")
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mixnet.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"a small run (2-digit operands; reaches {QUICK_ACCURACY:.0%} validation accuracy)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with threadpool_limits(limits=1, user_api="blas"):
        return train(**(QUICK if args.quick else FULL), seed=args.seed)


if __name__ == "__main__":
    main()
