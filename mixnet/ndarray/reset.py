"""`mx.nd.reset_arrays(*arrays, num_arrays)`: zeroes arrays in place (what MXNet's Gluon uses to clear many
gradient buffers in one call). It has no outputs and is not recorded by autograd."""
from ..base import MXNetError
from .ndarray import NDArray


def reset_arrays(*arrays, num_arrays=None):
    """Sets every element of each array to 0, in place. num_arrays, when given, must equal the number of arrays."""
    if num_arrays is not None and int(num_arrays) != len(arrays):
        raise MXNetError(f"reset_arrays: num_arrays is {num_arrays} but {len(arrays)} arrays were given")
    for i, arr in enumerate(arrays):
        if not isinstance(arr, NDArray):
            raise MXNetError(f"reset_arrays: argument {i} is {type(arr).__name__}, expected an NDArray")
        arr._assign(0)
