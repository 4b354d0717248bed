"""gluon.contrib.data.text: the WikiText-2 and WikiText-103 language-model datasets (MXNet 1.x), read from local
files.

mixnet never downloads. `root` (default `$MXNET_HOME/datasets/wikitext-2` or `-103`, `~/.mxnet/...` when unset)
must hold the segment's tokens file (`wiki.train.tokens`, `wiki.valid.tokens`, `wiki.test.tokens`) or the
archive MXNet downloads (`wikitext-2-v1.zip` / `wikitext-103-v1.zip`), which is then unpacked into root as
MXNet does. A missing file raises MXNetError saying what to put where.

Samples are `(data, label)`: int32 NDArrays of `seq_len` token indices, the label being the data shifted by
one token; every line ends with the '<eos>' token. The vocabulary is built from the segment's text unless one
is given (pass the training set's `vocabulary` to the validation and test sets).
"""
import os
import shutil
import zipfile

import numpy as np

from ....base import MXNetError, data_dir
from ....contrib import text
from ...data.dataset import Dataset
from ....ndarray import array

__all__ = ["WikiText2", "WikiText103"]

EOS_TOKEN = "<eos>"


class _WikiText(Dataset):
    _name = None
    _archive = None
    _url = None
    _files = {"train": "wiki.train.tokens", "validation": "wiki.valid.tokens", "test": "wiki.test.tokens"}

    def __init__(self, root, segment, vocab, seq_len):
        if segment not in self._files:
            raise MXNetError(f"{self._name}: segment must be one of {list(self._files)}, got {segment!r}")
        self._root = os.path.expanduser(root)
        self._segment = segment
        self._seq_len = seq_len
        self._vocab = vocab
        self._counter = None
        self._get_data()

    @property
    def vocabulary(self):
        return self._vocab

    @property
    def frequencies(self):
        return self._counter

    def _path(self):
        path = os.path.join(self._root, self._files[self._segment])
        if os.path.isfile(path):
            return path
        archive = os.path.join(self._root, self._archive)
        if os.path.isfile(archive):
            self._unpack(archive)
            if os.path.isfile(path):
                return path
        raise MXNetError(f"{self._name}: missing {self._files[self._segment]!r} (or {self._archive!r}) in "
                         f"{self._root!r}. mixnet does not download data: put {self._archive} (from {self._url}) "
                         f"or its unpacked files there, or pass root=")

    def _unpack(self, archive):
        """Extracts the archive's files into root by base name (as MXNet does; no member path is followed)."""
        try:
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    name = os.path.basename(member)
                    if name:
                        with zf.open(member) as source, open(os.path.join(self._root, name), "wb") as target:
                            shutil.copyfileobj(source, target)
        except (OSError, zipfile.BadZipFile) as err:
            raise MXNetError(f"{self._name}: cannot unpack {archive!r}: {err}") from None

    def _get_data(self):
        path = self._path()
        with open(path, "r", encoding="utf8") as f:
            content = f.read()
        if self._counter is None:
            self._counter = text.utils.count_tokens_from_str(content)
        if self._vocab is None:
            self._vocab = text.vocab.Vocabulary(counter=self._counter, reserved_tokens=[EOS_TOKEN])
        tokens = [token for line in content.splitlines() for token in line.strip().split() + [EOS_TOKEN]
                  if line.strip()]
        indices = np.array(self._vocab.to_indices(tokens), dtype=np.int32)
        data, label = indices[:-1], indices[1:]
        # whole samples only (MXNet 1.9.1 drops the tail that does not fill one)
        usable = len(data) // self._seq_len * self._seq_len
        self._data = array(data[:usable].reshape(-1, self._seq_len), dtype=np.int32)
        self._label = array(label[:usable].reshape(-1, self._seq_len), dtype=np.int32)

    def __getitem__(self, idx):
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)


class WikiText2(_WikiText):
    """WikiText-2 (Salesforce research; CC BY-SA): segment 'train', 'validation' or 'test'; samples of
    `seq_len` tokens."""
    _name = "WikiText2"
    _archive = "wikitext-2-v1.zip"
    _url = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip"

    def __init__(self, root=os.path.join(data_dir(), "datasets", "wikitext-2"), segment="train", vocab=None,
                 seq_len=35):
        super().__init__(root, segment, vocab, seq_len)


class WikiText103(_WikiText):
    """WikiText-103 (Salesforce research; CC BY-SA): segment 'train', 'validation' or 'test'; samples of
    `seq_len` tokens."""
    _name = "WikiText103"
    _archive = "wikitext-103-v1.zip"
    _url = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip"

    def __init__(self, root=os.path.join(data_dir(), "datasets", "wikitext-103"), segment="train", vocab=None,
                 seq_len=35):
        super().__init__(root, segment, vocab, seq_len)
