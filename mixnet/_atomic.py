"""Atomic file writes: the one way mixnet writes a file that a crash must not tear.

Every file mixnet writes whole (`nd.save` / `.params`, `-symbol.json`, `-model.json`, `.states`, downloads, test
data, profiles, the kernel cache) goes through `atomic_open` or `write_atomic`: the content is written to a temporary file in the
target's directory, which is renamed over the target (`os.replace`) only when it is complete. A reader therefore
sees the old file or the new one, never half of one, and an error while writing leaves the old file untouched.

A process killed while writing (kill -9, OOM, power loss) cannot remove its temporary file, so the names follow a
scheme that lets the next writer of the same target recognise and remove them::

    .<target basename>.<host id>.<pid>.<random>.mixnet-tmp

Before writing `path`, the temporary files of that same `path` whose writer is gone - made on this host by a
process id that is no longer alive, or by this process but not being written now - are deleted. Temporary files
of a live writer (a concurrent save of the same file) and of other hosts (a shared network directory) are left
alone. On systems without POSIX process ids (Windows) nothing is cleaned.

`durable=True` also fsyncs the file before the rename and the directory after it, so the new content survives a
power loss; caches skip it (losing a cache entry only costs a recompile).
"""
import contextlib
import hashlib
import os
import secrets
import socket
import threading

__all__ = ["atomic_open", "write_atomic", "TEMP_SUFFIX"]

TEMP_SUFFIX = ".mixnet-tmp"
# Temporary names must stay under the usual 255-byte name limit: long basenames are shortened (with a hash, so
# two long names never share temporary files).
_MAX_BASE = 120
_HOST = hashlib.sha1(socket.gethostname().encode("utf-8", "surrogateescape")).hexdigest()[:8]

_lock = threading.Lock()
_writing = set()  # temporary paths this process is writing now


def _temp_prefix(base):
    if len(base.encode("utf-8", "surrogateescape")) > _MAX_BASE:
        digest = hashlib.sha1(base.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        base = base[:_MAX_BASE // 4] + "~" + digest
    return "." + base + "."


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: the process exists but belongs to another user
        return True
    return True


def _remove_stale(directory, prefix):
    """Delete temporary files of this target left by writers that are gone (see the module docstring)."""
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    me = os.getpid()
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(TEMP_SUFFIX)):
            continue
        fields = name[len(prefix):-len(TEMP_SUFFIX)].split(".")
        if len(fields) != 3 or fields[0] != _HOST or not fields[1].isdigit():
            continue  # another host's writer, or a name we did not make
        pid = int(fields[1])
        if pid == me:
            with _lock:
                gone = entry.path not in _writing
        else:
            gone = not _pid_alive(pid)
        if gone:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _fsync_dir(directory):
    """Make the rename itself durable; best effort (not every OS can open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path, mode="wb", encoding=None, durable=False):
    """A file object for writing `path` atomically: ``with atomic_open(p, "w") as f: f.write(text)``.

    The content replaces `path` when the block ends normally; if the block raises, the temporary file is
    removed, `path` is unchanged and the exception propagates. `mode` is "wb" or "w" (text mode defaults to
    UTF-8). OSError from the file system propagates for the caller to report.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_open: mode must be 'wb' or 'w', got {mode!r}")
    path = os.path.abspath(os.fspath(path))
    directory, base = os.path.split(path)
    prefix = _temp_prefix(base)
    _remove_stale(directory, prefix)
    while True:
        tmp = os.path.join(directory, f"{prefix}{_HOST}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
        with _lock:     # registered before it exists: another thread's clean-up must never see it unregistered
            _writing.add(tmp)
        try:
            # 0o666 & ~umask: the same permissions a plain open() would give the file.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except BaseException as err:
            with _lock:
                _writing.discard(tmp)
            if isinstance(err, FileExistsError):
                continue
            raise
        break
    try:
        with (os.fdopen(fd, "wb") if mode == "wb" else os.fdopen(fd, "w", encoding=encoding or "utf-8")) as f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        with _lock:
            _writing.discard(tmp)
    if durable:
        _fsync_dir(directory)


def write_atomic(path, data, durable=False):
    """Write `data` (bytes, or str written as UTF-8) to `path` atomically; see `atomic_open`."""
    with atomic_open(path, "w" if isinstance(data, str) else "wb", durable=durable) as f:
        f.write(data)
