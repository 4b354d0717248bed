"""Allreduce of many arrays in few collectives: small arrays are packed into flat, size-capped buckets (one
in-place Allreduce per bucket), large ones are reduced where they lie. Used by the Horovod API (mixnet.horovod) and
meant for every other caller that reduces a model's gradients (the dist KVStore).

    from mixnet.distributed.buckets import allreduce_many_, allreduce_ndarrays_
    allreduce_many_([np_a, np_b, ...])                   # numpy arrays, summed over ranks in place
    allreduce_ndarrays_([g1, g2, ...], scale=1 / size)   # NDArrays (cpu or gpu), summed then scaled, in place

Every rank must pass arrays of the same shapes and dtypes in the same order (the buckets are then the same on
every rank). NDArrays on a GPU are staged through host memory; cpu NDArrays whose buffer is a contiguous numpy array
are reduced in that buffer, without a copy.
"""
import numpy as np

from .comm import DistError, world

__all__ = ["BUCKET_BYTES", "allreduce_many_", "allreduce_ndarrays_", "host_buffer", "write_back"]

# One collective per ~4 MB: large enough that MPI's per-call latency (tens of microseconds) is amortized, small
# enough that the packing copies stay in cache-sized pieces and the buckets need little extra memory.
BUCKET_BYTES = 4 << 20


def allreduce_many_(bufs, comm=None, bucket_bytes=BUCKET_BYTES, what="allreduce"):
    """Sums each numpy array of `bufs` over all ranks, in place. Arrays of at least `bucket_bytes` go to MPI
    directly; the others are packed by dtype into flat buckets of at most `bucket_bytes`. Returns bufs."""
    comm = comm if comm is not None else world()
    for buf in bufs:
        if not isinstance(buf, np.ndarray) or not buf.flags.c_contiguous or not buf.flags.writeable:
            raise DistError(f"{what}: expected writeable C-contiguous numpy arrays, got {type(buf).__name__}")
    if comm.size == 1:
        return bufs
    if len(bufs) == 1:                   # the common single-tensor call: no grouping to do
        comm.allreduce_(bufs[0], what)
        return bufs
    for group in _buckets(bufs, bucket_bytes):
        if len(group) == 1:
            comm.allreduce_(group[0], what)
            continue
        flat = np.concatenate([b.reshape(-1) for b in group])
        comm.allreduce_(flat, what)
        offset = 0
        for b in group:
            b.reshape(-1)[...] = flat[offset:offset + b.size]
            offset += b.size
    return bufs


def _buckets(bufs, bucket_bytes):
    """Groups of arrays, in order within each dtype: a large array alone, small ones up to bucket_bytes."""
    open_bucket = {}           # dtype -> [arrays, bytes]
    groups = []
    for buf in bufs:
        if buf.nbytes >= bucket_bytes:
            groups.append([buf])
            continue
        bucket = open_bucket.get(buf.dtype)
        if bucket is not None and bucket[1] + buf.nbytes > bucket_bytes:
            groups.append(bucket[0])
            bucket = None
        if bucket is None:
            bucket = open_bucket[buf.dtype] = [[], 0]
        bucket[0].append(buf)
        bucket[1] += buf.nbytes
    groups.extend(bucket[0] for bucket in open_bucket.values() if bucket[0])
    return groups


def allreduce_ndarrays_(arrays, comm=None, scale=1.0, prescale=1.0, bucket_bytes=BUCKET_BYTES,
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
