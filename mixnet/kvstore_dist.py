"""`mx.kv.create('dist_sync')` (and 'dist', 'dist_sync_device', 'dist_device_sync'): MXNet's synchronous
distributed KVStore over MPI collectives (distributed/comm.py), for jobs launched with `mpiexec -n N python ...`.

    kv = mx.kv.create('dist_sync')
    kv.rank, kv.num_workers                 # this process's rank in COMM_WORLD, and its size
    kv.init(3, mx.nd.ones((2, 3)) * kv.rank)           # every rank now holds rank 0's value
    kv.push(3, [g0, g1])                    # summed over the list (devices) and over every worker
    kv.pull(3, out=a)                       # the sum (or, with set_optimizer, the updated weight)

MXNet's dist_sync keeps the values on parameter servers; here every worker keeps its own copy and a push is an
allreduce, so every rank ends with the same values: `init` copies rank 0's value to every rank (after checking
that every rank passed the same keys, shapes and dtypes: a DistError names the key, the ranks and their shapes),
and with `set_optimizer` (MXNet's update_on_kvstore) each rank runs the same updater on its copy after the
allreduce, so weights and optimizer states stay identical on every rank without moving them.

A push of several keys is summed in flat buckets of at most MIXNET_DIST_BUCKET_MB (one Allreduce each). Like every
MPI collective, init, push, pushpull, broadcast and barrier must be called by every rank in the same order with the
same keys: a push checks that (one small allreduce of a hash of its keys and dtypes) and raises a DistError naming
the ranks that differ, instead of mixing up buffers. A NaN or inf in any rank's pushed value shows in the sum every
rank receives, so every rank raises the same DistError, naming the key (the parameter, under a Trainer) and the
ranks whose own value held it, before anything is stored or updated. pull and row_sparse_pull are local.

With gluon.Trainer (kvstore='dist_sync', or this store): the Trainer initializes the store when it is created, so
every rank starts from rank 0's parameters before its first forward (MXNet waits for the first step; parameters
whose shape is still deferred then are sent at the first step, as in MXNet: seed every rank alike, or give the
shapes, for an exact first step). Each step pushes every gradient in one
call. MXNet's batch_size semantics: gradients are summed over the workers and divided by the batch_size given to
step(), so N workers each calling step(b) on their own b examples make exactly the update of one process summing
the loss over all N*b examples and calling step(b); pass step(N * b) for the mean over the global batch. The
default is update_on_kvstore=False (MXNet's is True, for its servers): every worker holds the whole model, so the
Trainer allreduces the gradients in place (pushpull; no copy when the optimizer has packed them into one buffer)
and runs its own updater, with the same values and optimizer states as an update in the store, which
update_on_kvstore=True still gives. allreduce_grads() then update() work too (e.g. to clip the summed gradients).

Not available over MPI, each with a DistError saying so: 'dist_async' (asynchronous parameter-server updates have
no counterpart in collectives: use 'dist_sync'), gradient compression ('2bit', '1bit'), row_sparse values.
"""
import numpy as np

from .base import MXNetError
from .distributed.comm import DistError, launched, world
from .kvstore import KVStore, _check_key, _key_value_pairs, register
from .ndarray.ndarray import NDArray, _wrap
from . import optimizer as opt

__all__ = ["DistKVStore", "SYNC_TYPES", "create_dist"]

SYNC_TYPES = ("dist", "dist_sync", "dist_sync_device", "dist_device_sync")


def create_dist(name):
    """A DistKVStore for a 'dist*' type name, or a DistError saying why not."""
    if "async" in name:
        raise DistError(f"KVStore type {name!r} is not supported by mixnet: asynchronous parameter-server updates "
                        "cannot be done with MPI collectives; use 'dist_sync' (every worker applies the same "
                        "summed update each step)")
    if name not in SYNC_TYPES:
        raise DistError(f"KVStore type {name!r} is not supported by mixnet: use one of {list(SYNC_TYPES)}")
    if not launched():
        raise DistError(f"KVStore type {name!r} is not supported in a process not started by an MPI launcher: run "
                        "`mpiexec -n N python your_script.py` (pip install \"mixnet[dist]\" installs mpi4py and "
                        "mpiexec); `mpiexec -n 1` runs a job of one worker")
    return DistKVStore(name)


def _host(arr):
    """The NDArray's values as a host numpy array (no copy on the CPU)."""
    data = arr._data
    return data if isinstance(data, np.ndarray) else data.get()


def _dense(k, arr, what):
    if not isinstance(arr, NDArray):
        raise MXNetError(f"KVStore.{what}: expected an NDArray for key {k!r}, got {type(arr).__name__}")
    if arr.stype != "default":
        raise DistError(f"KVStore.{what}: key {k!r} holds a {arr.stype} array: mixnet's distributed KVStore sums "
                        "dense arrays only (use dense parameters and gradients, or a single-process store)")
    return arr


class DistKVStore(KVStore):
    """Every rank holds a copy of every value; push sums over the ranks with MPI (see the module docstring)."""

    def __init__(self, kv_type="dist_sync"):
        super().__init__(kv_type)
        self._comm = world()
        self._key_names = {}      # key -> parameter name, set by gluon.Trainer for its error messages

    @property
    def rank(self):
        return self._comm.rank

    @property
    def num_workers(self):
        return self._comm.size

    def _describe(self, k):
        name = self._key_names.get(k)
        return f"key {k!r} (parameter {name!r})" if name is not None else f"key {k!r}"

    # ------------------------------------------------------------------ init: rank 0's values everywhere
    def init(self, key, value):
        pairs = [(_check_key(k), _dense(k, values[0], "init")) for k, values in _key_value_pairs(key, value)]
        for k, _ in pairs:
            if k in self._store:
                raise MXNetError(f"KVStore.init: {self._describe(k)} is already initialized")
        meta = [[k, list(v.shape), np.dtype(v.dtype).str] for k, v in pairs]
        self._check_init_meta(meta)
        for k, v in pairs:
            stored = v.copy()
            host = _host(stored)
            self._comm.broadcast_(host, 0, f"KVStore.init of {self._describe(k)}")
            if host is not stored._data:
                stored._data[...] = stored._ctx.xp.asarray(host)
            stored._bump_version()
            self._store[k] = stored

    def _check_init_meta(self, meta):
        """Every rank must init the same keys with the same shapes and dtypes: one allgather of the metadata, and
        the same message on every rank, naming the ranks that differ from rank 0."""
        everyone = self._comm.allgather_json(meta, "KVStore.init (keys, shapes and dtypes)")
        first = everyone[0]
        for rank, theirs in enumerate(everyone):
            if [m[0] for m in theirs] != [m[0] for m in first]:
                raise DistError(f"KVStore.init: rank 0 initializes keys {[m[0] for m in first]} but rank {rank} "
                                f"keys {[m[0] for m in theirs]}: every rank must init the same keys in the same order")
        for i, (k, shape, dtype) in enumerate(first):
            differ = [(rank, theirs[i]) for rank, theirs in enumerate(everyone) if theirs[i][1:] != [shape, dtype]]
            if differ:
                shown = ", ".join(f"{tuple(m[1])} {np.dtype(m[2])} on rank {rank}" for rank, m in differ[:4])
                raise DistError(f"KVStore.init: {self._describe(k)} has shape {tuple(shape)} {np.dtype(dtype)} on "
                                f"rank 0 but {shown}: every rank must build the same model")

    # ------------------------------------------------------------------ push: allreduce, then store or update
    def push(self, key, value, priority=0):
        keys, merged = [], []
        for k, values in _key_value_pairs(key, value):
            stored = self._stored(k)
            for v in values:
                _dense(k, v, "push")
                if v.shape != stored.shape:
                    raise MXNetError(f"KVStore.push: {self._describe(k)} was initialized with shape {stored.shape}, "
                                     f"pushed with shape {v.shape}")
            total = _host(values[0])
            for v in values[1:]:           # the devices' values first (a new array: the inputs stay as they are)
                total = total + _host(v)
            keys.append(k)
            merged.append(total)
        if not keys:
            return
        self._comm.check_same([[k, m.dtype.str] for k, m in zip(keys, merged)], "KVStore.push (keys and dtypes)")
        sums, nonfinite = self._comm.allreduce_grouped(merged, what="KVStore.push", check_finite=True)
        if nonfinite:
            self._report_nonfinite([keys[i] for i in nonfinite], [merged[i] for i in nonfinite])
        stores = [self._store[k] for k in keys]
        if self._updater is None:
            for stored, s in zip(stores, sums):
                stored._data[...] = s if isinstance(stored._data, np.ndarray) else stored._ctx.xp.asarray(s)
                stored._bump_version()
            return
        grads = [_wrap(s if stored._ctx.device_type != "gpu" else stored._ctx.xp.asarray(s), stored._ctx)
                 for stored, s in zip(stores, sums)]
        if isinstance(self._updater, opt.Updater):
            self._updater(keys, grads, stores)        # one multi-tensor update, as the Trainer's own updaters do
        else:
            for k, g, stored in zip(keys, grads, stores):
                self._updater(k, g, stored)

    def pushpull(self, key, value, out=None, priority=0):
        """push then pull. In place (out None or the values themselves, no updater, one host array per key) the
        values are summed where they lie (sum_in_place) and copied into the store."""
        pairs = _key_value_pairs(key, value)
        in_place = out is None or out is value or (
            isinstance(out, (list, tuple)) and isinstance(value, (list, tuple)) and len(out) == len(value)
            and all(o is v for o, v in zip(out, value)))
        arrays = self._in_place_arrays(pairs) if in_place and self._updater is None else None
        if arrays is None:
            return super().pushpull(key, value, out, priority)
        keys = [k for k, _ in pairs]
        self.sum_in_place(keys, arrays)
        for k, a in zip(keys, arrays):
            stored = self._store[k]
            np.copyto(stored._data, a._data)
            stored._bump_version()

    def _in_place_arrays(self, pairs):
        """The one host NDArray of each key, when every key has exactly one and its stored value is on the host
        too; else None."""
        arrays = []
        for k, values in pairs:
            if len(values) != 1 or not isinstance(values[0], NDArray) or not isinstance(values[0]._data, np.ndarray) \
                    or not isinstance(self._stored(k)._data, np.ndarray):
                return None
            arrays.append(_dense(k, values[0], "pushpull"))
        return arrays

    def sum_in_place(self, keys, arrays):
        """Sums each array (one host NDArray per initialized key) over the workers, in place, without storing the
        sums: gluon.Trainer's gradient allreduce when it updates on the workers. No bucket copies when the arrays
        lie back to back in one buffer (the optimizer's packed gradients: Comm.allreduce_inplace_). A NaN or inf
        raises the same DistError on every rank, naming the key and the ranks whose own value held it."""
        for k, a in zip(keys, arrays):
            stored = self._stored(k)
            if a.shape != stored.shape:
                raise MXNetError(f"KVStore.pushpull: {self._describe(k)} was initialized with shape {stored.shape}, "
                                 f"pushed with shape {a.shape}")
        self._comm.check_same([[k, a._data.dtype.str] for k, a in zip(keys, arrays)],
                              "KVStore.pushpull (keys and dtypes)")
        datas = [a._data for a in arrays]
        # this rank's own non-finite values, known before the sum overwrites them (one pass)
        mine = [k for k, d in zip(keys, datas) if d.dtype.kind in "fc" and not np.isfinite(d.sum())
                and not np.isfinite(d).all()]
        nonfinite = self._comm.allreduce_inplace_(datas, what="KVStore.pushpull", check_finite=True)
        for a in arrays:
            a._bump_version()
        if nonfinite:
            self._raise_nonfinite([keys[i] for i in nonfinite], mine)

    def _report_nonfinite(self, keys, local_values):
        """Every rank saw the same non-finite sums: find whose own values held the NaN or inf, then raise."""
        mine = [k for k, v in zip(keys, local_values) if v.dtype.kind in "fc" and not np.isfinite(v).all()]
        self._raise_nonfinite(keys, mine)

    def _raise_nonfinite(self, keys, mine):
        """keys: those whose sum is not finite (the same on every rank); mine: those whose value on this rank
        was not finite. Gathers who held what and raises the same DistError on every rank."""
        everyone = self._comm.allgather_json(mine, "KVStore.push (non-finite report)")
        culprits = {}
        for rank, ks in enumerate(everyone):
            for k in ks:
                culprits.setdefault(k, []).append(rank)
        if culprits:
            detail = "; ".join(f"{self._describe(k)}: ranks {ranks}" for k, ranks in culprits.items())
            raise DistError(f"KVStore.push on rank {self.rank}: a gradient holds NaN or inf (nothing was updated): "
                            f"{detail}")
        raise DistError(f"KVStore.push on rank {self.rank}: the sum over the ranks overflowed to inf for "
                        f"{', '.join(self._describe(k) for k in keys)} (every rank's own value was finite; nothing "
                        "was updated)")

    # ------------------------------------------------------------------ the rest
    def set_gradient_compression(self, compression_params):
        ctype = (compression_params or {}).get("type", "none")
        if ctype != "none":
            raise DistError(f"KVStore {self.type!r}: gradient compression {ctype!r} is not supported over MPI "
                            "(gradients are summed uncompressed by MPI_Allreduce); use compression_params=None")
        self._compression = compression_params

    def barrier(self):
        """Waits until every rank has called barrier (within MIXNET_DIST_TIMEOUT)."""
        self._comm.barrier("KVStore.barrier")

    _barrier = barrier        # MXNet's name for it

    def num_dead_node(self, node_id, timeout=60):
        """MPI has no membership query: a dead or hung rank shows as the next collective's DistTimeoutError. So: 0
        while every collective has completed, 1 (at least one peer is dead or hung) after one timed out."""
        return 0 if self._comm._failed is None else 1

    def __repr__(self):
        return f"<DistKVStore {self.type!r}: rank {self.rank} of {self.num_workers}>"


register("dist", create_dist)      # mx.kv.create('dist_sync'); mpi4py is imported only when a store is made
