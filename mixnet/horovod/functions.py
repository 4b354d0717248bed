"""Horovod's object collectives. Objects travel as JSON, never as a pickle (unpickling what another process sent
can run arbitrary code), so they must be JSON-serializable: numbers, strings, lists, dicts with string keys."""
import json

from ..distributed.comm import DistError
from .mpi_ops import _comm

__all__ = ["broadcast_object", "allgather_object"]


def _check_json(obj, what):
    try:
        json.dumps(obj)
    except (TypeError, ValueError) as err:
        raise DistError(f"{what}: mixnet.horovod sends objects as JSON, not pickles; {err}") from None


def broadcast_object(obj, root_rank=0, name=None):
    """root_rank's obj on every rank (a JSON round trip: tuples come back as lists)."""
    c = _comm()
    if not 0 <= root_rank < c.size:
        raise DistError(f"broadcast_object: root_rank {root_rank} is not a rank of this job (size {c.size})")
    mine = obj if c.rank == root_rank else None
    _check_json(mine, "broadcast_object")
    return c.allgather_json(mine, "broadcast_object")[root_rank]


def allgather_object(obj, name=None):
    """[obj of rank 0, obj of rank 1, ...] on every rank (JSON round trip)."""
    _check_json(obj, "allgather_object")
    return _comm().allgather_json(obj, "allgather_object")
