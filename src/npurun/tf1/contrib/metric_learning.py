"""`tf.contrib.losses.metric_learning.triplet_semihard_loss` of TensorFlow 1.15 (MASF_ID1191, Revisiting_self_supervised).

`triplet_semihard_loss(labels, embeddings, margin=1.0)`, FaceNet's semi-hard triplet loss over a batch: `labels`
are the [batch] integer classes, `embeddings` the [batch, dim] float vectors (normally l2-normalised), and with
`d` the squared Euclidean distances between them, for every anchor `a` and positive `p` (same label, `p != a`)
the negative is the closest `n` (other label) with `d[a, n] > d[a, p]` (semi-hard), or, when there is none,
the farthest negative of `a` (0 when `a` has no negative). The loss is the mean over those (anchor,
positive) pairs of `max(margin + d[a, p] - d[a, n], 0)` (NaN when the batch has no pair, as in TF 1.15).
"""
from __future__ import annotations


def _pairwise_squared_distance(embeddings):
    """[batch, batch] squared Euclidean distances: clipped at 0 (rounding), exactly 0 on the diagonal."""
    import tensorflow as tf

    norms = tf.reduce_sum(tf.square(embeddings), axis=1, keepdims=True)
    squared = norms + tf.transpose(norms) - 2.0 * tf.matmul(embeddings, embeddings, transpose_b=True)
    squared = tf.maximum(squared, 0.0)
    off_diagonal = 1.0 - tf.eye(tf.shape(embeddings)[0], dtype=squared.dtype)
    return squared * off_diagonal


def triplet_semihard_loss(labels, embeddings, margin=1.0):
    import tensorflow as tf

    embeddings = tf.convert_to_tensor(embeddings)
    labels = tf.reshape(tf.convert_to_tensor(labels), [-1, 1])
    distance = _pairwise_squared_distance(embeddings)
    same = tf.equal(labels, tf.transpose(labels))  # [anchor, other]
    different = tf.logical_not(same)
    # [anchor, positive, negative]: the negatives of the anchor farther than that positive
    farther = tf.logical_and(different[:, None, :], distance[:, None, :] > distance[:, :, None])
    row_max = tf.reduce_max(distance, axis=1, keepdims=True)[:, :, None]
    closest_farther = tf.reduce_min(tf.where(farther, tf.broadcast_to(distance[:, None, :], tf.shape(farther)),
                                             tf.broadcast_to(row_max, tf.shape(farther))), axis=2)
    farthest = tf.reduce_max(tf.where(different, distance, tf.zeros_like(distance)), axis=1, keepdims=True)
    negative = tf.where(tf.reduce_any(farther, axis=2), closest_farther,
                        tf.broadcast_to(farthest, tf.shape(distance)))
    positives = tf.cast(same, distance.dtype) - tf.eye(tf.shape(distance)[0], dtype=distance.dtype)
    losses = tf.maximum((tf.cast(margin, distance.dtype) + distance - negative) * positives, 0.0)
    return tf.math.truediv(tf.reduce_sum(losses), tf.reduce_sum(positives), name="triplet_semihard_loss")
