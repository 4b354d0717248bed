"""Datasets of encoded images: `ImageRecordDataset` (a RecordIO file of packed images) and `ImageFolderDataset`
(one sub-folder per class). Images are decoded with `mx.image.imdecode` (Pillow; see mixnet/image/image.py)."""
import os

from ...._source import warn
from .... import image, recordio
from ..dataset import Dataset, RecordFileDataset

__all__ = ["ImageRecordDataset", "ImageFolderDataset"]


class ImageRecordDataset(RecordFileDataset):
    """(image, label) pairs from a RecordIO file made with `recordio.pack` / im2rec. flag: 1 RGB, 0 gray;
    transform(data, label) is applied to each pair when given."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        header, img = recordio.unpack(super().__getitem__(idx))
        data = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(data, header.label)
        return data, header.label


class ImageFolderDataset(Dataset):
    """(image, label) pairs from root/<class name>/<image file>: classes are the sorted sub-folder names
    (`synsets`), labels their indices; `items` lists (filename, label). Files other than .jpg/.jpeg/.png are
    skipped with a warning."""

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root):
        self.synsets = []
        self.items = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warn(f"Ignoring {path}, which is not a directory.")
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warn(f"Ignoring {filename} of type {ext}. Only support {', '.join(self._exts)}")
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        img = image.imread(self.items[idx][0], self._flag)
        label = self.items[idx][1]
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)
