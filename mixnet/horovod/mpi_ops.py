"""Horovod's basics and collectives on NDArrays, over mixnet's communicator (mixnet.distributed.comm).

Collectives run synchronously, in the order the program calls them, which must be the same on every rank (Horovod
matches tensors by name in a background thread; here `name` and `priority` are accepted and only name errors).
Every one has the deadline of mixnet.distributed (MIXNET_DIST_TIMEOUT): a peer that died or hangs raises
DistTimeoutError instead of hanging. GPU arrays are staged through host memory.
"""
import numpy as np

from ..distributed import buckets
from ..distributed.comm import DistError, world
from ..ndarray.ndarray import NDArray, _wrap

__all__ = ["init", "shutdown", "is_initialized", "size", "local_size", "cross_size", "rank", "local_rank",
           "cross_rank", "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
           "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built", "start_timeline", "stop_timeline",
           "Average", "Sum", "Adasum", "Min", "Max", "Product", "ProcessSet", "global_process_set",
           "add_process_set", "remove_process_set", "allreduce", "allreduce_", "grouped_allreduce",
           "grouped_allreduce_", "allgather", "grouped_allgather", "broadcast", "broadcast_",
           "NotInitializedError"]

# Reduction ops (Horovod's names; the values only identify them).
Average, Sum, Adasum, Min, Max, Product = range(6)
_OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max", Product: "Product"}
_MPI_OPS = {Min: "min", Max: "max", Product: "prod"}


class NotInitializedError(DistError, ValueError):
    """A Horovod call before hvd.init() (Horovod raises ValueError)."""


_STATE = {"comm": None, "cross": None}


def init(comm=None, process_sets=None):
    """Initializes MPI (once per process) and Horovod's state. Only the whole job is supported as communicator:
    comm must be None or the list of all ranks; process_sets must be None or empty."""
    c = world()
    if comm is not None and list(comm) != list(range(c.size)):
        raise DistError(f"hvd.init(comm={comm!r:.80}): mixnet.horovod runs on all {c.size} ranks of the job "
                        "(MPI's COMM_WORLD); sub-communicators are not supported")
    if process_sets:
        raise DistError("hvd.init(process_sets=...): only the global process set is supported")
    _STATE["comm"] = c


def shutdown():
    """Ends Horovod's state (MPI itself is finalized when the process exits)."""
    _STATE["comm"] = None
    _STATE["cross"] = None


def is_initialized():
    return _STATE["comm"] is not None


def _comm():
    c = _STATE["comm"]
    if c is None:
        raise NotInitializedError("Horovod has not been initialized; use hvd.init().")
    return c


def size():
    """Number of processes in the job."""
    return _comm().size


def rank():
    """This process's rank, 0 .. size()-1."""
    return _comm().rank


def local_size():
    """Number of processes on this host."""
    return _comm().local_size


def local_rank():
    """This process's rank among the processes on its host (pick the GPU with it: mx.gpu(hvd.local_rank()))."""
    return _comm().local_rank


def _cross():
    """(cross_rank, cross_size): this process's index among, and the number of, the processes that have its
    local_rank (one per host on a regular layout). Computed once with a collective, so every rank must call
    cross_rank/cross_size the first time together."""
    if _STATE["cross"] is None:
        c = _comm()
        local_ranks = c.allgather_json(c.local_rank, "cross_rank")
        peers = [r for r, lr in enumerate(local_ranks) if lr == c.local_rank]
        _STATE["cross"] = (peers.index(c.rank), len(peers))
    return _STATE["cross"]


def cross_rank():
    return _cross()[0]


def cross_size():
    return _cross()[1]


def mpi_threads_supported():
    """Whether MPI allows calls from several threads at once (mixnet serializes its own collectives anyway)."""
    return _comm().thread_multiple()


def mpi_enabled():
    return True


def mpi_built():
    return True


def gloo_enabled():
    return False


def gloo_built():
    return False


def nccl_built():
    """0: no NCCL; GPU arrays are staged through host memory and reduced by MPI."""
    return 0


def ddl_built():
    return False


def ccl_built():
    return False


def cuda_built():
    """False: mixnet's MPI collectives work on host memory (GPU arrays are copied through it)."""
    return False


def rocm_built():
    return False


def start_timeline(file_path, mark_cycles=False):
    raise DistError("hvd.start_timeline: mixnet.horovod records no timeline; use mx.profiler")


def stop_timeline():
    raise DistError("hvd.stop_timeline: mixnet.horovod records no timeline; use mx.profiler")


class ProcessSet:
    """Horovod's process set; mixnet.horovod has only the global one (every rank of the job)."""

    def __init__(self, ranks=None):
        self.ranks = ranks

    def size(self):
        return size()

    def rank(self):
        return rank()

    def included(self):
        return True

    def __repr__(self):
        return "ProcessSet(global)"


global_process_set = ProcessSet()


def add_process_set(process_set):
    raise DistError("hvd.add_process_set: mixnet.horovod supports only the global process set")


def remove_process_set(process_set):
    raise DistError("hvd.remove_process_set: mixnet.horovod supports only the global process set")


def _check_process_set(process_set, what):
    if process_set is not global_process_set:
        raise DistError(f"{what}: mixnet.horovod supports only hvd.global_process_set")


def _resolve_op(op, average, what):
    """Horovod's rule: `op` supersedes the deprecated `average`; neither means Average."""
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of them.")
        return op
    if average is not None:
        return Average if average else Sum
    return Average


def _label(what, name):
    return what if name is None else f"{what} {name!r:.80}"


def _check_ndarrays(tensors, what):
    for t in tensors:
        if not isinstance(t, NDArray):
            raise DistError(f"{what}: expected mx.nd.NDArray, got {type(t).__name__}")


def _allreduce_many_(tensors, op, prescale_factor, postscale_factor, what):
    """The in-place reduction of every allreduce flavour."""
    _check_ndarrays(tensors, what)
    c = _comm()
    if op in (Sum, Average):
        if op == Average:
            ints = [t for t in tensors if t._data.dtype.kind not in "fc"]
            if ints:
                raise DistError(f"{what}: op=Average on an integer array ({np.dtype(ints[0].dtype)}): the mean "
                                "would be truncated; use op=hvd.Sum and divide")
        post = postscale_factor / c.size if op == Average else postscale_factor
        return buckets.allreduce_ndarrays_(tensors, c, scale=post, prescale=prescale_factor, what=what)
    if op in _MPI_OPS:
        if prescale_factor != 1.0 or postscale_factor != 1.0:
            raise DistError(f"{what}: prescale_factor/postscale_factor apply to Sum and Average only")
        for t in tensors:
            host = buckets.host_buffer(t)
            c.reduce_(host, _MPI_OPS[op], what)
            buckets.write_back(t, host)
        return tensors
    raise DistError(f"{what}: op={_OP_NAMES.get(op, op)!r} is not supported by mixnet.horovod (Average, Sum, "
                    "Min, Max, Product)")


def allreduce_(tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set, op=None):
    """Reduces `tensor` over all ranks in place (default: the average) and returns it. The result is
    postscale_factor * reduce(prescale_factor * tensor)."""
    what = _label("allreduce", name)
    _check_process_set(process_set, what)
    _allreduce_many_([tensor], _resolve_op(op, average, what), prescale_factor, postscale_factor, what)
    return tensor


def allreduce(tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set, op=None):
    """As allreduce_, into a new array (`tensor` is unchanged)."""
    _check_ndarrays([tensor], _label("allreduce", name))
    return allreduce_(tensor.copy(), average, name, priority, prescale_factor, postscale_factor, process_set, op)


def grouped_allreduce_(tensors, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set, op=None):
    """allreduce_ of several tensors in few collectives (flat buckets); returns the list."""
    what = _label("grouped_allreduce", name)
    _check_process_set(process_set, what)
    tensors = list(tensors)
    _allreduce_many_(tensors, _resolve_op(op, average, what), prescale_factor, postscale_factor, what)
    return tensors


def grouped_allreduce(tensors, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set, op=None):
    """As grouped_allreduce_, into new arrays."""
    tensors = list(tensors)
    _check_ndarrays(tensors, _label("grouped_allreduce", name))
    return grouped_allreduce_([t.copy() for t in tensors], average, name, priority, prescale_factor,
                              postscale_factor, process_set, op)


def allgather(tensor, name=None, priority=0, process_set=global_process_set):
    """Every rank's tensor concatenated along the first dimension, in rank order (first dimensions may differ;
    the other dimensions and the dtype may not). A new array on tensor's context."""
    what = _label("allgather", name)
    _check_process_set(process_set, what)
    _check_ndarrays([tensor], what)
    out = _comm().allgather(tensor.asnumpy(), what)
    return _wrap(tensor._ctx.xp.asarray(out) if tensor._ctx.device_type == "gpu" else out, tensor._ctx)


def grouped_allgather(tensors, name=None, priority=0, process_set=global_process_set):
    return [allgather(t, name, priority, process_set) for t in tensors]


def broadcast_(tensor, root_rank, name=None, priority=0, process_set=global_process_set):
    """Copies root_rank's tensor into every rank's tensor (same shape and dtype everywhere), in place."""
    what = _label("broadcast", name)
    _check_process_set(process_set, what)
    _check_ndarrays([tensor], what)
    c = _comm()
    if not 0 <= root_rank < c.size:
        raise DistError(f"{what}: root_rank {root_rank} is not a rank of this job (size {c.size})")
    host = buckets.host_buffer(tensor)
    c.broadcast_(host, root_rank, what)
    buckets.write_back(tensor, host)
    return tensor


def broadcast(tensor, root_rank, name=None, priority=0, process_set=global_process_set):
    """As broadcast_, into a new array (`tensor` is unchanged)."""
    _check_ndarrays([tensor], _label("broadcast", name))
    return broadcast_(tensor.copy(), root_rank, name, priority, process_set)
