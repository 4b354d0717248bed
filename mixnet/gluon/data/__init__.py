"""`mx.gluon.data`: datasets, samplers, `DataLoader`, batchify helpers and `vision` datasets/transforms."""
from .dataset import Dataset, SimpleDataset, ArrayDataset, RecordFileDataset  # noqa: F401
from .sampler import (Sampler, SequentialSampler, RandomSampler, BatchSampler, FilterSampler,  # noqa: F401
                      FixedBucketSampler, BucketSampler)
from .dataloader import (BatchifyError, DataLoader, WorkerDiedError, default_batchify_fn,  # noqa: F401
                         default_mp_batchify_fn)
from . import batchify  # noqa: F401
from . import vision  # noqa: F401
