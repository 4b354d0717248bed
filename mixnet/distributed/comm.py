"""The one communicator of a multi-process job: MPI's COMM_WORLD through mpi4py, with a deadline on every
collective so that a peer that died or hangs surfaces as an error instead of a hang.

    from mixnet.distributed import world
    w = world()                  # imports mpi4py and initializes MPI on first use
    w.rank, w.size, w.local_rank
    w.allreduce_(buf)            # in-place sum of a contiguous numpy array over all ranks
    w.allreduce_grouped(arrays)  # sums of many arrays, packed into flat size-capped buckets (one Allreduce each)
    w.check_same(obj, what)      # DistError naming the ranks unless every rank passed an equal JSON value
    w.broadcast_(buf, root=0)    # in place
    w.allgather(buf)             # the ranks' arrays concatenated along axis 0 (first dims may differ)
    w.allgather_json(obj)        # small metadata (shapes, names) from every rank, as JSON (never pickle)
    w.barrier()

Every collective starts non-blocking and is polled until it completes or MIXNET_DIST_TIMEOUT seconds (default 60,
read at each call) pass; then DistTimeoutError names this rank, the collective and the timeout. MPI cannot
cancel a collective, so the communicator is unusable after that: when the process then ends (the error was not
caught, or it exits anyway) it calls MPI_Abort after a short grace period, so mpiexec ends every rank of the job,
a hung one included, and no process is left behind. Under `mpiexec -disable-auto-cleanup` (what
`python -m mixnet.tools.launch` runs) a rank that exits (an uncaught error, os._exit) is reported this way by every
survivor; a rank killed by a signal makes MPICH's hydra proxy kill the whole job at once, usually before the
survivors' deadline (MPICH 5.0.2, measured: tests/distributed/test_dist_failures.py). Under plain `mpiexec`, MPICH
kills the job at once when any rank dies (the survivors print nothing of ours).

Buffers are numpy arrays in host memory: device (cupy) arrays are staged through the host by the callers.
"""
import atexit
import json
import os
import sys
import threading
import time
import zlib

import numpy as np

from .. import config
from ..base import MXNetError

__all__ = ["DistError", "DistTimeoutError", "available", "launched", "world"]

# Polling: a tight loop of Test() calls (MPICH makes progress inside them, as inside Wait()), then, once a
# collective has taken longer than BUSY_S, a short sleep between tests so a waiting rank stops burning the core a
# slow peer may need.
BUSY_S = 0.2
IDLE_SLEEP_S = 0.0005
# After a failed collective: how long the process waits at exit before MPI_Abort, so the peers that also wait on
# the dead rank reach their own deadline and report it before the abort ends them.
ABORT_GRACE_S = 3.0


class DistError(MXNetError):
    """An error of a multi-process job (a mismatch between ranks, MPI not available, ...)."""


class DistTimeoutError(DistError):
    """A collective did not complete within MIXNET_DIST_TIMEOUT seconds: a peer died, hangs, or never called it."""


def _timeout_s():
    raw = os.environ.get("MIXNET_DIST_TIMEOUT", "")
    if not raw:
        return 60.0
    try:
        value = float(raw)
    except ValueError:
        raise DistError(f"MIXNET_DIST_TIMEOUT={raw!r} is not a number of seconds") from None
    if not value > 0:
        raise DistError(f"MIXNET_DIST_TIMEOUT={raw!r} must be a positive number of seconds")
    return value


def _mpi():
    """mpi4py's MPI module (initializes MPI on first import), or a DistError saying how to install it."""
    try:
        from mpi4py import MPI      # lazy: MPI starts only for programs that ask for a distributed store
    except ImportError as err:
        raise DistError("distributed training needs mpi4py and an MPI library: pip install \"mixnet[dist]\" "
                        f"(installs mpi4py and the mpich wheel), then launch with mpiexec -n N ({err})") from None
    return MPI


def available():
    """Whether mpi4py can be imported (MPI is not initialized by this check)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


# What MPI launchers put in each rank's environment: MPICH's hydra and Intel MPI (PMI_*), Open MPI (OMPI_*),
# PMIx-based launchers and Slurm's srun (PMIX_*).
_LAUNCHER_VARS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_RANK")


def launched():
    """Whether this process was started by an MPI launcher (mpiexec, mpirun, srun); MPI is not initialized by this
    check. A process started otherwise is a job of one, and MPI_Init in it may spawn a helper process."""
    return any(name in os.environ for name in _LAUNCHER_VARS)


class Comm:
    """COMM_WORLD with deadlines. One per process (world()); safe to call from one thread at a time (the lock
    serializes collectives, which MPI requires to be called in the same order on every rank)."""

    def __init__(self):
        MPI = _mpi()
        self._MPI = MPI
        self._comm = MPI.COMM_WORLD
        self.rank = self._comm.Get_rank()
        self.size = self._comm.Get_size()
        node = self._comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = node.Get_rank()
        self.local_size = node.Get_size()
        node.Free()
        self._lock = threading.Lock()
        self._failed = None
        self._buckets = {}        # (dtype, elements, ordinal in the call) -> reused flat buffer (allreduce_grouped)

    def __repr__(self):
        return f"<mixnet.distributed.Comm rank {self.rank} of {self.size} (local {self.local_rank} of " \
               f"{self.local_size})>"

    # ------------------------------------------------------------------ waiting with a deadline
    def _wait(self, request, what):
        if request.Test():
            return
        timeout = _timeout_s()
        start = time.monotonic()
        while not request.Test():
            waited = time.monotonic() - start
            if waited > timeout:
                self._fail(f"rank {self.rank} of {self.size}: {what} did not complete within {timeout:g} s "
                           "(MIXNET_DIST_TIMEOUT): another rank died, hangs, or did not make the same call")
            if waited > BUSY_S:
                time.sleep(IDLE_SLEEP_S)

    def _fail(self, message):
        self._failed = message
        print(f"mixnet.distributed: {message}", file=sys.stderr, flush=True)
        _abort_at_exit(self)
        raise DistTimeoutError(message)

    def _check_usable(self, what):
        if self._failed is not None:
            raise DistError(f"rank {self.rank}: cannot run {what}: an earlier collective failed ({self._failed})")

    # ------------------------------------------------------------------ collectives
    def allreduce_(self, buf, what="allreduce"):
        """Sums buf over all ranks, in place (buf: a C-contiguous numpy array, the same shape and dtype on every
        rank). Returns buf."""
        buf = _contiguous(buf, what)
        with self._lock:
            self._check_usable(what)
            if self.size > 1:
                self._wait(self._comm.Iallreduce(self._MPI.IN_PLACE, buf, op=self._MPI.SUM), what)
        return buf

    def broadcast_(self, buf, root=0, what="broadcast"):
        """Copies root's buf into every rank's buf (same shape and dtype everywhere). Returns buf."""
        buf = _contiguous(buf, what)
        with self._lock:
            self._check_usable(what)
            if self.size > 1:
                self._wait(self._comm.Ibcast(buf, root=root), what)
        return buf

    def allgather(self, buf, what="allgather"):
        """Every rank's array concatenated along axis 0 in rank order; the first dimension may differ between
        ranks, the others and the dtype may not (checked)."""
        buf = np.ascontiguousarray(buf)
        if buf.ndim == 0:
            buf = buf.reshape(1)
        meta = self.allgather_json({"shape": list(buf.shape), "dtype": buf.dtype.str}, what)
        for rank, m in enumerate(meta):
            if m["shape"][1:] != list(buf.shape[1:]) or m["dtype"] != buf.dtype.str:
                raise DistError(f"{what}: rank {rank} holds shape {tuple(m['shape'])} {np.dtype(m['dtype'])}, "
                                f"rank {self.rank} holds {buf.shape} {buf.dtype}: only the first dimension may "
                                "differ")
        rows = [m["shape"][0] for m in meta]
        out = np.empty((sum(rows),) + buf.shape[1:], dtype=buf.dtype)
        per_row = int(np.prod(buf.shape[1:], dtype=np.int64))
        counts = [r * per_row for r in rows]
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
        with self._lock:
            self._check_usable(what)
            if self.size > 1:
                self._wait(self._comm.Iallgatherv(buf, [out, counts, displs, _mpi_type(self._MPI, buf.dtype)]),
                           what)
            else:
                out[...] = buf
        return out

    def allgather_json(self, obj, what="allgather"):
        """[obj of rank 0, obj of rank 1, ...] for small JSON-serializable metadata."""
        data = np.frombuffer(json.dumps(obj, sort_keys=True).encode("utf-8"), dtype=np.uint8)
        lengths = np.zeros(self.size, dtype=np.int64)
        lengths[self.rank] = data.size
        self.allreduce_(lengths, what + " (sizes)")
        out = np.empty(int(lengths.sum()), dtype=np.uint8)
        displs = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int).tolist()
        with self._lock:
            self._check_usable(what)
            if self.size > 1:
                self._wait(self._comm.Iallgatherv(data, [out, lengths.tolist(), displs, self._MPI.BYTE]), what)
            else:
                out[...] = data
        return [json.loads(out[d:d + n].tobytes().decode("utf-8")) for d, n in zip(displs, lengths.tolist())]

    def allreduce_grouped(self, arrays, bucket_bytes=None, what="allreduce", check_finite=False):
        """Sums every array of the list over all ranks: arrays of one dtype are copied into flat buckets of at most
        bucket_bytes (default MIXNET_DIST_BUCKET_MB; an array larger than that is a bucket of its own), one in-place
        Allreduce per bucket. The inputs are not changed; returns the sums as views of the buckets, valid until the
        next allreduce_grouped call (the buckets are kept per dtype, size and position and reused, so a training
        loop allocates them once). Every rank must pass the same shapes and dtypes in the same order.

        check_finite: also returns the indices of the arrays whose sum holds a NaN or inf, found with one sum per
        bucket (and an elementwise look only into a bucket whose sum is not finite): a NaN or inf of any rank
        shows in the sum every rank receives, so every rank finds the same indices."""
        if bucket_bytes is None:
            bucket_bytes = int(config.DIST_BUCKET_MB * 2 ** 20)
        arrays = [np.asarray(a) for a in arrays]
        out = [None] * len(arrays)
        nonfinite = []
        for ordinal, (dtype, members) in enumerate(_plan_buckets(arrays, bucket_bytes)):
            total = sum(arrays[i].size for i in members)
            key = (dtype.str, total, ordinal)
            flat = self._buckets.get(key)
            if flat is None:
                flat = self._buckets[key] = np.empty(total, dtype=dtype)
            offset = 0
            for i in members:
                n = arrays[i].size
                view = flat[offset:offset + n].reshape(arrays[i].shape)
                np.copyto(view, arrays[i])
                out[i] = view
                offset += n
            self.allreduce_(flat, f"{what} (bucket {ordinal}: {len(members)} arrays, {flat.nbytes} bytes)")
            if check_finite and dtype.kind in "fc" and not np.isfinite(flat.sum()):
                # the sum of finite values can overflow too: look at each array before blaming one
                nonfinite.extend(i for i in members if not np.isfinite(out[i]).all())
        for i, a in enumerate(arrays):
            if out[i] is None:          # an empty array: nothing to sum
                out[i] = a.copy()
        return (out, sorted(nonfinite)) if check_finite else out

    def allreduce_inplace_(self, arrays, bucket_bytes=None, what="allreduce", check_finite=False):
        """Sums every numpy array of the list over all ranks, in place (same shapes, dtypes and order on every
        rank). Arrays that lie back to back in one buffer (a model's gradients once an optimizer has packed them
        into its flat buffer, optimizer/_multi_tensor.py) are reduced where they lie, in slices of at most
        bucket_bytes: no copy at all. Others go through allreduce_grouped's buckets and are copied back.
        check_finite: returns the indices of the arrays whose sum holds a NaN or inf (as allreduce_grouped)."""
        if bucket_bytes is None:
            bucket_bytes = int(config.DIST_BUCKET_MB * 2 ** 20)
        span = _adjacent_span(arrays)
        if span is None:
            result = self.allreduce_grouped(arrays, bucket_bytes, what, check_finite)
            sums = result[0] if check_finite else result
            for a, total in zip(arrays, sums):
                np.copyto(a, total)
            return result[1] if check_finite else None
        step = max(1, bucket_bytes // span.itemsize)
        for ordinal, start in enumerate(range(0, span.size, step)):
            self.allreduce_(span[start:start + step], f"{what} (slice {ordinal}: {min(step, span.size - start)} "
                                                      f"values of {len(arrays)} arrays)")
        if not check_finite or span.dtype.kind not in "fc" or np.isfinite(span.sum()):
            return [] if check_finite else None
        return [i for i, a in enumerate(arrays) if not np.isfinite(a).all()]

    def check_same(self, obj, what):
        """Raises DistError on every rank unless every rank passed an equal JSON value: one small allreduce of a
        hash h and h*h (equal sums of h and h*h over n ranks mean every h is equal), then, only on a mismatch, an
        allgather of the values to name the ranks that differ from rank 0."""
        text = json.dumps(obj, sort_keys=True)
        h = zlib.crc32(text.encode("utf-8")) & 0xFFFFFFF       # 28 bits: n * h*h stays within int64
        sums = self.allreduce_(np.array([h, h * h], dtype=np.int64), what + " (consistency check)")
        if sums[0] == self.size * h and sums[1] == self.size * h * h:
            return
        values = self.allgather_json(obj, what + " (mismatch report)")
        differ = [r for r, v in enumerate(values) if v != values[0]]
        shown = "; ".join(f"rank {r}: {_short(values[r])}" for r in [0] + differ[:3])
        raise DistError(f"{what}: the ranks disagree (ranks {differ} differ from rank 0): {shown}")

    def barrier(self, what="barrier"):
        with self._lock:
            self._check_usable(what)
            if self.size > 1:
                self._wait(self._comm.Ibarrier(), what)

    def abort(self, code=1):
        """Ends every process of the job (MPI_Abort)."""
        self._comm.Abort(code)

    def reduce_(self, buf, op, what="allreduce"):
        """Like allreduce_ with another elementwise reduction: op is "sum", "min", "max" or "prod". Returns buf."""
        mpi_op = {"sum": self._MPI.SUM, "min": self._MPI.MIN, "max": self._MPI.MAX, "prod": self._MPI.PROD}.get(op)
        if mpi_op is None:
            raise DistError(f"{what}: unknown reduction {op!r} (sum, min, max or prod)")
        buf = _contiguous(buf, what)
        with self._lock:
            self._check_usable(what)
            if self.size > 1:
                self._wait(self._comm.Iallreduce(self._MPI.IN_PLACE, buf, op=mpi_op), what)
        return buf

    def thread_multiple(self):
        """Whether MPI was initialized with MPI_THREAD_MULTIPLE (any thread may call it at any time)."""
        return self._MPI.Query_thread() == self._MPI.THREAD_MULTIPLE


def _contiguous(buf, what):
    if not isinstance(buf, np.ndarray) or not buf.flags.c_contiguous or not buf.flags.writeable:
        raise DistError(f"{what}: expected a writeable C-contiguous numpy array, got {type(buf).__name__}")
    return buf


def _plan_buckets(arrays, bucket_bytes):
    """[(dtype, [indices])]: per dtype in order of first appearance, consecutive arrays packed up to
    bucket_bytes; empty arrays are left out (their sum is themselves)."""
    by_dtype = {}
    for i, a in enumerate(arrays):
        if a.size:
            by_dtype.setdefault(a.dtype, []).append(i)
    plan = []
    for dtype, indices in by_dtype.items():
        current, size = [], 0
        for i in indices:
            nbytes = arrays[i].nbytes
            if current and size + nbytes > bucket_bytes:
                plan.append((dtype, current))
                current, size = [], 0
            current.append(i)
            size += nbytes
        plan.append((dtype, current))
    return plan


def _adjacent_span(arrays):
    """The 1-d array covering `arrays` when they are C-contiguous numpy arrays of one dtype lying back to back, in
    order, in one buffer (with nothing between them), else None."""
    if not arrays or not all(isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable
                             for a in arrays):
        return None
    first, dtype = arrays[0], arrays[0].dtype
    base = first.base if first.base is not None else first
    if not isinstance(base, np.ndarray) or base.ndim != 1 or not base.flags.c_contiguous or base.dtype != dtype:
        return None
    address = first.__array_interface__["data"][0]
    for a in arrays:
        if a.dtype != dtype or (a.base if a.base is not None else a) is not base \
                or a.__array_interface__["data"][0] != address:
            return None
        address += a.nbytes
    start = (first.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // dtype.itemsize
    return base[start:start + sum(a.size for a in arrays)]


def _short(value, limit=300):
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


def _mpi_type(MPI, dtype):
    return MPI._typedict[np.dtype(dtype).char]


_WORLD = None
_WORLD_LOCK = threading.Lock()


def world():
    """This process's Comm (MPI initialized on the first call)."""
    global _WORLD
    with _WORLD_LOCK:
        if _WORLD is None:
            _WORLD = Comm()
        return _WORLD


_ABORT_REGISTERED = False


def _abort_at_exit(comm):
    """After a failed collective MPI cannot finish normally (MPI_Finalize would wait on the dead or hung peer):
    end the job with MPI_Abort when this process exits, after ABORT_GRACE_S for the peers to report."""
    global _ABORT_REGISTERED
    if _ABORT_REGISTERED:
        return
    _ABORT_REGISTERED = True

    def abort():
        sys.stderr.flush()
        time.sleep(ABORT_GRACE_S)
        comm.abort(1)
    atexit.register(abort)
