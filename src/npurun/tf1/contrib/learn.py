"""The pieces of `tf.contrib.learn` that ModelZoo scripts still use (34 folders), written here.

- `ModeKeys` (TRAIN / EVAL / INFER = "train" / "eval" / "infer"): model_fn branches of GNMT/NMT-style
  scripts (122 uses); INFER is what `tf.estimator.ModeKeys.PREDICT` became.
- `preprocessing.VocabularyProcessor` / `CategoricalVocabulary`: the text-to-id mapper of Siamese and
  TextCNN-style scripts (fit, transform, fit_transform, reverse, save / restore by pickle). Pure Python,
  as in TensorFlow 1; id 0 is the unknown token and padding.
- `datasets.mnist`: TensorFlow 1's MNIST reader (`npurun.tf1.mnist_input_data`).

The Estimator / Experiment / monitors part of contrib.learn has no counterpart here.
"""
from __future__ import annotations

import collections
import itertools
import pickle
import re
import types

import numpy as np

from .. import mnist_input_data


class ModeKeys:
    TRAIN = "train"
    EVAL = "eval"
    INFER = "infer"


TRAIN, EVAL, INFER = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.INFER

datasets = types.SimpleNamespace(mnist=mnist_input_data)

# The default tokenizer's rule: runs of capitals, capitalised words before another capital, word characters.
TOKENIZER_RE = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z][a-z]+(?=[A-Z])|[\w\-]+", re.UNICODE)


def tokenizer(iterator):
    """Splits each document into words."""
    for value in iterator:
        yield TOKENIZER_RE.findall(value)


class CategoricalVocabulary:
    """Category -> id; id 0 is `unknown_token`. New categories get the next id until `freeze()`."""

    def __init__(self, unknown_token="<UNK>", support_reverse=True):
        self._unknown_token = unknown_token
        self._mapping = {unknown_token: 0}
        self._support_reverse = support_reverse
        self._reverse_mapping = [unknown_token] if support_reverse else None
        self._freq = collections.defaultdict(int)
        self._freeze = False

    def __len__(self):
        return len(self._mapping)

    def freeze(self, freeze=True):
        self._freeze = freeze

    def get(self, category):
        """The id of `category`, adding it unless frozen (frozen: unknown categories are 0)."""
        if category not in self._mapping:
            if self._freeze:
                return 0
            self._mapping[category] = len(self._mapping)
            if self._support_reverse:
                self._reverse_mapping.append(category)
        return self._mapping[category]

    def add(self, category, count=1):
        if self.get(category) > 0:
            self._freq[category] += count

    def trim(self, min_frequency, max_frequency=-1):
        """Keep categories seen more than `min_frequency` times (and fewer than `max_frequency`, if > 0),
        renumbered by falling frequency, ties in sorted order."""
        ranked = sorted(sorted(self._freq.items(), key=lambda item: (isinstance(item[0], str), item[0])),
                        key=lambda item: item[1], reverse=True)
        self._mapping = {self._unknown_token: 0}
        if self._support_reverse:
            self._reverse_mapping = [self._unknown_token]
        kept = []
        for category, count in ranked:
            if 0 < max_frequency <= count:
                continue
            if count <= min_frequency:
                break
            self._mapping[category] = len(self._mapping)
            if self._support_reverse:
                self._reverse_mapping.append(category)
            kept.append((category, count))
        self._freq = dict(kept)

    def reverse(self, class_id):
        if not self._support_reverse:
            raise ValueError("This vocabulary wasn't initialized with support_reverse to support reverse() function.")
        return self._reverse_mapping[class_id]


class VocabularyProcessor:
    """Documents -> fixed-length arrays of word ids (0 pads and stands for unknown words)."""

    def __init__(self, max_document_length, min_frequency=0, vocabulary=None, tokenizer_fn=None):
        self.max_document_length = max_document_length
        self.min_frequency = min_frequency
        self.vocabulary_ = vocabulary if vocabulary is not None else CategoricalVocabulary()
        self._tokenizer = tokenizer_fn or tokenizer

    def fit(self, raw_documents, unused_y=None):
        for tokens in self._tokenizer(raw_documents):
            for token in tokens:
                self.vocabulary_.add(token)
        if self.min_frequency > 0:
            self.vocabulary_.trim(self.min_frequency)
        self.vocabulary_.freeze()
        return self

    def fit_transform(self, raw_documents, unused_y=None):
        documents = list(raw_documents)  # read twice: once to fit, once to transform
        self.fit(documents)
        return self.transform(documents)

    def transform(self, raw_documents):
        for tokens in self._tokenizer(raw_documents):
            word_ids = np.zeros(self.max_document_length, np.int64)
            for index, token in enumerate(itertools.islice(tokens, self.max_document_length)):
                word_ids[index] = self.vocabulary_.get(token)
            yield word_ids

    def reverse(self, documents):
        for item in documents:
            yield " ".join(self.vocabulary_.reverse(class_id) for class_id in item)

    def save(self, filename):
        with open(filename, "wb") as stream:
            stream.write(pickle.dumps(self))

    @classmethod
    def restore(cls, filename):
        with open(filename, "rb") as stream:
            return pickle.loads(stream.read())


preprocessing = types.SimpleNamespace(VocabularyProcessor=VocabularyProcessor,
                                      CategoricalVocabulary=CategoricalVocabulary, tokenizer=tokenizer)
