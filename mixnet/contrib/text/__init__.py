"""`mx.contrib.text`: counting tokens (`utils.count_tokens_from_str`) and indexing them (`vocab.Vocabulary`), as
MXNet 1.x has them. Pretrained embeddings (`text.embedding`) are downloads, which mixnet does not make."""
from . import utils, vocab  # noqa: F401
from .vocab import Vocabulary  # noqa: F401
