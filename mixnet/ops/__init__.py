"""The operator registry and its op families. Importing this package registers every op.

numpy's floating-point RuntimeWarnings ("divide by zero encountered in log") raised inside op kernels are
silenced: MXNet computes log(0) = -inf, x / 0 = inf, sqrt(-1) = nan without a word, and so does mixnet. The
filter matches only warnings attributed to mixnet.ops modules, so it costs nothing per call and leaves users'
own numpy code alone.
"""
import warnings

warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"mixnet\.ops(\.|$)")
from . import registry, dispatch, attrs  # noqa: F401
from . import elemwise, basic, reduce, shape, indexing, sort, creation, random, linalg, nn, ctc, rnn, control_flow  # noqa: F401
from . import contrib, spatial, svm  # noqa: F401
from . import image  # noqa: F401
from . import attention, correlation, roi, quantization, deformable, proposal  # noqa: F401
from . import nn_norm_variants, histogram, softmax_ce  # noqa: F401

__all__ = ["registry", "dispatch", "attrs"]
from . import random_unique  # noqa: F401
from . import random_pdf  # noqa: F401
from . import sequence_reduce  # noqa: F401  (SequenceSum, SequenceMean: mixnet additions)
from . import _fastpath  # noqa: E402

# The eager loops' machine code, where the kernel cache holds it exported: loading starts now, in a background
# thread, while the rest of mixnet imports and the script builds its model (config.LOAD_AHEAD, _fastpath.py)
_fastpath.load_ahead()
