"""`mx.mod`: MXNet 1.x's legacy symbolic training API: `Module` (one Symbol) and `BucketingModule` (one
Module per bucket key, sharing parameters), with `BaseModule`'s fit/score/predict loops."""
from .base_module import BaseModule  # noqa: F401
from .module import Module  # noqa: F401
from .bucketing_module import BucketingModule  # noqa: F401

__all__ = ["BaseModule", "Module", "BucketingModule"]
