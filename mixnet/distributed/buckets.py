"""In-place allreduce of many numpy arrays or NDArrays, over Comm.allreduce_inplace_ (the one bucketing: flat,
size-capped buckets, one in-place Allreduce each). Used by the Horovod API (mixnet.horovod); the dist KVStore calls
allreduce_grouped itself (it keeps the pushed arrays unchanged).

    from mixnet.distributed.buckets import allreduce_many_, allreduce_ndarrays_
    allreduce_many_([np_a, np_b, ...])                   # numpy arrays, summed over ranks in place
    allreduce_ndarrays_([g1, g2, ...], scale=1 / size)   # NDArrays (cpu or gpu), summed then scaled, in place

Every rank must pass arrays of the same shapes and dtypes in the same order (the buckets are then the same on
every rank). NDArrays on a GPU are staged through host memory; cpu NDArrays whose buffer is a contiguous numpy array
are reduced in that buffer, without a copy.
"""
import numpy as np

from .comm import DistError, world

__all__ = ["allreduce_many_", "allreduce_ndarrays_", "host_buffer", "write_back"]


def allreduce_many_(bufs, comm=None, bucket_bytes=None, what="allreduce"):
    """Sums each numpy array of `bufs` over all ranks, in place (Comm.allreduce_inplace_: where they lie when they
    are back to back in one buffer, else through flat buckets of at most `bucket_bytes`, default
    MIXNET_DIST_BUCKET_MB). Returns bufs."""
    comm = comm if comm is not None else world()
    for buf in bufs:
        if not isinstance(buf, np.ndarray) or not buf.flags.c_contiguous or not buf.flags.writeable:
            raise DistError(f"{what}: expected writeable C-contiguous numpy arrays, got {type(buf).__name__}")
    if comm.size == 1:
        return bufs
    if len(bufs) == 1:                   # the common single-tensor call: reduced where it lies, no packing
        comm.allreduce_(bufs[0], what)
        return bufs
    comm.allreduce_inplace_(bufs, bucket_bytes, what)
    return bufs


def allreduce_ndarrays_(arrays, comm=None, scale=1.0, prescale=1.0, bucket_bytes=None,
                        what="allreduce"):
    """Sums NDArrays over all ranks in place: each becomes `scale * sum over ranks(prescale * array)`. Dense
    arrays only (a row_sparse or csr array raises DistError). Returns arrays."""
    comm = comm if comm is not None else world()
    hosts = []
    for arr in arrays:
        if getattr(arr, "stype", "default") != "default":
            raise DistError(f"{what}: rank {comm.rank}: {arr.stype} arrays cannot be allreduced; convert with "
                            "tostype('default')")
        hosts.append(host_buffer(arr))
    if prescale != 1.0:
        for h in hosts:
            h *= prescale
    allreduce_many_(hosts, comm, bucket_bytes, what)
    for arr, h in zip(arrays, hosts):
        if scale != 1.0:
            h *= scale
        write_back(arr, h)
    return arrays


def host_buffer(arr):
    """The numpy buffer an MPI collective works on for an NDArray: the array's own buffer when it is a contiguous
    host array (no copy), else a contiguous host copy (GPU arrays). Hand it to write_back afterwards."""
    data = arr._data
    if isinstance(data, np.ndarray) and data.flags.c_contiguous and data.flags.writeable:
        return data
    return np.ascontiguousarray(arr.asnumpy())


def write_back(arr, host):
    """Puts the result of a collective on host_buffer(arr) into arr (a copy only where host_buffer made one)."""
    if host is not arr._data:
        arr._data[...] = arr._ctx.xp.asarray(host) if arr._ctx.device_type == "gpu" else host
    arr._bump_version()
