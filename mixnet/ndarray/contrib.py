"""`mx.nd.contrib`: the registry ops named `_contrib_*`."""
import math as _math

from ..context import current_context as _current_context
from ..optimizer.update_ops import adamw_update  # noqa: F401
from . import op as _op, random as _random
from .control_flow import foreach, while_loop, cond  # noqa: F401
from .op import isnan, isinf, isfinite  # noqa: F401  (MXNet spells these nd.contrib.isnan ...)
from .register import build_functions as _build_functions

_build_functions(globals(), prefix="_contrib_")


def zipfian_candidates(F, uniform, true_classes, num_sampled, range_max, **uniform_kwargs):
    """MXNet's rand_zipfian over the op functions F (mxnet.ndarray.op or mxnet.symbol.op) and the sampler
    `uniform` of the same namespace: num_sampled log-uniform classes in [0, range_max) drawn with replacement,
    P(c) = log((c + 2) / (c + 1)) / log(range_max + 1), and the expected counts num_sampled * P(c) of the true
    classes and of the sampled ones (float64)."""
    log_range = _math.log(range_max + 1)
    rand = uniform(0, log_range, shape=(num_sampled,), dtype="float64", **uniform_kwargs)
    sampled = F.Cast(F.exp(rand) - 1, dtype="int64") % range_max

    def expected_count(classes):
        classes = F.Cast(classes, dtype="float64")
        return F.log((classes + 2.0) / (classes + 1.0)) / log_range * num_sampled
    return sampled, expected_count(true_classes), expected_count(sampled)


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Samples num_sampled candidate classes from the approximately Zipfian (log-uniform) distribution over
    [0, range_max) with replacement; returns (sampled classes (int64), expected counts of true_classes,
    expected counts of the sampled classes)."""
    ctx = ctx or _current_context()
    return zipfian_candidates(_op, _random.uniform, true_classes.as_in_context(ctx), num_sampled, range_max, ctx=ctx)
