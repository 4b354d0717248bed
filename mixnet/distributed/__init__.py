"""Data-parallel training across processes over MPI (mpi4py): the communicator every distributed part of mixnet
uses (`comm.py`). Install with `pip install "mixnet[dist]"` and launch with `mpiexec -n N python train.py`."""
from .comm import DistError, DistTimeoutError, available, launched, world

__all__ = ["DistError", "DistTimeoutError", "available", "launched", "world"]
