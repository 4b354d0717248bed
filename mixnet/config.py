"""Environment flags, read once at import. Each flag is documented here and nowhere else.

MIXNET_DEBUG_ERRORS=1   keep the underlying numpy/cupy exception chained under mixnet's operator errors
                        (by default the OpError alone is shown: it names the op, shapes, dtypes and your line).
MIXNET_FUSE=0           hybridized graphs run without elementwise fusion (the debug switch; results are within the
                        fused kernels' stated ulp bounds of each other).
MIXNET_FUSE_REDUCE=0    an elementwise group read only by a sum, mean or _sum_to over all, leading or trailing axes
                        is not fused with it (by default the kernel adds its values into the reduced result
                        instead of writing them; symbol/fuse.py). Results agree within float rounding.
MIXNET_INPLACE=0        compiled graphs never write an elementwise result over an input that dies with it (the
                        debug switch for in-place reuse; results are identical either way).
MIXNET_LOG_COMPILES=1   print every hybridize trace: the block, how many graphs it has, and why it traced again
                        (first call, new shapes, dtypes, argument structure, device or training mode).
MIXNET_EPILOGUE=0       hybridized graphs run without the GEMM epilogue pass (symbol/epilogue.py: a Dense layer's bias
                        and activation fused into its GEMM's node, an activation's backward and the bias gradient
                        into one pass); results are the same within float rounding either way.
MIXNET_HYBRIDIZE_CHECK=1
                        every hybridize() checks its first calls as hybridize(check=True) does.
MIXNET_SHOW_CODE=1      print the straight-line Python of every compiled graph (and every fused kernel's source).
MIXNET_VERIFY=1         verify graphs structurally after every graph pass.
MIXNET_FUSE_MIN_SIZE=N  elementwise groups whose result has fewer than N elements are not fused (default 16384:
                        below that a fused kernel's call overhead costs more than the memory passes it saves).
MIXNET_COMPILE_BACKGROUND=0
                        compile fused kernels before a hybridized block's first call returns. By default (1) the
                        first calls run the unfused compiled graph while the kernels compile in a background
                        thread, and later calls switch to the fused graph once it is ready.
MIXNET_CACHE_DIR=path   where generated kernels and their Numba cache live (default ~/.cache/mixnet/kernels). It
                        must be your own and writable by you only (or sticky): otherwise one warning, and kernels
                        compile in memory without a disk cache (codegen/cache.py).
MIXNET_CACHE_MAX_MB=N   size cap of that directory in MiB (default 512): the least recently used kernels are
                        deleted when a new one would pass it.
MIXNET_MAX_ELEMENTS=N   the most elements one array may have (default 2**40, about 10**12). Shape inference refuses a
                        larger (or negative) shape with an MXNetError naming the op and the shape, and so do the ops
                        that allocate an array of a shape taken from attributes (zeros, ones, full, arange, tile,
                        repeat, broadcast_to, one_hot, ...), before allocating anything.
MXNET_BACKWARD_DO_MIRROR=1
                        MXNet's mirror option, for every hybridized block (per block: hybridize(mirror=True)):
                        elementwise results are recomputed in the backward pass instead of kept from the
                        forward, trading one more pass over memory for less training memory.
"""
import os


def _flag(name, default=False):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("", "0", "false", "no", "off")


DEBUG_ERRORS = _flag("MIXNET_DEBUG_ERRORS")
FUSE = _flag("MIXNET_FUSE", True)
FUSE_REDUCE = _flag("MIXNET_FUSE_REDUCE", True)
INPLACE = _flag("MIXNET_INPLACE", True)
EPILOGUE = _flag("MIXNET_EPILOGUE", True)
LOG_COMPILES = _flag("MIXNET_LOG_COMPILES")
HYBRIDIZE_CHECK = _flag("MIXNET_HYBRIDIZE_CHECK")
SHOW_CODE = _flag("MIXNET_SHOW_CODE")
VERIFY = _flag("MIXNET_VERIFY")
FUSE_MIN_SIZE = int(float(os.environ.get("MIXNET_FUSE_MIN_SIZE", 16384)))
COMPILE_BACKGROUND = _flag("MIXNET_COMPILE_BACKGROUND", True)
CACHE_MAX_MB = float(os.environ.get("MIXNET_CACHE_MAX_MB", 512))
MIRROR = _flag("MXNET_BACKWARD_DO_MIRROR")


def _max_elements(default=2 ** 40):
    text = os.environ.get("MIXNET_MAX_ELEMENTS")
    if text is None:
        return default
    try:
        value = int(float(text))
    except (ValueError, OverflowError):
        value = -1
    if value < 1:
        import warnings
        warnings.warn(f"MIXNET_MAX_ELEMENTS={text!r} is not a positive number; using {default}", stacklevel=2)
        return default
    return value


MAX_ELEMENTS = _max_elements()
