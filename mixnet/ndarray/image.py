"""`mx.nd.image`: the registry ops named `_image_*` (to_tensor, normalize, resize, crop, flips, colour jitter)."""
from .register import build_functions as _build_functions

_build_functions(globals(), prefix="_image_")
