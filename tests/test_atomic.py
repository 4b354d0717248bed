"""mixnet/_atomic.py: atomic saves, and the temporary files of killed writers removed by the next save of the
same file (never those of a live writer). Every writer of the package goes through it (checked per writer)."""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import mixnet as mx
from mixnet import _atomic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def temps(directory):
    return sorted(n for n in os.listdir(directory) if n.endswith(_atomic.TEMP_SUFFIX))


def dead_pid():
    """The id of a process that has exited (and been reaped)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def plant(path, pid, host=None, base=None):
    """A temporary file as a writer of `path` with process id `pid` names it."""
    directory, name = os.path.split(os.fspath(path))
    tmp = os.path.join(directory, _atomic._temp_prefix(base or name)
                       + f"{host or _atomic._HOST}.{pid}.0badc0de{_atomic.TEMP_SUFFIX}")
    with open(tmp, "wb") as f:
        f.write(b"half a file")
    return os.path.basename(tmp)


SAVER = """
import sys
import numpy as np
import mixnet as mx
big = {"w": mx.nd.array(np.arange(12_500_000, dtype=np.float32))}   # 50 MB
print("ready", flush=True)
while True:
    mx.nd.save(sys.argv[1], big)
"""


def test_killed_saves_leave_no_temp_file_after_the_next_save(tmp_path):
    path = str(tmp_path / "big.params")
    mx.nd.save(path, {"w": mx.nd.ones(3)})
    left_by_kill = 0
    for _ in range(4):
        child = subprocess.Popen([sys.executable, "-c", SAVER, path], stdout=subprocess.PIPE, env=ENV)
        try:
            assert child.stdout.readline() == b"ready\n"
            before, deadline = set(temps(tmp_path)), time.monotonic() + 60
            while not set(temps(tmp_path)) - before and time.monotonic() < deadline:   # it is writing: kill it
                time.sleep(0.001)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
            child.stdout.close()
        # Each new writer removed the previous one's leftover before writing; this one's is there until the next.
        left = temps(tmp_path)
        assert len(left) <= 1
        left_by_kill += len(left)
    assert left_by_kill >= 3, "the writers were not killed mid-write; the test proves nothing"
    assert mx.nd.load(path)["w"].shape in ((3,), (12_500_000,))                 # the old file or a whole new one
    mx.nd.save(path, {"w": mx.nd.arange(5)})
    assert temps(tmp_path) == []
    assert mx.nd.load(path)["w"].asnumpy().tolist() == [0, 1, 2, 3, 4]


LIVE_WRITER = """
import sys
from mixnet import _atomic
with _atomic.atomic_open(sys.argv[1], "wb") as f:
    f.write(b"from the live writer")
    f.flush()
    print("writing", flush=True)
    sys.stdin.readline()
"""


def test_a_live_concurrent_writers_temp_file_is_kept(tmp_path):
    path = str(tmp_path / "model.params")
    stale = plant(path, dead_pid())
    child = subprocess.Popen([sys.executable, "-c", LIVE_WRITER, path], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=ENV)
    try:
        assert child.stdout.readline() == b"writing\n"
        [live] = [n for n in temps(tmp_path) if n != stale]
        mx.nd.save(path, [mx.nd.ones(2)])
        assert temps(tmp_path) == [live]                                  # the stale one went, the live one stayed
        assert mx.nd.load(path)[0].asnumpy().tolist() == [1, 1]
        child.stdin.write(b"go\n")
        child.stdin.close()
        assert child.wait(timeout=60) == 0
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    with open(path, "rb") as f:
        assert f.read() == b"from the live writer"
    assert temps(tmp_path) == []


def test_which_leftovers_are_removed(tmp_path):
    path = tmp_path / "net.params"
    gone = dead_pid()
    removed = [plant(path, gone),
               plant(path, os.getpid())]                # this process, but not writing it now
    kept = [plant(path, gone, host="0123abcd"),      # another host's writer: its pid means nothing here
            plant(path, os.getppid()),                 # alive
            plant(tmp_path / "net.params.bak", gone),  # another file's
            plant(tmp_path / "net", gone)]
    (tmp_path / ".net.params.notours.mixnet-tmp").write_bytes(b"")
    kept.append(".net.params.notours.mixnet-tmp")
    _atomic.write_atomic(path, b"new")
    assert path.read_bytes() == b"new"
    assert temps(tmp_path) == sorted(kept)
    assert not set(removed) & set(os.listdir(tmp_path))


def test_threads_saving_the_same_file_never_remove_each_others_temp_files(tmp_path):
    path = tmp_path / "shared.params"
    errors = []

    def save(k):
        try:
            for i in range(30):
                _atomic.write_atomic(path, b"%d-%d" % (k, i) * 1000)
        except BaseException as err:     # reported below: a vanished temp file fails os.replace
            errors.append(err)

    threads = [threading.Thread(target=save, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert temps(tmp_path) == [] and path.read_bytes().endswith(b"-29")


def test_long_names_and_text(tmp_path):
    path = tmp_path / ("p" * 240)
    stale = plant(path, dead_pid())
    assert len(stale) < 200
    _atomic.write_atomic(path, "héllo\n")
    assert path.read_bytes() == "héllo\n".encode("utf-8")
    assert temps(tmp_path) == []


def test_an_error_while_writing_keeps_the_old_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("old")
    with pytest.raises(ZeroDivisionError):
        with _atomic.atomic_open(path, "w") as f:
            f.write("new, half")
            1 / 0
    assert path.read_text() == "old" and temps(tmp_path) == []
    with pytest.raises(ValueError, match="mode"):
        with _atomic.atomic_open(path, "a"):
            pass


def test_permissions_follow_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        _atomic.write_atomic(tmp_path / "f", b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o640


# Every writer in the package: each must clean a dead writer's leftover of the file it writes.
def _nd_save(d):
    mx.nd.save(str(d / "a.params"), {"x": mx.nd.ones(2)})
    return ["a.params"]


def _symbol_save(d):
    (mx.sym.var("x") * 2).save(str(d / "s-symbol.json"))
    return ["s-symbol.json"]


def _block_save(d):
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    net.save(str(d / "m"))
    return ["m-model.json", "m-model.params"]


def _trainer_states(d):
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"momentum": 0.9}, kvstore=None)
    with mx.autograd.record():
        loss = net(mx.nd.ones((1, 3))).sum()
    loss.backward()
    trainer.step(1)
    trainer.save_states(str(d / "t.states"))
    return ["t.states"]


def _kernel_cache(d):
    from mixnet.codegen import cache
    previous = cache.set_cache_dir(d)
    try:
        path = cache.store_source("# a kernel\n", ".cu")
    finally:
        cache.set_cache_dir(previous)
    return [os.path.basename(path)]


def _download(d):
    src = d / "src.bin"
    src.write_bytes(b"payload")
    mx.gluon.utils.download(src.as_uri(), path=str(d / "got.bin"), overwrite=True)
    return ["got.bin"]


@pytest.mark.parametrize("writer", [_nd_save, _symbol_save, _block_save, _trainer_states, _kernel_cache,
                                    _download])
def test_every_writer_cleans_up_after_killed_writers(tmp_path, writer):
    from mixnet.codegen import cache
    names = writer(tmp_path)             # where it writes (a second run writes the same files)
    gone = dead_pid()
    for name in names:
        plant(tmp_path / name, gone)
    assert len(temps(tmp_path)) == len(names)
    if writer is _kernel_cache:      # an intact kernel file is not rewritten: make it stale
        os.remove(tmp_path / names[0])
        assert cache.kernel_name("# a kernel\n") in names[0]
    assert writer(tmp_path) == names
    assert temps(tmp_path) == []
    assert np.all([os.path.getsize(tmp_path / n) > 0 for n in names])
