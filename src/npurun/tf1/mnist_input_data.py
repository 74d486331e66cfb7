"""`tensorflow.examples.tutorials.mnist.input_data` (TensorFlow 1's MNIST reader) for scripts under `npurun run`.

`read_data_sets(train_dir, one_hot=False, dtype=float32, reshape=True, validation_size=5000, seed=None)`
reads the four standard MNIST files (IDX format, gzip-compressed or not) from `train_dir` and returns
`Datasets(train, validation, test)` whose `DataSet`s have `images` ([n, 784], or [n, 28, 28, 1] with
`reshape=False`), `labels`, `num_examples` and
`next_batch(batch_size, shuffle=True)`, as TensorFlow 1 did. Nothing is downloaded: missing files raise
FileNotFoundError naming them.
"""
from __future__ import annotations

import collections
import gzip
import os

import numpy as np

FILES = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
         "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}
IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def _open(path):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _read_idx(path, magic_expected):
    with _open(path) as stream:
        data = stream.read()
    magic = int.from_bytes(data[:4], "big")
    if magic != magic_expected:
        raise ValueError(f"{path}: not an MNIST {'image' if magic_expected == IMAGES_MAGIC else 'label'} file "
                         f"(magic number {magic}, expected {magic_expected})")
    dims = data[3] if magic_expected == IMAGES_MAGIC else 1
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    array = np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)
    # TensorFlow 1 read images as [n, rows, cols, 1]: with reshape=False scripts feed them to NHWC placeholders
    return array[..., np.newaxis] if array.ndim == 3 else array


def _find(train_dir, base):
    for name in (base + ".gz", base):
        if os.path.isfile(os.path.join(train_dir, name)):
            return os.path.join(train_dir, name)
    return None


class DataSet:
    """One split: images (float32 in [0, 1] and flattened to 784 by default), labels (ints or one-hot)."""

    def __init__(self, images, labels, dtype=np.float32, reshape=True, seed=None):
        dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))
        if dtype not in (np.uint8, np.float32):
            raise TypeError(f"Invalid image dtype {dtype!r}, expected uint8 or float32")
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"images.shape: {images.shape} labels.shape: {labels.shape}")
        if reshape:
            images = images.reshape(images.shape[0], -1)
        if dtype == np.float32:
            images = images.astype(np.float32) / 255.0
        self._images, self._labels = images, labels
        self._num_examples = images.shape[0]
        self._epochs_completed = 0
        self._index_in_epoch = 0
        self._rng = np.random.RandomState(seed)

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: self._num_examples)
    epochs_completed = property(lambda self: self._epochs_completed)

    def _shuffle(self):
        order = self._rng.permutation(self._num_examples)
        self._images, self._labels = self._images[order], self._labels[order]

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """The next `batch_size` examples; an epoch's end is completed from the (reshuffled) next epoch."""
        if fake_data:
            raise ValueError("next_batch(fake_data=True) is not supported by npurun; write the files instead")
        if self._epochs_completed == 0 and self._index_in_epoch == 0 and shuffle:
            self._shuffle()
        start = self._index_in_epoch
        if start + batch_size <= self._num_examples:
            self._index_in_epoch += batch_size
            return self._images[start:self._index_in_epoch], self._labels[start:self._index_in_epoch]
        self._epochs_completed += 1
        rest_images, rest_labels = self._images[start:], self._labels[start:]
        if shuffle:
            self._shuffle()
        self._index_in_epoch = batch_size - len(rest_images)
        return (np.concatenate([rest_images, self._images[:self._index_in_epoch]]),
                np.concatenate([rest_labels, self._labels[:self._index_in_epoch]]))


def dense_to_one_hot(labels_dense, num_classes=10):
    one_hot = np.zeros((labels_dense.shape[0], num_classes), np.float32)
    one_hot[np.arange(labels_dense.shape[0]), labels_dense.astype(np.int64)] = 1.0
    return one_hot


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=np.float32, reshape=True,
                   validation_size=5000, seed=None, source_url=None):
    """The MNIST splits from the files in `train_dir` (see the module docstring); nothing is downloaded."""
    if fake_data:
        raise ValueError("read_data_sets(fake_data=True) is not supported by npurun; write the MNIST files instead")
    paths = {key: _find(train_dir, base) for key, base in FILES.items()}
    missing = [FILES[key] + "[.gz]" for key, path in paths.items() if path is None]
    if missing:
        raise FileNotFoundError(f"input_data.read_data_sets({train_dir!r}): missing MNIST file(s) "
                                f"{', '.join(missing)}; npurun does not download them: put the standard "
                                f"MNIST files in that directory")
    train_images = _read_idx(paths["train_images"], IMAGES_MAGIC)
    train_labels = _read_idx(paths["train_labels"], LABELS_MAGIC)
    test_images = _read_idx(paths["test_images"], IMAGES_MAGIC)
    test_labels = _read_idx(paths["test_labels"], LABELS_MAGIC)
    if one_hot:
        train_labels, test_labels = dense_to_one_hot(train_labels), dense_to_one_hot(test_labels)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError(f"validation_size should be between 0 and {len(train_images)}; got {validation_size}")
    options = dict(dtype=dtype, reshape=reshape, seed=seed)
    return Datasets(train=DataSet(train_images[validation_size:], train_labels[validation_size:], **options),
                    validation=DataSet(train_images[:validation_size], train_labels[:validation_size], **options),
                    test=DataSet(test_images, test_labels, **options))


def write_idx(path, array):
    """Write `array` (uint8: images [n, rows, cols] or labels [n]) as an MNIST IDX file (gzip if `.gz`)."""
    array = np.asarray(array, np.uint8)
    magic = IMAGES_MAGIC if array.ndim == 3 else LABELS_MAGIC
    header = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with (gzip.open(path, "wb") if str(path).endswith(".gz") else open(path, "wb")) as stream:
        stream.write(header + array.tobytes())
