"""tf.estimator's `head_utils.binary_or_multi_class_head`: the head a premade classifier uses."""
from __future__ import annotations

from .base import SUM_OVER_BATCH_SIZE
from .classification import BinaryClassHead, MultiClassHead


def binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction=SUM_OVER_BATCH_SIZE):
    """BinaryClassHead for 2 classes, MultiClassHead for more (tf.estimator's choice)."""
    if n_classes == 2:
        return BinaryClassHead(weight_column=weight_column, label_vocabulary=label_vocabulary,
                               loss_reduction=loss_reduction)
    return MultiClassHead(n_classes, weight_column=weight_column, label_vocabulary=label_vocabulary,
                          loss_reduction=loss_reduction)
