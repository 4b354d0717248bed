"""`mx.kv`: a single-process KVStore ('local', 'device' and their aliases): rank 0 of 1 worker.

    kv = mx.kv.create('local')
    kv.init(3, mx.nd.ones((2, 3)))
    kv.push(3, [mx.nd.ones((2, 3)), mx.nd.ones((2, 3))])   # a list is summed (one value per device)
    out = mx.nd.zeros((2, 3)); kv.pull(3, out=out)          # out == 2

With `set_optimizer(opt)` (or `_set_updater(fn)`), a push runs `updater(key, merged_value, stored)` instead of
storing the value. row_sparse values: `row_sparse_pull` copies the requested rows. The distributed 'dist_sync'
types (over MPI, under `mpiexec`) are kvstore_dist.py's; 'dist_async', 'horovod', 'byteps', 'nccl' are not available.
"""
from .base import MXNetError
from .ndarray.ndarray import NDArray
from .ndarray.sparse import retain
from . import optimizer as opt

__all__ = ["KVStore", "TestStore", "UnsupportedError", "create"]

_LOCAL_TYPES = ("local", "device", "local_update_cpu", "local_allreduce_cpu", "local_allreduce_device")


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _key_value_pairs(key, value):
    """[(key, [values...])]: one key with one array or a list (per device), or lists of keys and values."""
    if isinstance(key, (list, tuple)):
        values = _as_list(value)
        if len(values) != len(key):
            raise MXNetError(f"KVStore: {len(key)} keys but {len(values)} values")
        return [(k, _as_list(v)) for k, v in zip(key, values)]
    return [(key, _as_list(value))]


def _check_key(key, store=None):
    """key, checked: an int or a str, and (given the store) of the same kind as the store's other keys (MXNet
    keeps int and str keys apart: a store uses one kind)."""
    if not isinstance(key, (int, str)):
        raise MXNetError(f"KVStore keys must be int or str, got {type(key).__name__}")
    if store is not None and store._store:
        kind = type(next(iter(store._store)))
        if not isinstance(key, kind):
            raise MXNetError(f"KVStore: key {key!r} is a {type(key).__name__}, but this store's keys are "
                             f"{kind.__name__}s (one store holds int keys or str keys, not both)")
    return key


class KVStore:
    """Key -> NDArray store in one process. Pushes of several arrays for one key are summed; pulls broadcast."""
    OPTIMIZER = "optimizer"

    def __init__(self, kv_type="local"):
        self._type = kv_type
        self._store = {}
        self._updater = None
        self._optimizer = None
        self._compression = None

    @property
    def type(self):
        return self._type

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1

    def init(self, key, value):
        for k, values in _key_value_pairs(key, value):
            _check_key(k, self)
            if k in self._store:
                raise MXNetError(f"KVStore.init: key {k!r} is already initialized")
            src = values[0]
            if not isinstance(src, NDArray):
                raise MXNetError(f"KVStore.init: expected an NDArray for key {k!r}, got {type(src).__name__}")
            self._store[k] = src.copy()

    def _stored(self, key):
        try:
            return self._store[_check_key(key, self)]
        except KeyError:
            raise MXNetError(f"KVStore: key {key!r} has not been initialized (call init first)") from None

    def push(self, key, value, priority=0):
        for k, values in _key_value_pairs(key, value):
            stored = self._stored(k)
            if len(values) == 1:
                merged = values[0].as_in_context(stored.context)
            else:
                merged = values[0].copyto(stored.context)
                for v in values[1:]:
                    merged._data += v._converted_for(merged)
                merged._bump_version()      # a sparse sum stores the rows that are nonzero in it
            if self._updater is not None:
                self._updater(k, merged, stored)
            else:
                stored._data[...] = merged._data
                stored._bump_version()

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copies the stored value into out; a sparse (row_sparse) value is skipped when ignore_sparse, as in
        MXNet (its rows are pulled with row_sparse_pull)."""
        if out is None:
            raise MXNetError("KVStore.pull: `out` is required")
        for k, outs in _key_value_pairs(key, out):
            stored = self._stored(k)
            for o in outs:
                if ignore_sparse and o.stype != "default":
                    continue        # MXNet: sparse outputs get their rows through row_sparse_pull
                o._data[...] = stored._converted_for(o)
                o._bump_version()

    def pushpull(self, key, value, out=None, priority=0):
        """push then pull (into `value` itself when `out` is None): a sum over devices without an updater."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """init(key, value), then pull into out."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Copies the rows row_ids of a row_sparse value into out (one row_ids for all outs, or one per out);
        out keeps only those rows."""
        if out is None or row_ids is None:
            raise MXNetError("KVStore.row_sparse_pull: `out` and `row_ids` are required")
        # one key: row_ids is one array for every out, or a list with one per out; a list of keys: one such
        # entry per key
        pairs = _key_value_pairs(key, out)
        per_key = row_ids if isinstance(key, (list, tuple)) else [row_ids]
        if len(per_key) != len(pairs):
            raise MXNetError(f"KVStore.row_sparse_pull: {len(per_key)} row_ids entries for {len(pairs)} keys")
        for (k, outs), key_ids in zip(pairs, per_key):
            stored = self._stored(k)
            ids = _as_list(key_ids)
            if len(ids) == 1:
                ids = ids * len(outs)
            if len(ids) != len(outs):
                raise MXNetError(f"KVStore.row_sparse_pull: {len(ids)} row_ids for {len(outs)} outputs of key "
                                 f"{k!r}")
            for o, rid in zip(outs, ids):
                if stored.stype != "row_sparse" or o.stype != "row_sparse":
                    raise MXNetError(f"KVStore.row_sparse_pull: key {k!r} holds a {stored.stype} value and the "
                                     f"output is {o.stype}; both must be row_sparse (use pull for dense values)")
                # written like pull: outside autograd (a parameter's array may be pulled inside record())
                rows = retain(stored, rid)
                o._data[...] = rows._converted_for(o)
                o._bump_version()
                o._set_rows(rows._rows())

    @staticmethod
    def is_capable(capability):
        """Whether this store supports a capability; 'optimizer': it can run updates itself (update_on_kvstore)."""
        if capability.lower() == KVStore.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    def set_optimizer(self, optimizer):
        self._optimizer = optimizer
        self._updater = opt.get_updater(optimizer)

    def _set_updater(self, updater):
        self._updater = updater

    def set_gradient_compression(self, compression_params):
        ctype = (compression_params or {}).get("type", "none")
        if ctype != "none":
            raise MXNetError(f"KVStore: gradient compression {ctype!r} is not supported by mixnet's single-process "
                             "KVStore")
        self._compression = compression_params

    def save_optimizer_states(self, fname, dump_optimizer=False):
        if self._updater is None or not isinstance(self._updater, opt.Updater):
            raise MXNetError("KVStore.save_optimizer_states: no optimizer was set (set_optimizer)")
        opt.optimizer.write_atomic(fname, self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        if self._updater is None or not isinstance(self._updater, opt.Updater):
            raise MXNetError("KVStore.load_optimizer_states: no optimizer was set (set_optimizer)")
        try:
            with open(fname, "rb") as f:
                data = f.read()
        except OSError as err:
            raise MXNetError(f"cannot read optimizer states from {fname!r}: {err}") from None
        # checked against the stored weights before anything changes (Updater.set_states)
        self._updater.set_states(data, repr(fname), dict(self._store))
        self._optimizer = self._updater.optimizer

    def barrier(self):
        pass

    def num_dead_node(self, node_id, timeout=60):
        return 0


class UnsupportedError(MXNetError, NotImplementedError):
    """A KVStore method this store type does not provide (MXNet raises NotImplementedError for them)."""


class TestStore(KVStore):
    """MXNet's 'teststore' (a Python KVStore its tests use): sums like 'local' and broadcasts without keeping
    state (broadcasting a key again is allowed), but cannot run an optimizer, so a Trainer on it updates on the
    workers (update_on_kvstore=False)."""

    def __init__(self):
        super().__init__("teststore")

    def broadcast(self, key, value, out, priority=0):
        """Copies value into out (and stores it, replacing an earlier value of the key)."""
        for k, _ in _key_value_pairs(key, value):
            self._store.pop(_check_key(k), None)
        super().broadcast(key, value, out, priority)

    @staticmethod
    def is_capable(capability):
        if capability.lower() == KVStore.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    def set_optimizer(self, optimizer):
        raise UnsupportedError("KVStore 'teststore' cannot run an optimizer (is_capable('optimizer') is False)")

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise UnsupportedError("KVStore 'teststore' keeps no optimizer states (it cannot run an optimizer)")

    def load_optimizer_states(self, fname):
        raise UnsupportedError("KVStore 'teststore' keeps no optimizer states (it cannot run an optimizer)")


# Store types defined in other modules (kvstore_dist.py: 'dist*'), by name prefix. They subclass KVStore, so this
# module cannot import them (layers point down): each registers itself here when mixnet/__init__.py imports it.
_REGISTERED = {}


def register(prefix, factory):
    """create(name) calls factory(name) for a name starting with prefix (MXNet's KVStoreBase.register, by prefix)."""
    _REGISTERED[prefix] = factory


def create(name="local"):
    """A KVStore: 'local' / 'device' (and MXNet's local aliases) in one process, MXNet's 'teststore', or a
    distributed 'dist_sync' store (kvstore_dist.py) in a job launched by mpiexec."""
    if isinstance(name, KVStore):
        return name
    if not isinstance(name, str):
        raise MXNetError(f"kv.create: expected a type string, got {type(name).__name__}")
    name = name.lower()
    if name == "teststore":
        return TestStore()
    for prefix, factory in _REGISTERED.items():
        if name.startswith(prefix):
            return factory(name)
    if name not in _LOCAL_TYPES:
        raise MXNetError(f"KVStore type {name!r} is not supported by mixnet (single process): use one of "
                         f"{list(_LOCAL_TYPES)}")
    return KVStore(name)
