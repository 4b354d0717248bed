"""`gluon.model_zoo`: MXNet 1.x's predefined vision models (`vision`) and the local store of their
pretrained weights (`model_store`; mixnet reads files already on disk and never downloads)."""
from . import model_store  # noqa: F401
from . import vision  # noqa: F401
