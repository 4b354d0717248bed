"""`mx.io.LibSVMIter`: MXNet 1.x's iterator over LibSVM text files, giving csr data batches.

A line is ``label[:weight] [qid:N] index:value ...`` with zero-based, strictly ascending column indices below
``data_shape[0]``; ``#`` starts a comment, blank lines are skipped. Without ``label_libsvm`` the labels are each
line's first number (a dense ``(batch_size,)`` array); with it, the label rows are the csr rows of that file (its
own first numbers are ignored). MXNet reads malformed lines as garbage or crashes; here they are an MXNetError
naming ``file:line``.

Batching is MXNet's sparse batch loader (round_batch only): the last batch of an epoch is completed with the first
rows of the file, ``pad`` says how many, and after ``reset()`` the next epoch starts after them. ``num_parts`` /
``part_index`` split the bytes of the input as dmlc's line splitter does (each part starts after a line break), so
parts are not of equal row counts. A batch's ``index`` holds the rows' positions in the part.
"""
import os
import re

import numpy as np

from .base import MXNetError, dtype_np
from .context import cpu
from .io_base import DataDesc
from .io_native import NativeIter, _check_knobs
from .ndarray._storage import csr
from .ndarray.ndarray import array

__all__ = ["LibSVMIter"]

_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INDEX = re.compile(rb"\d+")
_LINE_BREAKS = b"\r\n"


def _input_files(path):
    """The files behind `path`: the file itself, or a directory's regular files in name order."""
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
    elif os.path.isfile(path):
        files = [path]
    else:
        raise MXNetError(f"LibSVMIter: {path!r} is neither a file nor a directory")
    sizes = [os.path.getsize(f) for f in files]
    if sum(sizes) == 0:
        raise MXNetError(f"LibSVMIter: {path!r} holds no data")
    return files, sizes


def _after_line_break(text, pos):
    """Where the line after the one holding byte `pos` starts (dmlc's LineSplitter::SeekRecordBegin)."""
    breaks = [i for i in (text.find(b"\n", pos), text.find(b"\r", pos)) if i >= 0]
    if not breaks:
        return len(text)
    pos = min(breaks) + 1
    while pos < len(text) and text[pos] in _LINE_BREAKS:
        pos += 1
    return pos


def _read_part(path, part_index, num_parts):
    """[(file, number of its first line, bytes)] of part `part_index` of `num_parts` of the input's bytes."""
    files, sizes = _input_files(path)
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    total = starts[-1]
    step = -(-total // num_parts)
    bounds = [min(step * part_index, total), min(step * (part_index + 1), total)]
    texts = {}

    def text_of(i):
        if i not in texts:
            with open(files[i], "rb") as f:
                texts[i] = f.read(sizes[i])
        return texts[i]

    for k, offset in enumerate(bounds):  # a boundary inside a file moves to the next line start of that file
        i = int(np.searchsorted(starts, offset, side="right")) - 1
        if i < len(files) and offset != starts[i]:
            bounds[k] = starts[i] + _after_line_break(text_of(i), offset - starts[i])
    begin, end = bounds
    chunks = []
    for i in range(len(files)):
        lo, hi = max(begin, starts[i]) - starts[i], min(end, starts[i + 1]) - starts[i]
        if lo < hi:
            text = text_of(i)
            chunks.append((files[i], len(text[:lo].splitlines()) + 1, text[lo:hi]))
    return chunks


class _Rows:
    """The rows of LibSVM text as csr arrays (float32 values, int64 indices and indptr) and float32 labels."""

    def __init__(self, chunks, width):
        labels, values, indices, indptr = [], [], [], [0]
        for path, first_line, text in chunks:
            for n, line in enumerate(text.splitlines(), first_line):
                tokens = line.split(b"#", 1)[0].split()
                if not tokens:
                    continue
                where = f"LibSVMIter: {path}:{n}"
                label = tokens[0].split(b":")
                if len(label) > 2 or not all(_NUMBER.fullmatch(t) for t in label):
                    raise MXNetError(f"{where}: expected label[:weight], got {tokens[0].decode(errors='replace')!r}")
                labels.append(float(label[0]))
                features = tokens[1:]
                if features and features[0].startswith(b"qid:") and _INDEX.fullmatch(features[0][4:]):
                    features = features[1:]
                last = -1
                for token in features:
                    index, sep, value = token.partition(b":")
                    if not sep or not _INDEX.fullmatch(index) or not _NUMBER.fullmatch(value):
                        raise MXNetError(f"{where}: expected index:value with a non-negative integer index, got "
                                         f"{token.decode(errors='replace')!r}")
                    digits = index.lstrip(b"0") or b"0"  # int() of a very long digit string is refused or slow
                    column = int(digits) if len(digits) <= 20 else width
                    if column >= width:
                        raise MXNetError(f"{where}: column index {index.decode()} is out of range for shape "
                                         f"({width},)")
                    if column <= last:
                        raise MXNetError(f"{where}: column indices must be strictly ascending, got {column} after "
                                         f"{last}")
                    last = column
                    indices.append(column)
                    values.append(float(value))
                indptr.append(len(indices))
        self.labels = np.asarray(labels, dtype=np.float32)
        self.values = np.asarray(values, dtype=np.float32)
        self.indices = np.asarray(indices, dtype=np.int64)
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.width = width

    def __len__(self):
        return len(self.labels)

    def csr(self, rows):
        """The csr array of `rows` (positions), in that order."""
        starts, stops = self.indptr[rows], self.indptr[rows + 1]
        take = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)]).astype(np.int64)
        indptr = np.concatenate([[0], np.cumsum(stops - starts)])
        try:  # mixnet's csr arrays keep a dense buffer of the whole batch
            return csr(self.values[take], self.indices[take], indptr, (len(rows), self.width), cpu(), np.float32)
        except MemoryError:
            raise MXNetError(f"LibSVMIter: out of memory for a batch of shape ({len(rows)}, {self.width}) (csr "
                             "arrays are held dense in mixnet)") from None


def _one_dim(shape, what):
    shape = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    if len(shape) != 1 or shape[0] <= 0:
        raise MXNetError(f"LibSVMIter: {what} must be a positive 1-D shape, got {shape}")
    return shape


class LibSVMIter(NativeIter):
    """Batches of a LibSVM file as csr data (batch_size, data_shape[0]) and labels: dense (batch_size,) from the
    data file, or csr (batch_size, label_shape[0]) from label_libsvm."""

    def __init__(self, data_libsvm, data_shape, label_libsvm=None, label_shape=(1,), batch_size=1,
                 round_batch=True, num_parts=1, part_index=0, dtype=None, **kwargs):
        _check_knobs("LibSVMIter", kwargs)
        super().__init__(batch_size)
        if batch_size <= 0:
            raise MXNetError(f"LibSVMIter: batch_size must be positive, got {batch_size}")
        if not round_batch:
            raise MXNetError("LibSVMIter: round_batch=False is not supported (MXNet's sparse batch loader requires "
                             "round_batch)")
        if dtype is not None and dtype_np(dtype) != np.float32:
            raise MXNetError(f"LibSVMIter: dtype must be float32, got {dtype}")
        if num_parts <= 0 or not 0 <= part_index < num_parts:
            raise MXNetError(f"LibSVMIter: part_index {part_index} is not in [0, num_parts={num_parts})")
        data_shape = _one_dim(data_shape, "data_shape")
        label_shape = _one_dim(label_shape, "label_shape")
        if label_libsvm in (None, "NULL"):
            label_libsvm = None
            if label_shape != (1,):
                raise MXNetError(f"LibSVMIter: label_shape must be (1,) without label_libsvm, got {label_shape}")
        elif label_shape == (1,):
            raise MXNetError("LibSVMIter: label_shape must not be (1,) with label_libsvm (labels are csr rows)")
        self._data = _Rows(_read_part(data_libsvm, part_index, num_parts), data_shape[0])
        self._label = None
        if label_libsvm is not None:
            self._label = _Rows(_read_part(label_libsvm, part_index, num_parts), label_shape[0])
            if len(self._label) < len(self._data):
                raise MXNetError(f"LibSVMIter: {label_libsvm!r} has {len(self._label)} rows, fewer than the "
                                 f"{len(self._data)} of {data_libsvm!r}")
        self.provide_data = [DataDesc("data", (batch_size,) + data_shape, np.float32)]
        label_batch = (batch_size,) if self._label is None else (batch_size,) + label_shape
        self.provide_label = [DataDesc("softmax_label", label_batch, np.float32)]
        self._pos = 0         # the next row to read
        self._wrapped = 0     # rows of the next epoch the last batch already took (round_batch)
        self._rows = None
        self._pad = 0

    def reset(self):
        # after a wrapped last batch the next epoch goes on after the rows it borrowed, as MXNet's BatchLoader
        if not self._wrapped:
            self._pos = 0
        self._wrapped = 0
        self._rows = None

    def iter_next(self):
        n, bs = len(self._data), self.batch_size
        if self._wrapped or self._pos >= n:
            return False
        rows = np.arange(self._pos, min(self._pos + bs, n))
        self._pad = bs - len(rows)
        if self._pad > n:
            raise MXNetError(f"LibSVMIter: batch_size {bs} needs more rows than the {n} of the input (the last "
                             f"batch is completed with rows from the start once)")
        self._rows = np.concatenate([rows, np.arange(self._pad)]).astype(np.int64)
        self._pos = self._pad if self._pad else self._pos + bs
        self._wrapped = self._pad
        return True

    def _current(self):
        if self._rows is None:
            raise MXNetError("LibSVMIter: call iter_next() (or next()) before reading a batch")
        return self._rows

    # one NDArray each, not a list, as MXNet's C++-backed iterators return
    def getdata(self):
        return self._data.csr(self._current())

    def getlabel(self):
        rows = self._current()
        if self._label is not None:
            return self._label.csr(rows)
        return array(self._data.labels[rows], ctx=cpu(), dtype=np.float32)

    def getindex(self):
        return None if self._rows is None else self._rows.astype(np.uint64)

    def getpad(self):
        return self._pad
