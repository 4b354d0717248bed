"""`DataLoader`: mini-batches from a dataset, in the main process or in worker processes / threads.

Worker processes are forked (where the platform can fork) and keep running between epochs; worker i seeds numpy's
global RNG and mixnet's RNG with base + i, base being drawn from numpy's global RNG when the workers start, so
random augmentations differ between workers and a seeded program is repeatable up to which worker gets which batch.

A sample or batchify function that raises in a worker surfaces in the main process as an `MXNetError` that
names the failing sample index and the original exception (type, message and the worker's traceback). Where
the original exception class allows it, the raised error is also an instance of that class, so
``except ValueError`` written for MXNet (which re-raised the worker's exception) keeps working.

A worker process that dies (killed by a signal, e.g. by the out-of-memory killer, or calling ``os._exit``) is
noticed at once, whatever the timeout: `WorkerDiedError` names the worker, its pid, the signal or exit code and
the batch it was loading, and the other workers are shut down (the next pass starts new ones). `close()`, and
deleting the loader or an iterator, never wait for a worker; workers never outlive the main process.
"""
import collections
import ctypes
import itertools
import multiprocessing
import multiprocessing.connection
import multiprocessing.pool
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ... import _display
from ..._traceback import hide_internals
from ...base import MXNetError
from ...context import cpu
from . import sampler as _sampler
from ...ndarray import NDArray, array
from ... import random as _random
from ...context import cpu_pinned

__all__ = ["DataLoader", "BatchifyError", "WorkerDiedError", "default_batchify_fn", "default_mp_batchify_fn"]


class BatchifyError(MXNetError, ValueError):
    """default_batchify_fn cannot make one array of a batch's samples (different shapes, or values numpy cannot
    stack); iterating a DataLoader adds the batch's sample indices. Also a ValueError, what numpy raised."""


def _shapes_text(data):
    """'(3,) at positions [0, 2]; (4,) at [1]': each distinct sample shape and where in the batch it is."""
    where = {}
    for pos, sample in enumerate(data):
        where.setdefault(tuple(np.shape(sample)), []).append(pos)
    return "; ".join(f"{shape} at positions {positions}" for shape, positions in where.items())


def default_batchify_fn(data):
    """MXNet's default batchify: NDArrays are stacked, tuples are batched field by field (returning a list),
    anything else goes through ``numpy.asarray`` and becomes an NDArray of that dtype (so Python ints give
    int64 and Python floats float64, as in MXNet)."""
    first = data[0]
    if isinstance(first, NDArray):
        shapes = {d.shape for d in data}
        if len(shapes) > 1:
            raise BatchifyError(f"default_batchify_fn: samples have different shapes {sorted(shapes)}; pad them "
                                f"(batchify_fn=mixnet.gluon.data.batchify.Pad()) or resize them")
        stacked = np.stack([d.asnumpy() for d in data])
        return array(stacked, ctx=first.context, dtype=first.dtype)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    try:
        arr = np.asarray(data)
    except ValueError:
        raise BatchifyError(f"default_batchify_fn: cannot stack samples of different shapes: {_shapes_text(data)}; "
                            f"pad them (batchify_fn=mixnet.gluon.data.batchify.Pad()) or resize them") from None
    if arr.dtype.kind in "OUSV":
        raise BatchifyError(f"default_batchify_fn: cannot make an NDArray from samples of type "
                            f"{type(first).__name__} (numpy dtype {arr.dtype}); pass a batchify_fn")
    return array(arr, dtype=arr.dtype)


default_mp_batchify_fn = default_batchify_fn


# ------------------------------------------------------------------------------------------ worker side
# Why our own worker processes rather than multiprocessing.Pool: a Pool shares one task pipe and one result pipe
# among all its workers, each guarded by a lock shared between processes. A worker killed while holding one (a
# SIGKILL or the OOM killer striking while it waits for a task or writes a batch) leaves it locked forever, and the
# whole pool, Pool.terminate() included, hangs. A Pool also replaces a dead worker silently and loses its task, so
# the caller only learns of the death from its timeout. Here each worker has a private task pipe and a private
# result pipe and nothing is shared: a worker may die or be killed at any moment without blocking anyone, the main
# process knows which batches each worker holds, and it waits on the workers' exit sentinels together with their
# result pipes, so a death is seen the moment it happens.
_PR_SET_PDEATHSIG = 1          # from <sys/prctl.h>
_PARENT_POLL_S = 0.5           # how often a worker not covered by PR_SET_PDEATHSIG checks that its parent lives


def _seed_worker(seed):
    np.random.seed(seed % (2 ** 32))
    try:
        _random.seed(seed)
    except Exception:  # noqa: BLE001
        pass


def _die_with_parent(parent_pid, kernel_signal):
    """Makes sure this worker never outlives the main process. On Linux, when the main process's main thread
    forked us, the kernel sends SIGKILL the moment it dies (PR_SET_PDEATHSIG fires when the forking *thread*
    ends, so a worker forked by another thread would be killed with that thread: those, and other systems, use a
    thread that polls for the parent instead)."""
    if kernel_signal:
        try:
            kernel_signal = ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
        except (OSError, AttributeError):
            kernel_signal = False
    if os.getppid() != parent_pid:   # the parent died before we could ask to follow it
        os._exit(0)
    if not kernel_signal:
        threading.Thread(target=_watch_parent, args=(parent_pid,), name="DataLoader parent watch",
                         daemon=True).start()


def _watch_parent(parent_pid):
    while os.getppid() == parent_pid:
        time.sleep(_PARENT_POLL_S)
    os._exit(0)


def _worker_main(parent_pid, kernel_signal, inherited, tasks, results, dataset, batchify_fn, seed):
    """A worker process: reads (task id, sample indices) from `tasks`, writes (task id, outcome) to `results`."""
    for conn in inherited:   # the main process's ends of the pipes, copied by fork: keeping them would hide EOFs
        conn.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is for the main process, which then stops the workers
    _die_with_parent(parent_pid, kernel_signal)
    _seed_worker(seed)
    # batches are made on the CPU, as MXNet's workers make them in cpu_shared: the fork copied the main thread's
    # default context, and a forked process cannot use the parent's CUDA context
    with cpu():
        while True:
            try:
                task_id, indices = tasks.recv()
            except (EOFError, OSError):   # the main process closed the loader
                return
            out = _fetch(dataset, batchify_fn, indices)
            try:
                payload = ForkingPickler.dumps((task_id, out))
            except Exception as err:  # noqa: BLE001  (a batch that cannot be pickled is reported, not lost)
                failure = _failure("sending the batch to the main process", None, err)
                payload = ForkingPickler.dumps((task_id, failure))
            try:
                results.send_bytes(payload)
            except OSError:   # the main process closed the loader or died
                return


def _failure(where, index, err):
    try:
        pickled = pickle.dumps(err)
    except Exception:  # noqa: BLE001
        pickled = None
    return ("error", where, index, type(err).__name__, str(err), traceback.format_exc(), pickled)


def _fetch(dataset, batchify_fn, indices):
    samples = []
    for i in indices:
        try:
            samples.append(dataset[i])
        except Exception as err:  # noqa: BLE001  (reported to the main process)
            return _failure(f"sample index {i}", i, err)
    try:
        return ("ok", batchify_fn(samples))
    except Exception as err:  # noqa: BLE001
        return _failure(f"batchify_fn on the batch of sample indices {list(indices)}", None, err)


class _ThreadFetch:
    def __init__(self, dataset, batchify_fn):
        self._dataset = dataset
        self._batchify_fn = batchify_fn

    def __call__(self, indices):
        return _fetch(self._dataset, self._batchify_fn, indices)


# ------------------------------------------------------------------------------------------ main side
class WorkerDiedError(MXNetError):
    """A DataLoader worker process died (killed by a signal, e.g. by the out-of-memory killer, or exited) while
    the loader was in use. Attributes: worker_index, pid, exitcode (negative: the signal number)."""


_ERROR_CLASSES = {}
_TIMEOUT = object()       # what `get` returns when no batch came in time
_TASK_PIPE_BYTES = 32768  # task bytes a busy worker may have queued: half a Linux pipe, so sends never block


def _worker_error(result, indices, kind):
    _, where, index, type_name, message, tb, pickled = result
    original = None
    if pickled is not None:
        try:
            original = pickle.loads(pickled)  # produced by our own worker a moment ago
        except Exception:  # noqa: BLE001
            original = None
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
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return type(data)(_pin(d, ctx) for d in data)
    return data


def _mp_context():
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _exit_text(exitcode):
    if exitcode is None:
        return "died"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "signal"
        hint = " (often the out-of-memory killer)" if -exitcode == signal.SIGKILL else ""
        return f"was killed by signal {name} ({-exitcode}){hint}"
    return f"exited with code {exitcode}"


class _Worker:
    """The main process's view of one worker: its process, its pipe ends and the tasks it holds, in order."""

    def __init__(self, index, process, tasks, results):
        self.index = index
        self.process = process
        self.tasks = tasks        # main -> worker: (task id, sample indices)
        self.results = results    # worker -> main: (task id, outcome)
        self.held = collections.deque()   # (task id, pickled task size, indices), sent and not yet answered
        self.held_bytes = 0


class _ProcessWorkers:
    """`num_workers` worker processes (why not a multiprocessing.Pool: see the comment opening the worker side).
    `submit` queues a batch and returns its task id; `get` waits for that task's outcome while receiving whatever
    other workers finish meanwhile, and raises `WorkerDiedError` as soon as any worker dies; `discard` drops tasks
    nobody will ask for (an iterator deleted early); `close` kills the workers without waiting for anything."""

    def __init__(self, num_workers, dataset, batchify_fn):
        ctx = _mp_context()
        fork = ctx.get_start_method() == "fork"
        base_seed = int(np.random.randint(0, 2 ** 31 - 1))
        self.owner_pid = os.getpid()
        kernel_signal = sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()
        self._workers = []
        self._backlog = collections.deque()    # (task id, pickled task, indices) not yet sent to a worker
        self._results = {}                     # task id -> outcome, received and not yet taken
        self._abandoned = set()                # task ids whose outcome is dropped on arrival
        self._dropped = collections.deque()    # task ids handed to `discard` (from any thread, without the lock)
        self._ids = itertools.count()
        self._lock = threading.Lock()          # one thread at a time talks to the workers
        self._error = None                     # the message of a worker's death: the pool is then closed
        self.closed = False
        try:
            for index in range(num_workers):
                tasks_r, tasks_w = ctx.Pipe(duplex=False)
                results_r, results_w = ctx.Pipe(duplex=False)
                inherited = [c for w in self._workers for c in (w.tasks, w.results)] + [tasks_w, results_r]
                process = ctx.Process(
                    target=_worker_main, name=f"DataLoader worker {index}", daemon=True,
                    args=(self.owner_pid, kernel_signal, inherited if fork else [], tasks_r, results_w, dataset,
                          batchify_fn, base_seed + index))
                process.start()
                tasks_r.close()
                results_w.close()
                self._workers.append(_Worker(index, process, tasks_w, results_r))
        except BaseException:
            self.close()
            raise

    @property
    def pids(self):
        return [w.process.pid for w in self._workers]

    def submit(self, indices):
        task_id = next(self._ids)
        payload = ForkingPickler.dumps((task_id, list(indices)))
        with self._lock:
            self._check_open()
            self._forget_dropped()
            self._backlog.append((task_id, payload, indices))
            self._dispatch()
        return task_id

    def discard(self, task_ids):
        self._dropped.extend(task_ids)   # atomic: safe from __del__ in any thread, and never waits

    def get(self, task_id, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            return _TIMEOUT
        try:
            self._forget_dropped()
            while task_id not in self._results:
                self._check_open()
                busy = [w for w in self._workers if w.held]
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return _TIMEOUT
                ready = multiprocessing.connection.wait(
                    [w.results for w in busy] + [w.process.sentinel for w in self._workers], remaining)
                if self.closed:   # close() ran in another thread while we waited
                    self._check_open()
                for w in busy:
                    if w.results in ready:
                        self._receive(w)
                for w in self._workers:
                    if w.process.sentinel in ready:
                        raise self._died(w)
            return self._results.pop(task_id)
        finally:
            self._lock.release()

    def _check_open(self):
        if self._error is not None:
            raise WorkerDiedError(self._error)
        if self.closed:
            raise MXNetError("DataLoader: the worker processes were shut down (DataLoader.close())")

    def _dispatch(self):
        """Sends queued tasks, oldest first, to the least busy workers. A worker gets a task only while the task
        bytes it has not answered yet stay under _TASK_PIPE_BYTES (or it holds none), so the task pipe never
        fills and a send never blocks: a worker blocked writing a big batch would otherwise never read it."""
        while self._backlog:
            task_id, payload, indices = self._backlog[0]
            room = [w for w in self._workers if not w.held or w.held_bytes + len(payload) <= _TASK_PIPE_BYTES]
            if not room:
                return
            w = min(room, key=lambda w: len(w.held))
            try:
                w.tasks.send_bytes(payload)
            except OSError:   # the worker is gone
                raise self._died(w) from None
            self._backlog.popleft()
            w.held.append((task_id, len(payload), indices))
            w.held_bytes += len(payload)

    def _receive(self, w):
        try:
            task_id, out = pickle.loads(w.results.recv_bytes())   # from our own worker
        except (EOFError, OSError):   # it died while writing
            raise self._died(w) from None
        _, size, _ = w.held.popleft()   # a worker answers its tasks in order
        w.held_bytes -= size
        self._forget_dropped()
        if task_id in self._abandoned:
            self._abandoned.discard(task_id)
        else:
            self._results[task_id] = out
        self._dispatch()

    def _forget_dropped(self):
        """Applies `discard`: outcomes already here are freed, tasks not sent yet are never sent, and the
        outcomes of tasks a worker holds are dropped when they arrive."""
        if not self._dropped:
            return
        dropped = set()
        while self._dropped:
            dropped.add(self._dropped.popleft())
        for task_id in dropped.intersection(self._results):
            del self._results[task_id]
        self._backlog = collections.deque(t for t in self._backlog if t[0] not in dropped)
        self._abandoned.update(t for w in self._workers for t, _, _ in w.held if t in dropped)

    def _died(self, w):
        """Shuts the pool down and returns the error that names the dead worker and how it died."""
        w.process.join(1.0)   # it is gone or going: the exit status follows at once
        try:   # skip the batches it sent before dying, so that the batch named is the one it died on
            while w.held and w.results.poll():
                w.results.recv_bytes()
                w.held.popleft()
        except (EOFError, OSError):
            pass
        where = (f"while loading the batch of sample indices {list(w.held[0][2])}" if w.held
                 else "while waiting for work")
        message = (f"DataLoader worker {w.index} (pid {w.process.pid}) {_exit_text(w.process.exitcode)} {where}. "
                   f"The loader's worker processes were shut down; iterating again starts new ones.")
        err = WorkerDiedError(message)
        err.worker_index, err.pid, err.exitcode = w.index, w.process.pid, w.process.exitcode
        self._error = message
        self.close()
        return err

    def close(self):
        """Kills the workers at once: they share no lock or pipe with anyone, so killing one at any point is safe,
        and nothing waits on a worker stuck in a dataset's code or blocked writing a batch nobody reads."""
        self.closed = True
        if os.getpid() != self.owner_pid:   # a forked copy of this object: the workers are not this process's
            return
        for w in self._workers:
            for conn in (w.tasks, w.results):
                conn.close()
            if w.process.exitcode is None:
                w.process.kill()
        deadline = time.monotonic() + 2.0
        for w in self._workers:   # reap them (a killed process is gone within milliseconds)
            w.process.join(max(0.0, deadline - time.monotonic()))


class _ThreadWorkers:
    """`num_workers` threads behind the same interface as `_ProcessWorkers`."""

    def __init__(self, num_workers, dataset, batchify_fn):
        self.owner_pid = os.getpid()
        self.closed = False
        self._pool = multiprocessing.pool.ThreadPool(num_workers)
        self._fetch = _ThreadFetch(dataset, batchify_fn)

    def submit(self, indices):
        if self.closed:
            raise MXNetError("DataLoader: the worker threads were shut down (DataLoader.close())")
        return self._pool.apply_async(self._fetch, (list(indices),))

    def discard(self, tasks):
        pass   # a thread's outcome is simply never read

    def get(self, task, timeout):
        try:
            return task.get(timeout)
        except multiprocessing.TimeoutError:
            return _TIMEOUT

    def close(self):
        """Stops the threads without joining them: a thread inside a slow sample ends after that sample."""
        self.closed = True
        self._pool.terminate()


class _MultiWorkerIter:
    def __init__(self, loader, workers):
        self._loader = loader     # keeps the loader, and so its workers, alive while iterating
        self._workers = workers
        self._batches = iter(loader._batch_sampler)
        self._pending = collections.deque()   # (task, indices), in submission order
        self._done = False
        for _ in range(max(loader._prefetch, 1)):
            self._submit()

    def _submit(self):
        if self._done:
            return
        try:
            indices = list(next(self._batches))
        except StopIteration:
            self._done = True
            return
        self._pending.append((self._workers.submit(indices), indices))

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return self._next()
        except MXNetError as err:
            __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
            raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them

    def _next(self):
        if not self._pending:
            raise StopIteration
        task, indices = self._pending.popleft()
        self._submit()
        kind = "worker thread" if self._loader._thread_pool else "worker process"
        out = self._workers.get(task, self._loader._timeout)
        if out is _TIMEOUT:
            raise MXNetError(f"DataLoader: no batch from the {kind}es within timeout={self._loader._timeout} s "
                             f"(batch of sample indices {indices}); a worker may be stuck. Pass a larger "
                             f"timeout for slow datasets.")
        if out[0] != "ok":
            raise _worker_error(out, indices, kind)
        batch = out[1]
        if self._loader._pin_memory:
            batch = _pin(batch, self._loader._pin_ctx())
        return batch

    next = __next__

    def __del__(self):
        pending = getattr(self, "_pending", None)
        if pending:
            self._workers.discard([task for task, _ in pending])


class DataLoader:
    """Loads mini-batches from a dataset, in the main process or in worker processes.

    Parameters
    ----------
    dataset : Dataset
        Anything with `__getitem__` and `__len__`.
    batch_size : int, optional
        The number of samples per batch (with the default batch sampler).
    shuffle : bool, default False
        Visit the samples in a new random order each epoch.
    sampler : Sampler, optional
        The order of the sample indices (instead of `shuffle`).
    last_batch : {'keep', 'discard', 'rollover'}, optional
        What to do with a last batch smaller than batch_size (default 'keep').
    batch_sampler : Sampler, optional
        An iterable of index lists, instead of batch_size, shuffle, sampler and last_batch (none of which may
        then be given).
    batchify_fn : callable, optional
        Turns a list of samples into a batch (default `default_batchify_fn`; see `mixnet.gluon.data.batchify`
        for padding).
    num_workers : int, default 0
        0 loads in the main process; > 0 uses that many worker processes (threads with thread_pool=True).
    pin_memory : bool, default False
        Put batches on `cpu_pinned(pin_device_id)`.
    pin_device_id : int, default 0
        The pinned-memory device.
    prefetch : int, optional
        How many batches to keep in flight (default 2 * num_workers).
    thread_pool : bool, default False
        Use threads instead of processes for the workers.
    timeout : float, default 120
        Seconds to wait for one batch from a worker before raising `MXNetError` (None: no limit; a worker that
        dies raises `WorkerDiedError` at once either way).
    auto_reload, try_nopython
        Accepted for MXNet compatibility and ignored.

    Examples
    --------
    >>> import mixnet as mx
    >>> data = mx.gluon.data.ArrayDataset(mx.nd.arange(10).reshape((5, 2)), mx.nd.array([0, 1, 0, 1, 0]))
    >>> loader = mx.gluon.data.DataLoader(data, batch_size=2)
    >>> [(x.shape, y.shape) for x, y in loader]
    [((2, 2), (2,)), ((2, 2), (2,)), ((1, 2), (1,))]
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

    # ------------------------------------------------------------------ display
    def _facts(self):
        """[(name, value)]: the dataset and its length, how batches are made, how many, the workers (the reprs)."""
        def length(obj):
            try:
                return len(obj)
            except (TypeError, NotImplementedError):   # a dataset or sampler without a length
                return "?"
        facts = [("dataset", _display.Name(type(self._dataset).__name__)), ("samples", length(self._dataset))]
        sampler = self._batch_sampler
        if isinstance(sampler, _sampler.BatchSampler):
            facts += [("batch_size", sampler._batch_size),
                      ("shuffle", isinstance(sampler._sampler, _sampler.RandomSampler)),
                      ("last_batch", sampler._last_batch)]
        else:
            facts.append(("batch_sampler", _display.Name(type(sampler).__name__)))
        facts += [("batches", length(self)), ("num_workers", self._num_workers)]
        if self._num_workers:
            facts += [("thread_pool", self._thread_pool), ("prefetch", self._prefetch)]
        return facts

    def __repr__(self):
        """One line: 'DataLoader(dataset=ArrayDataset, samples=100, batch_size=32, ..., batches=4, ...)'."""
        return _display.call_text("DataLoader", self._facts())

    def _repr_html_(self):
        return _display.facts_html("DataLoader", self._facts())

    def _pin_ctx(self):
        return cpu_pinned(self._pin_device_id)

    def _start_pool(self):
        pool = self._worker_pool
        if pool is not None and not pool.closed and pool.owner_pid == os.getpid():
            return pool
        # none yet, closed (after a worker died), or inherited through fork from another process
        workers = _ThreadWorkers if self._thread_pool else _ProcessWorkers
        self._worker_pool = workers(self._num_workers, self._dataset, self._batchify_fn)
        return self._worker_pool

    def __iter__(self):
        if self._num_workers == 0:
            return self._same_process_iter()
        return _MultiWorkerIter(self, self._start_pool())

    def _same_process_iter(self):
        for indices in self._batch_sampler:
            try:
                batch = self._batchify_fn([self._dataset[i] for i in indices])
                if self._pin_memory:
                    batch = _pin(batch, self._pin_ctx())
            except BatchifyError as err:
                __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
                raise BatchifyError(f"DataLoader: the batch of sample indices {list(indices)}: {err}") from None
            except MXNetError as err:
                __tracebackhide__ = True    # noqa: F841
                raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them
            yield batch

    def __len__(self):
        return len(self._batch_sampler)

    def close(self):
        """Stops the worker processes or threads at once (also done when the loader is garbage-collected);
        iterating again starts new ones."""
        pool, self._worker_pool = getattr(self, "_worker_pool", None), None
        if pool is not None:
            try:
                pool.close()
            except Exception:  # noqa: BLE001  (interpreter shutdown)
                pass

    def __del__(self):
        self.close()
