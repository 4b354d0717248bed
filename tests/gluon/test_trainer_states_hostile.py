"""Hostile optimizer-state files for Trainer.load_states (and KVStore.load_optimizer_states): corrupt, truncated,
mutated (bytes, the JSON document, the state arrays) or mismatched files (another network, another optimizer) load
and train on, or raise an MXNetError naming the file and what does not fit - never another exception, within
~2 s and ~100 MB each (tests/hostile_inputs.py) - and a refused file changes nothing: the trainer goes on exactly
as if it had never seen it."""
import functools
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostile_inputs as hostile
import mixnet as mx
from mixnet import autograd, gluon, kvstore, lr_scheduler
from mixnet import optimizer as opt
from mixnet.base import MXNetError
from mixnet.optimizer.optimizer import STATES_JSON_KEY
from mixnet.serialization import decode, encode

X = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)     # made an NDArray where used, on the test's device
KINDS = {
    "sgd": ("sgd", lambda: {"learning_rate": 0.1, "momentum": 0.9}),
    "adam": ("adam", lambda: {"learning_rate": 0.01, "wd": 0.001}),
    "nadam": ("nadam", lambda: {"learning_rate": 0.01}),
    "rmsprop": ("rmsprop", lambda: {"learning_rate": 0.01, "centered": True, "clip_weights": 1.0}),
    "sgd_factor": ("sgd", lambda: {"lr_scheduler": lr_scheduler.FactorScheduler(2, 0.5, base_lr=0.1)}),
    "adam_fp16": ("adam", lambda: {"learning_rate": 0.01, "multi_precision": True}),
}


def _net(sizes=(3, 2), dtype="float32"):
    mx.random.seed(1)
    net = gluon.nn.HybridSequential()
    for size in sizes:
        net.add(gluon.nn.Dense(size, in_units=4 if not len(net) else net[-1]._units))
    net.initialize(mx.init.Uniform(0.5))
    net.cast(dtype)
    return net


def _trainer(kind, sizes=(3, 2), **kwargs):
    name, params = KINDS[kind]
    net = _net(sizes, "float16" if kind.endswith("fp16") else "float32")
    return net, gluon.Trainer(net.collect_params(), name, params(), **kwargs)


def _step(net, trainer):
    with autograd.record():
        loss = (net(mx.nd.array(X, dtype=net[0].weight.dtype)) ** 2).sum()
    loss.backward()
    trainer.step(2)


def _states_file(kind, sizes=(3, 2), steps=2):
    net, trainer = _trainer(kind, sizes)
    for _ in range(steps):
        _step(net, trainer)
    states = trainer._updaters[0].get_states(dump_optimizer=True)
    return states


@functools.lru_cache(maxsize=None)
def _files(context):
    """Each kind's states file and three of other networks, made on first use on the test's default device (at
    import time that would be cpu(0) whatever device the tests run on); `context` keys the cache."""
    seeds = {kind: _states_file(kind) for kind in KINDS}
    others = [_states_file("sgd", (5,)), _states_file("adam", (3, 3)), _states_file("adam", (2, 2))]
    return seeds, others


def _seeds():
    return _files(str(mx.current_context()))[0]


def _others():
    return _files(str(mx.current_context()))[1]


def _split(data):
    arrays, names = decode(data)
    by_name = dict(zip(names, arrays))
    doc = json.loads(by_name.pop(STATES_JSON_KEY).tobytes())
    return doc, by_name


def _join(doc, by_name):
    blob = np.frombuffer(json.dumps(doc).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    names = list(by_name) + [STATES_JSON_KEY]
    return encode(list(by_name.values()) + [blob], names, version=3)


def _mutate_arrays(by_name, rng):
    name = rng.choice(sorted(by_name))
    a = by_name[name]
    how = rng.randrange(6)
    if how == 0:
        by_name[name] = a.reshape(a.shape[::-1]).T.copy() if a.ndim > 1 else a[:-1].copy()
    elif how == 1:
        by_name[name] = a.astype(rng.choice([np.float64, np.float16, np.int32, np.uint8, np.bool_]))
    elif how == 2:
        by_name[name] = np.zeros((3,) + a.shape, a.dtype)
    elif how == 3:
        del by_name[name]
    elif how == 4:
        by_name[rng.choice(hostile.HOSTILE_STRINGS[:12]) or "x"] = by_name.pop(name)
    else:
        by_name[name] = np.full(a.shape, rng.choice([np.nan, np.inf, -1e30]), a.dtype)
    return by_name


def _mutant(seed, rng):
    """A damaged states file: bytes, the JSON document, the arrays, or another network's or optimizer's file."""
    how = rng.randrange(10)
    if how < 3:
        return hostile.mutate_bytes(seed, rng)
    if how == 9:
        return rng.choice(_others() + list(_seeds().values()))
    doc, by_name = _split(seed)
    if how < 8 or not by_name:
        hostile.mutate_json(doc, rng, max_mutations=3)
    else:
        _mutate_arrays(by_name, rng)
    return _join(doc, by_name)


def _snapshot(trainer):
    """What a refused load must leave as it was: the updaters' state dicts and the optimizer's settings."""
    optimizer = trainer._optimizer
    sched = optimizer.lr_scheduler
    return ([(u, u.states, u.optimizer) for u in trainer._updaters], optimizer, dict(vars(optimizer)),
            dict(vars(sched)) if sched is not None else None)


def _unchanged(trainer, snapshot):
    updaters, optimizer, settings, sched = snapshot
    assert trainer._optimizer is optimizer
    for u, states, o in updaters:
        assert u.states is states and u.optimizer is o
    assert vars(optimizer).keys() == settings.keys()
    for key, value in settings.items():
        assert vars(optimizer)[key] is value, key
    if sched is not None:
        assert vars(optimizer.lr_scheduler) == sched


def _fresh(kind):
    """A network and trainer that have taken a step and loaded their kind's seed file."""
    net, trainer = _trainer(kind)
    _step(net, trainer)
    trainer._updaters[0].set_states(_seeds()[kind])
    return net, trainer


@pytest.fixture(scope="module")
def setups(tmp_path_factory):
    """One trainer per kind, reused while files are refused (a file that loads changes it: then a fresh one).
    They are made on first use, in the test, so on the test's default device (a module-scoped fixture runs before
    the per-test default device applies)."""
    return tmp_path_factory.mktemp("hostile-states"), {}


@pytest.mark.filterwarnings("ignore")         # hostile settings overflow, warn...
@hostile.fuzz_settings(350)
@given(st.sampled_from(sorted(KINDS)), hostile.RNGS)
def test_mutated_states_files(setups, kind, rng):
    folder, made = setups
    path = str(folder / "mutant.states")

    def check(data):
        if kind not in made:
            made[kind] = _fresh(kind)
        net, trainer = made[kind]
        with open(path, "wb") as f:
            f.write(data)
        snapshot = _snapshot(trainer)
        with hostile.bounded(data):
            result = hostile.outcome(trainer.load_states, path)
            if isinstance(result, MXNetError):
                assert repr(path) in str(result)
                _unchanged(trainer, snapshot)
            else:
                hostile.outcome(_step, net, trainer)
        if not isinstance(result, MXNetError):
            made[kind] = _fresh(kind)
    hostile.each((_mutant(_seeds()[kind], rng) for _ in range(hostile.BATCH)), check)


# ---------------------------------------------------------------------------------------------------------
# the probes, one by one
def _twins(kind):
    """Two identical (network, trainer) pairs after one step."""
    pairs = [_trainer(kind) for _ in range(2)]
    for net, trainer in pairs:
        _step(net, trainer)
    return pairs


def _goes_on_like_its_twin(pair, twin):
    for _ in range(2):
        _step(*pair)
        _step(*twin)
    for a, b in zip(pair[0].collect_params().values(), twin[0].collect_params().values()):
        np.testing.assert_array_equal(a.data().asnumpy(), b.data().asnumpy())


def _bad_json(kind, change):
    doc, by_name = _split(_seeds()[kind])
    change(doc)
    return _join(doc, by_name)


def _bad_doc_bytes(kind, raw):
    _, by_name = _split(_seeds()[kind])
    by_name = dict(by_name)
    return encode(list(by_name.values()) + [np.frombuffer(raw, np.uint8)], list(by_name) + [STATES_JSON_KEY],
                  version=3)


PROBES = [
    ("truncated", lambda: _seeds()["adam"][:len(_seeds()["adam"]) // 2], ["truncated"]),
    ("empty", lambda: b"", ["truncated"]),
    ("not utf-8", lambda: _bad_doc_bytes("adam", b"\xff\xfe{}"), ["__mixnet_states__", "UnicodeDecodeError"]),
    ("not json", lambda: _bad_doc_bytes("adam", b'{"format": '), ["__mixnet_states__", "JSONDecodeError"]),
    ("deep json", lambda: _bad_doc_bytes("adam", b"[" * 100000), ["__mixnet_states__"]),
    ("no states key", lambda: _bad_json("adam", lambda d: d.pop("states")), ["'states'"]),
    ("no class", lambda: _bad_json("adam", lambda d: d["optimizer"].pop("class")), ["'optimizer'"]),
    ("unknown class", lambda: _bad_json("adam", lambda d: d["optimizer"].update({"class": "Nope"})),
     ["'Nope'", "not registered"]),
    ("string lr", lambda: _bad_json("adam", lambda d: d["optimizer"]["hyperparams"].update({"lr": "0.1"})),
     ["'lr'"]),
    ("nan beta", lambda: _bad_json("adam", lambda d: d["optimizer"]["hyperparams"].update({"beta1": float("nan")})),
     ["'beta1'"]),
    ("bad counts", lambda: _bad_json("adam", lambda d: d["optimizer"]["hyperparams"].update(
        {"update_counts": {"cpu(0)": [[0, -1]]}})), ["update_counts"]),
    ("missing array", lambda: _bad_json("adam", lambda d: d["states"][0][1]["tuple"][0].update({"nd": "zz"})),
     ["'zz'"]),
    ("unknown index", lambda: _bad_json("adam", lambda d: d["states"][0].__setitem__(0, 7)),
     ["parameter 7", "not among the 4"]),
    ("version", lambda: _bad_json("adam", lambda d: d.update(version=2)), ["version"]),
    ("other network", lambda: _others()[1], ["parameter 2", "(2, 3) float32", "(3, 3) float32"]),
    ("other network, sgd", lambda: _others()[0], ["parameter 0", "(3, 4) float32", "(5, 4) float32"]),
    ("other optimizer's states", lambda: _bad_json("sgd", lambda d: d.pop("optimizer")),
     ["parameter 0", "Adam", "expected a tuple of 2, found an array (3, 4) float32"]),
]


@pytest.mark.parametrize("label,make,words", PROBES, ids=[p[0] for p in PROBES])
def test_refused_file_is_named_and_changes_nothing(tmp_path, label, make, words):
    pair, twin = _twins("adam")
    path = str(tmp_path / "bad.states")
    with open(path, "wb") as f:
        f.write(make())
    snapshot = _snapshot(pair[1])
    with pytest.raises(MXNetError) as info:
        pair[1].load_states(path)
    message = str(info.value)
    for word in [repr(path)] + words:
        assert word in message, (word, message)
    _unchanged(pair[1], snapshot)
    _goes_on_like_its_twin(pair, twin)


def test_mismatch_names_the_parameter():
    net, trainer = _trainer("adam")
    _step(net, trainer)
    name = list(net.collect_params())[2]              # _others()[1]'s second layer is (3, 3), this one's (2, 3)
    with pytest.raises(MXNetError, match=f"parameter 2 \\('{name}'\\).*\\(2, 3\\) float32.*\\(3, 3\\) float32"):
        trainer._updaters[0].set_states(_others()[1], "x", {i: p.data() for i, p in enumerate(
            net.collect_params().values())}, {i: n for i, n in enumerate(net.collect_params())})


def test_a_file_of_another_optimizer_switches_it_as_mxnet_does(tmp_path):
    net, trainer = _trainer("sgd")
    _step(net, trainer)
    path = str(tmp_path / "adam.states")
    with open(path, "wb") as f:
        f.write(_seeds()["adam"])
    trainer.load_states(path)
    assert isinstance(trainer.optimizer, opt.Adam) and trainer.optimizer.lr == 0.01
    _step(net, trainer)


def test_fp16_multi_precision_states_are_checked(tmp_path):
    net, trainer = _trainer("adam_fp16")
    _step(net, trainer)
    path = str(tmp_path / "fp32.states")
    with open(path, "wb") as f:
        f.write(_seeds()["adam"])         # float32 states, and its settings turn multi_precision off
    with pytest.raises(MXNetError, match="state\\[0\\]: expected an array \\(3, 4\\) float16, found an array "
                                         "\\(3, 4\\) float32"):
        trainer.load_states(path)


def test_states_for_a_parameter_initialized_later_are_checked_on_first_use(tmp_path):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(3, in_units=4), gluon.nn.Dense(2))           # the second one's shape is deferred
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "adam")
    path = str(tmp_path / "other.states")
    with open(path, "wb") as f:
        f.write(_others()[2])                       # Dense(2, 2) x 2: parameter 0 does not fit (3, 4)
    with pytest.raises(MXNetError, match="parameter 0"):
        trainer.load_states(path)
    doc, by_name = _split(_others()[2])
    doc["states"] = [s for s in doc["states"] if s[0] >= 2]       # only the deferred layer's states
    with open(path, "wb") as f:
        f.write(_join(doc, by_name))
    trainer.load_states(path)                       # nothing to check them against yet
    with autograd.record():
        loss = net(mx.nd.array(X)).sum()
    loss.backward()
    with pytest.raises(MXNetError, match="loaded for parameter 2 does not fit"):
        trainer.step(2)


def test_kvstore_paths(tmp_path):
    ctxs = [mx.cpu(0), mx.cpu(1)]
    p = gluon.Parameter("w", shape=(3,), init="ones")
    p.initialize(ctx=ctxs)
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.1, "momentum": 0.5}, update_on_kvstore=True)
    with autograd.record():
        losses = [(d * d).sum() for d in p.list_data()]
    autograd.backward(losses)
    trainer.step(1)
    path = str(tmp_path / "kv.states")
    with open(path, "wb") as f:
        f.write(_others()[0])
    before = trainer._kvstore._updater.states
    with pytest.raises(MXNetError, match="kv.states.*parameter 0 \\('w'\\)"):
        trainer.load_states(path)
    assert trainer._kvstore._updater.states is before
    store = kvstore.create("local")
    store.init(0, mx.nd.ones((3,)))
    store.set_optimizer(opt.create("sgd", momentum=0.5))
    with pytest.raises(MXNetError, match="kv.states.*parameter 0"):
        store.load_optimizer_states(path)
    with pytest.raises(MXNetError, match="cannot read"):
        store.load_optimizer_states(str(tmp_path / "missing.states"))
    with pytest.raises(MXNetError, match="bytes"):
        opt.get_updater(opt.create("sgd")).set_states("not bytes")


def test_hostile_scheduler_state_is_refused(tmp_path):
    net, trainer = _trainer("sgd_factor")
    _step(net, trainer)
    path = str(tmp_path / "s.states")
    for attrs, words in [({"count": -1}, ["count"]), ({"__class__": 1}, ["no attribute '__class__'"]),
                         ({"base_lr": "x"}, ["base_lr"]), ({"base_lr": float("inf")}, ["base_lr"])]:
        data = _bad_json("sgd_factor", lambda d: d["optimizer"]["hyperparams"]["lr_scheduler"]["attrs"].update(
            attrs))
        with open(path, "wb") as f:
            f.write(data)
        snapshot = _snapshot(trainer)
        with pytest.raises(MXNetError) as info:
            trainer.load_states(path)
        for word in words:
            assert word in str(info.value)
        _unchanged(trainer, snapshot)
