"""DataLoader worker processes: a dead worker is reported at once and by name, shutdown never blocks, and no
worker outlives the loader or the main process."""
import faulthandler
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import mixnet
from mixnet.base import MXNetError
from mixnet.gluon.data import DataLoader, WorkerDiedError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads worker states from /proc (Linux)")

BIG = 8 * 1024 * 1024   # float32 elements: 32 MB per sample, far more than a pipe holds


def _alive(pid):
    """True while `pid` runs; a zombie (dead, waiting for a parent that may never reap it) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except FileNotFoundError:
        return False


def _wait_gone(pids, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _expected(n, batch_size):
    return [b.asnumpy().tolist() for b in DataLoader(np.arange(n, dtype="float32"), batch_size=batch_size)]


class _DiesOnce:
    """Sample 13 ends its worker (`how`) the first time it is read; the marker file makes later reads, in workers
    started afterwards, succeed."""

    def __init__(self, how, marker):
        self.how, self.marker = how, str(marker)

    def __len__(self):
        return 40

    def __getitem__(self, i):
        if i == 13 and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            if self.how == "exit":
                os._exit(3)
            faulthandler.disable()   # pytest's handler, inherited through fork, would print a traceback
            os.kill(os.getpid(), signal.SIGKILL if self.how == "kill" else signal.SIGSEGV)
        return np.float32(i)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("how, text", [("kill", "was killed by signal SIGKILL (9)"),
                                       ("segv", "was killed by signal SIGSEGV (11)"),
                                       ("exit", "exited with code 3")], ids=["SIGKILL", "SIGSEGV", "exit3"])
def test_dead_worker_is_reported_at_once_by_name(tmp_path, how, text):
    loader = DataLoader(_DiesOnce(how, tmp_path / "died"), batch_size=2, num_workers=2, timeout=None)
    it = iter(loader)
    pids = loader._worker_pool.pids
    start = time.monotonic()
    with pytest.raises(WorkerDiedError) as info:
        list(it)
    assert time.monotonic() - start < 5   # with timeout=None: it is the death that is seen, not a timeout
    err = info.value
    assert err.pid in pids and err.worker_index == pids.index(err.pid)
    assert f"DataLoader worker {err.worker_index} (pid {err.pid}) {text}" in str(err)
    assert "sample indices [12, 13]" in str(err)
    assert isinstance(err, MXNetError)
    assert _wait_gone(pids) == []          # the other worker was shut down too
    # the loader starts new workers on the next pass (sample 13 no longer kills them)
    assert [b.asnumpy().tolist() for b in loader] == _expected(40, 2)
    pids = loader._worker_pool.pids
    loader.close()
    assert _wait_gone(pids) == []


class _Slow:
    def __len__(self):
        return 8

    def __getitem__(self, i):
        time.sleep(60 if i > 0 else 0)
        return np.float32(i)


@pytest.mark.timeout(30)
def test_worker_killed_from_outside_is_reported():
    """The out-of-memory killer's case: a worker busy in a slow sample is killed by someone else."""
    loader = DataLoader(_Slow(), batch_size=1, num_workers=3, timeout=None)
    it = iter(loader)
    assert next(it).asnumpy().tolist() == [0.0]
    pids = loader._worker_pool.pids
    os.kill(pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(WorkerDiedError, match=rf"DataLoader worker 1 \(pid {pids[1]}\) was killed by signal "
                                              r"SIGKILL \(9\).* while loading the batch of sample indices \[\d\]"):
        next(it)
    assert time.monotonic() - start < 5
    assert _wait_gone(pids) == []          # the others, stuck in 60 s samples, were killed


class _Rows:
    def __init__(self, row_len):
        self.row_len = row_len

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return np.full(self.row_len, i, dtype="float32")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["close", "del_loader", "del_iterator_then_loader"])
@pytest.mark.parametrize("row_len, batch_size, rounds, pause", [
    (BIG, 1, 1, 1.0),           # 32 MB batches, left a second to fill the pipes and block
    (16384, 8, 4, 0.0),         # 512 KB batches, shut down at once (this deadlocked multiprocessing.Pool)
], ids=["32MB", "512KB"])
def test_shutdown_with_workers_blocked_writing_batches_returns_at_once(how, row_len, batch_size, rounds, pause):
    for _ in range(rounds):
        loader = DataLoader(_Rows(row_len), batch_size=batch_size, num_workers=3, prefetch=12)
        it = iter(loader)
        assert next(it).shape == (batch_size, row_len)
        pids = loader._worker_pool.pids
        time.sleep(pause)
        start = time.monotonic()
        if how == "close":
            loader.close()
        elif how == "del_loader":
            del loader, it
        else:
            del it
            assert time.monotonic() - start < 5 and all(_alive(p) for p in pids)   # they serve the next pass
            del loader
        assert time.monotonic() - start < 5
        assert _wait_gone(pids) == []


@pytest.mark.timeout(60)
def test_early_break_then_full_passes_give_the_right_batches():
    """Batches abandoned by an iterator deleted early never leak into a later pass. Batches of 3000 indices
    (about 15 KB each when sent) also exercise holding tasks back until a worker's task pipe has room."""
    n, batch_size = 60000, 3000
    expected = _expected(n, batch_size)
    loader = DataLoader(np.arange(n, dtype="float32"), batch_size=batch_size, num_workers=2, prefetch=10)
    for i, batch in enumerate(loader):
        assert batch.asnumpy().tolist() == expected[i]
        if i == 1:
            break
    for _ in range(2):
        assert [b.asnumpy().tolist() for b in loader] == expected
    loader.close()


@pytest.mark.timeout(60)
def test_threads_iterating_one_loader_each_get_every_batch():
    expected = _expected(200, 7)
    loader = DataLoader(np.arange(200, dtype="float32"), batch_size=7, num_workers=2)
    got = [None] * 3

    def run(k):
        got[k] = [b.asnumpy().tolist() for b in loader]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert got == [expected] * 3
    loader.close()


def _unpicklable_batch(samples):
    return lambda: samples


@pytest.mark.timeout(30)
def test_batch_that_cannot_be_sent_is_reported():
    loader = DataLoader(np.arange(4, dtype="float32"), batch_size=2, num_workers=1, batchify_fn=_unpicklable_batch)
    with pytest.raises(MXNetError, match="worker process failed on sending the batch to the main process"):
        list(loader)
    loader.close()


_PARENT = textwrap.dedent("""
    import sys, threading, time
    import numpy as np
    from mixnet.gluon.data import DataLoader

    class Slow:
        def __len__(self):
            return 100
        def __getitem__(self, i):
            time.sleep(60 if i > 0 else 0)
            return np.float32(i)

    def start():
        global loader, it
        loader = DataLoader(Slow(), batch_size=1, num_workers=3, timeout=None)
        it = iter(loader)
        next(it)
        print(*loader._worker_pool.pids, flush=True)

    if sys.argv[1] == "thread":   # workers forked by a thread that then ends: they must not die with it
        t = threading.Thread(target=start)
        t.start()
        t.join()
        time.sleep(1)
        assert all(w.process.is_alive() for w in loader._worker_pool._workers)
        print("alive", flush=True)
    else:
        start()
        print("alive", flush=True)
    time.sleep(120)
""")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("started_by", ["main", "thread"])
def test_killed_main_process_leaves_no_workers(started_by):
    root = os.path.dirname(os.path.dirname(os.path.abspath(mixnet.__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", _PARENT, started_by], stdout=subprocess.PIPE, env=env, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert proc.stdout.readline().strip() == "alive"
        assert len(pids) == 3 and all(_alive(p) for p in pids)
    finally:
        proc.kill()
        proc.wait(10)
    assert _wait_gone(pids) == []


def test_workers_make_batches_on_the_cpu_whatever_the_default_context():
    # The fork copies the loop's default context (a `with mx.gpu(0):` block, say), which a forked process cannot
    # use; workers make their batches on cpu(0), as MXNet's make them in cpu_shared(0).
    features = np.arange(24, dtype=np.float32).reshape(12, 2)
    data = mixnet.gluon.data.ArrayDataset(features, np.arange(12))
    with mixnet.cpu(1):
        batches = list(DataLoader(data, batch_size=4, num_workers=2))
    assert [b[0].context for b in batches] == [mixnet.cpu(0)] * 3
    np.testing.assert_array_equal(np.concatenate([b[0].asnumpy() for b in batches]), features)
