"""`DataLoader`: mini-batches from a dataset, in the main process or in worker processes / threads.

Worker processes are forked (where the platform can fork) and keep running between epochs; each gets a
seed for numpy's global RNG and for mixnet's RNG, drawn from numpy's global RNG when the pool starts, so random
augmentations differ between workers and a seeded program is repeatable up to the order workers pick tasks.

A sample or batchify function that raises in a worker surfaces in the main process as an `MXNetError` that
names the failing sample index and the original exception (type, message and the worker's traceback). Where
the original exception class allows it, the raised error is also an instance of that class, so
``except ValueError`` written for MXNet (which re-raised the worker's exception) keeps working.
"""
import multiprocessing
import multiprocessing.pool
import os
import pickle
import sys
import traceback

import numpy as np

from ...base import MXNetError
from . import sampler as _sampler

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data):
    """MXNet's default batchify: NDArrays are stacked, tuples are batched field by field (returning a list),
    anything else goes through ``numpy.asarray`` and becomes an NDArray of that dtype (so Python ints give
    int64 and Python floats float64, as in MXNet)."""
    from ...ndarray import NDArray, array
    first = data[0]
    if isinstance(first, NDArray):
        shapes = {d.shape for d in data}
        if len(shapes) > 1:
            raise MXNetError(f"default_batchify_fn: samples have different shapes {sorted(shapes)}; pad them "
                             f"(batchify_fn=mixnet.gluon.data.batchify.Pad()) or resize them")
        stacked = np.stack([d.asnumpy() for d in data])
        return array(stacked, ctx=first.context, dtype=first.dtype)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    try:
        arr = np.asarray(data)
    except ValueError as err:
        raise MXNetError(f"default_batchify_fn: cannot stack the samples of this batch ({err}); samples of "
                         f"different shapes need batchify_fn=mixnet.gluon.data.batchify.Pad()") from None
    if arr.dtype.kind in "OUSV":
        raise MXNetError(f"default_batchify_fn: cannot make an NDArray from samples of type "
                         f"{type(first).__name__} (numpy dtype {arr.dtype}); pass a batchify_fn")
    return array(arr, dtype=arr.dtype)


default_mp_batchify_fn = default_batchify_fn


# ------------------------------------------------------------------------------------------ worker side
_WORKER = {}


def _worker_init(dataset, batchify_fn, base_seed, counter):
    """Runs once in each worker process: keeps the dataset and seeds the RNGs (base_seed + start order)."""
    _WORKER["dataset"] = dataset
    _WORKER["batchify_fn"] = batchify_fn
    with counter.get_lock():
        seed = base_seed + counter.value
        counter.value += 1
    np.random.seed(seed % (2 ** 32))
    try:
        from ... import random as _random
        _random.seed(seed)
    except Exception:  # noqa: BLE001
        pass


def _failure(index, err):
    try:
        pickled = pickle.dumps(err)
    except Exception:  # noqa: BLE001
        pickled = None
    return ("error", index, type(err).__name__, str(err), traceback.format_exc(), pickled)


def _fetch(dataset, batchify_fn, indices):
    samples = []
    for i in indices:
        try:
            samples.append(dataset[i])
        except Exception as err:  # noqa: BLE001  (reported to the main process)
            return _failure(i, err)
    try:
        return ("ok", batchify_fn(samples))
    except Exception as err:  # noqa: BLE001
        return _failure(None, err)


def _process_fetch(indices):
    return _fetch(_WORKER["dataset"], _WORKER["batchify_fn"], indices)


class _ThreadFetch:
    def __init__(self, dataset, batchify_fn):
        self._dataset = dataset
        self._batchify_fn = batchify_fn

    def __call__(self, indices):
        return _fetch(self._dataset, self._batchify_fn, indices)


# ------------------------------------------------------------------------------------------ main side
_ERROR_CLASSES = {}


def _worker_error(result, indices, kind):
    _, index, type_name, message, tb, pickled = result
    original = None
    if pickled is not None:
        try:
            original = pickle.loads(pickled)  # produced by our own worker a moment ago
        except Exception:  # noqa: BLE001
            original = None
    where = (f"sample index {index}" if index is not None else
             f"batchify_fn on the batch of sample indices {list(indices)}")
    text = (f"DataLoader {kind} failed on {where}: {type_name}: {message}\n"
            f"--- {kind} traceback ---\n{tb.rstrip()}")
    cls = MXNetError
    if original is not None and not isinstance(original, MXNetError):
        base = type(original)
        cls = _ERROR_CLASSES.get(base)
        if cls is None:
            try:
                cls = type(f"DataLoaderWorkerError_{base.__name__}", (MXNetError, base), {})
                cls(text)
            except Exception:  # noqa: BLE001  (incompatible layout or constructor)
                cls = MXNetError
            _ERROR_CLASSES[base] = cls
    try:
        err = cls(text)
    except Exception:  # noqa: BLE001
        err = MXNetError(text)
    err.worker_index = index
    err.worker_exception = original
    return err


def _pin(data, ctx):
    from ...ndarray import NDArray
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return type(data)(_pin(d, ctx) for d in data)
    return data


def _mp_context():
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


class _MultiWorkerIter:
    def __init__(self, loader):
        self._loader = loader
        self._batches = iter(loader._batch_sampler)
        self._pending = []   # (async result, indices), in submission order
        self._done = False
        for _ in range(max(loader._prefetch, 1)):
            self._submit()

    def _submit(self):
        if self._done:
            return
        try:
            indices = next(self._batches)
        except StopIteration:
            self._done = True
            return
        indices = list(indices)
        self._pending.append((self._loader._worker_pool.apply_async(self._loader._fetch_fn, (indices,)), indices))

    def __iter__(self):
        return self

    def __next__(self):
        if not self._pending:
            raise StopIteration
        result, indices = self._pending.pop(0)
        self._submit()
        kind = "worker thread" if self._loader._thread_pool else "worker process"
        try:
            out = result.get(self._loader._timeout)
        except multiprocessing.TimeoutError:
            raise MXNetError(f"DataLoader: no batch from the {kind}es within timeout={self._loader._timeout} s "
                             f"(batch of sample indices {indices}); a worker may be stuck or have died. Pass a "
                             f"larger timeout for slow datasets.") from None
        if out[0] != "ok":
            raise _worker_error(out, indices, kind)
        batch = out[1]
        if self._loader._pin_memory:
            batch = _pin(batch, self._loader._pin_ctx())
        return batch

    next = __next__


class DataLoader:
    """Loads mini-batches from a dataset.

    dataset: anything with ``__getitem__`` and ``__len__``. batch_size, shuffle, sampler, last_batch
    ('keep' | 'discard' | 'rollover'): how to build the default `BatchSampler`; or batch_sampler: an iterable
    of index lists (then none of the four may be given). batchify_fn: turns a list of samples into a batch
    (default `default_batchify_fn`; see `mixnet.gluon.data.batchify` for padding). num_workers: 0 loads in
    the main process; > 0 uses that many worker processes (threads with thread_pool=True). prefetch: how many
    batches to keep in flight (default 2 * num_workers). timeout: seconds to wait for one batch from a worker
    before raising `MXNetError`. pin_memory / pin_device_id: put batches on ``cpu_pinned(pin_device_id)``.
    auto_reload and try_nopython are accepted for MXNet compatibility and ignored.
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=False, timeout=120, auto_reload=False, try_nopython=None):
        self._worker_pool = None
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self._timeout = timeout

        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                if shuffle:
                    sampler = _sampler.RandomSampler(len(dataset))
                else:
                    sampler = _sampler.SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = _sampler.BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must not be specified if batch_sampler "
                             "is specified.")
        self._batch_sampler = batch_sampler

        self._num_workers = int(num_workers) if num_workers and num_workers > 0 else 0
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._batchify_fn = batchify_fn if batchify_fn is not None else default_batchify_fn
        self._fetch_fn = None

    def _pin_ctx(self):
        from ...context import cpu_pinned
        return cpu_pinned(self._pin_device_id)

    def _start_pool(self):
        if self._worker_pool is not None:
            return
        if self._thread_pool:
            self._worker_pool = multiprocessing.pool.ThreadPool(self._num_workers)
            self._fetch_fn = _ThreadFetch(self._dataset, self._batchify_fn)
            return
        ctx = _mp_context()
        base = int(np.random.randint(0, 2 ** 31 - 1))
        counter = ctx.Value("l", 0)
        self._owner_pid = os.getpid()
        self._worker_pool = ctx.Pool(self._num_workers, initializer=_worker_init,
                                     initargs=(self._dataset, self._batchify_fn, base, counter))
        self._fetch_fn = _process_fetch

    def __iter__(self):
        if self._num_workers == 0:
            return self._same_process_iter()
        self._start_pool()
        return _MultiWorkerIter(self)

    def _same_process_iter(self):
        for indices in self._batch_sampler:
            batch = self._batchify_fn([self._dataset[i] for i in indices])
            if self._pin_memory:
                batch = _pin(batch, self._pin_ctx())
            yield batch

    def __len__(self):
        return len(self._batch_sampler)

    def close(self):
        """Stops the worker pool (it is also stopped when the loader is garbage-collected)."""
        pool, self._worker_pool = getattr(self, "_worker_pool", None), None
        if pool is not None and os.getpid() == getattr(self, "_owner_pid", os.getpid()):
            try:
                pool.terminate()
                pool.join()
            except Exception:  # noqa: BLE001  (interpreter shutdown)
                pass

    def __del__(self):
        self.close()
