"""Horovod's MXNet API on mixnet: `import mixnet.horovod as hvd` replaces `import horovod.mxnet as hvd`.

    hvd.init()
    ctx = mx.cpu(hvd.local_rank())
    net.initialize(ctx=ctx)
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)
    trainer = hvd.DistributedTrainer(net.collect_params(), 'sgd', {'learning_rate': 0.01 * hvd.size()})
    ...  trainer.step(local_batch_size)   # gradients averaged over the ranks

Launch with `mpiexec -n N python train.py` or `python -m mixnet.tools.launch -n N -- python train.py`. Built on
mixnet.distributed (MPI through mpi4py): every collective has the MIXNET_DIST_TIMEOUT deadline, GPU arrays are
staged through host memory, many gradients are reduced in few flat buckets. Not provided: alltoall,
reducescatter, process sets other than the global one, Adasum, timelines. See docs/distributed.md.
"""
from .compression import Compression
from .functions import allgather_object, broadcast_object
from .mpi_ops import (Adasum, Average, Max, Min, NotInitializedError, ProcessSet, Product, Sum, add_process_set,
                      allgather, allreduce, allreduce_, broadcast, broadcast_, ccl_built, cross_rank, cross_size,
                      cuda_built, ddl_built, gloo_built, gloo_enabled, global_process_set, grouped_allgather,
                      grouped_allreduce, grouped_allreduce_, init, is_initialized, local_rank, local_size,
                      mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank, remove_process_set,
                      rocm_built, shutdown, size, start_timeline, stop_timeline)
from .training import DistributedOptimizer, DistributedTrainer, broadcast_parameters

__all__ = ["Compression", "allgather_object", "broadcast_object", "Adasum", "Average", "Max", "Min",
           "NotInitializedError", "ProcessSet", "Product", "Sum", "add_process_set", "allgather", "allreduce",
           "allreduce_", "broadcast", "broadcast_", "ccl_built", "cross_rank", "cross_size", "cuda_built",
           "ddl_built", "gloo_built", "gloo_enabled", "global_process_set", "grouped_allgather",
           "grouped_allreduce", "grouped_allreduce_", "init", "is_initialized", "local_rank", "local_size",
           "mpi_built", "mpi_enabled", "mpi_threads_supported", "nccl_built", "rank", "remove_process_set",
           "rocm_built", "shutdown", "size", "start_timeline", "stop_timeline", "DistributedOptimizer",
           "DistributedTrainer", "broadcast_parameters"]
