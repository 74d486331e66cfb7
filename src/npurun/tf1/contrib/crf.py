"""`tf.contrib.crf`: a linear-chain conditional random field, for TF 1 scripts (BiLSTM-CRF taggers).

Written here: tensorflow-addons, which carried this module into TensorFlow 2, is no longer maintained
and does not support TensorFlow 2.21, and no maintained package offers it. The functions compute what
TensorFlow 1.15's `tf.contrib.crf` computed (same arguments, same shapes, same results; the test checks
them against enumerating every tag sequence):

- inputs: unary potentials `[batch, max_seq_len, num_tags]`; `tag_indices` `[batch, max_seq_len]` (int32);
  `sequence_lengths` `[batch]`; `transition_params` `[num_tags, num_tags]` (from tag i to tag j).
- a sequence's score is the sum of the unary potentials of its tags over its first `length` positions
  plus the transitions between consecutive tags; `crf_log_norm` is the log of the sum of exp(score) over
  every tag sequence; `crf_log_likelihood` is score - log_norm (and creates `transitions`, a variable
  of shape [num_tags, num_tags], when `transition_params` is None).
- a sequence of length 0 scores 0 and has log norm 0 (TF 1.15's behaviour).
- `crf_decode` / `viterbi_decode` give the highest scoring tag sequence (tensor / NumPy); positions past a
  sequence's length are 0 in `crf_decode`'s result.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf
from tf_keras.src.layers.rnn.legacy_cells import RNNCell  # TF 1's RNNCell (tf.nn.rnn_cell of a TF 1 script)

_v1 = tf.compat.v1


def _lengths(sequence_lengths, inputs):
    return tf.cast(sequence_lengths, tf.int32)


def _mask(sequence_lengths, max_len, dtype):
    return tf.sequence_mask(sequence_lengths, max_len, dtype=dtype)


def crf_unary_score(tag_indices, sequence_lengths, inputs):
    """Sum of the unary potentials of the tags, over each sequence's length: [batch]."""
    tag_indices = tf.cast(tag_indices, tf.int32)
    picked = tf.gather(inputs, tag_indices, batch_dims=2)  # [batch, max_len]
    mask = _mask(sequence_lengths, tf.shape(inputs)[1], inputs.dtype)
    return tf.reduce_sum(picked * mask, axis=1)


def crf_binary_score(tag_indices, sequence_lengths, transition_params):
    """Sum of the transitions between consecutive tags, over each sequence's length: [batch]."""
    tag_indices = tf.cast(tag_indices, tf.int32)
    start, end = tag_indices[:, :-1], tag_indices[:, 1:]
    pairs = tf.stack([start, end], axis=-1)
    scores = tf.gather_nd(transition_params, pairs)  # [batch, max_len - 1]
    # transition k (between positions k and k+1) counts when k + 1 < length
    mask = _mask(tf.cast(sequence_lengths, tf.int32) - 1, tf.shape(tag_indices)[1] - 1, transition_params.dtype)
    return tf.reduce_sum(scores * mask, axis=1)


def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
    """Unnormalised score of the tag sequences: [batch] (0 for a sequence of length 0)."""
    inputs = tf.convert_to_tensor(inputs)
    transition_params = tf.cast(tf.convert_to_tensor(transition_params), inputs.dtype)
    score = (crf_unary_score(tag_indices, sequence_lengths, inputs)
             + crf_binary_score(tag_indices, sequence_lengths, transition_params))
    return tf.where(tf.cast(sequence_lengths, tf.int32) > 0, score, tf.zeros_like(score))


def _forward(inputs, sequence_lengths, transition_params):
    """Log of the summed exp-scores of all sequences ending in each tag, at each sequence's last position."""
    lengths = tf.cast(sequence_lengths, tf.int32)
    first = inputs[:, 0, :]
    rest = tf.transpose(inputs[:, 1:, :], [1, 0, 2])  # [max_len - 1, batch, tags]
    steps = tf.range(1, tf.shape(inputs)[1])

    def step(alphas, elems):
        unary, position = elems
        new = tf.reduce_logsumexp(alphas[:, :, None] + transition_params[None, :, :], axis=1) + unary
        keep = (position < lengths)[:, None]
        return tf.where(keep, new, alphas)

    return tf.foldl(step, (rest, steps), initializer=first) if inputs.shape[1] != 1 else first


def crf_log_norm(inputs, sequence_lengths, transition_params):
    """Log partition function over all tag sequences: [batch] (0 for a sequence of length 0)."""
    inputs = tf.convert_to_tensor(inputs)
    transition_params = tf.cast(tf.convert_to_tensor(transition_params), inputs.dtype)
    alphas = _forward(inputs, sequence_lengths, transition_params)
    log_norm = tf.reduce_logsumexp(alphas, axis=1)
    return tf.where(tf.cast(sequence_lengths, tf.int32) > 0, log_norm, tf.zeros_like(log_norm))


def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
    """(log likelihood [batch], transition_params); creates the `transitions` variable when not given."""
    inputs = tf.convert_to_tensor(inputs)
    num_tags = inputs.shape[2]
    if transition_params is None:
        transition_params = _v1.get_variable("transitions", [num_tags, num_tags])
    score = crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params)
    return score - crf_log_norm(inputs, sequence_lengths, transition_params), transition_params


def crf_decode(potentials, transition_params, sequence_length):
    """(best tag sequences [batch, max_len] int32, their scores [batch]) by the Viterbi algorithm."""
    potentials = tf.convert_to_tensor(potentials)
    transition_params = tf.cast(tf.convert_to_tensor(transition_params), potentials.dtype)
    lengths = tf.cast(sequence_length, tf.int32)
    max_len = tf.shape(potentials)[1]
    rest = tf.transpose(potentials[:, 1:, :], [1, 0, 2])
    positions = tf.range(1, max_len)

    def step(carry, elems):
        scores, _ = carry
        unary, position = elems
        candidates = scores[:, :, None] + transition_params[None, :, :]  # [batch, from, to]
        best_from = tf.argmax(candidates, axis=1, output_type=tf.int32)
        new = tf.reduce_max(candidates, axis=1) + unary
        keep = (position < lengths)[:, None]
        # past the end the score stays and each tag points to itself
        identity = tf.broadcast_to(tf.range(tf.shape(scores)[1])[None, :], tf.shape(best_from))
        return tf.where(keep, new, scores), tf.where(keep, best_from, identity)

    first = potentials[:, 0, :]
    zeros = tf.zeros_like(first, dtype=tf.int32)
    scores_seq, backpointers = tf.scan(step, (rest, positions), initializer=(first, zeros))
    final = tf.cond(max_len > 1, lambda: scores_seq[-1], lambda: first)
    best_last = tf.argmax(final, axis=1, output_type=tf.int32)
    best_score = tf.reduce_max(final, axis=1)

    def back(tag, pointers):
        return tf.gather(pointers, tag, batch_dims=1)

    earlier = tf.scan(back, tf.reverse(backpointers, [0]), initializer=best_last)  # tags at max_len-2 .. 0
    tags = tf.concat([tf.reverse(earlier, [0]), best_last[None, :]], axis=0)
    tags = tf.transpose(tags, [1, 0])
    tags = tags * tf.cast(_mask(lengths, max_len, tf.int32), tf.int32)
    return tags, best_score


def viterbi_decode(score, transition_params):
    """NumPy: (best tag sequence as a list of ints, its score) for one [seq_len, num_tags] score."""
    score = np.asarray(score)
    transition_params = np.asarray(transition_params)
    trellis = np.zeros_like(score)
    backpointers = np.zeros_like(score, dtype=np.int32)
    trellis[0] = score[0]
    for t in range(1, score.shape[0]):
        candidates = trellis[t - 1][:, None] + transition_params
        trellis[t] = score[t] + np.max(candidates, axis=0)
        backpointers[t] = np.argmax(candidates, axis=0)
    best = [int(np.argmax(trellis[-1]))]
    for pointers in backpointers[1:][::-1]:
        best.append(int(pointers[best[-1]]))
    best.reverse()
    return best, float(np.max(trellis[-1]))


class _TransitionCell(RNNCell):
    """A cell over [batch, num_tags] scores with the transition matrix broadcast over the batch; state and
    output are one score (or tag) per tag."""

    def __init__(self, transition_params):
        super().__init__()
        self._transition_params = tf.expand_dims(transition_params, 0)
        self._num_tags = transition_params.shape[0]

    @property
    def state_size(self):
        return self._num_tags

    @property
    def output_size(self):
        return self._num_tags


class CrfForwardRnnCell(_TransitionCell):
    """An RNN cell computing the CRF forward recursion: state = log-sum-exp of scores per tag."""

    def __call__(self, inputs, state, scope=None):
        new = tf.reduce_logsumexp(tf.expand_dims(state, 2) + self._transition_params, axis=1) + inputs
        return new, new


class CrfDecodeForwardRnnCell(_TransitionCell):
    """An RNN cell computing the Viterbi forward step: outputs backpointers, state = best scores."""

    def __call__(self, inputs, state, scope=None):
        candidates = tf.expand_dims(state, 2) + self._transition_params
        return (tf.argmax(candidates, axis=1, output_type=tf.int32),
                tf.reduce_max(candidates, axis=1) + inputs)


class CrfDecodeBackwardRnnCell(RNNCell):
    """An RNN cell following backpointers: state = the tag chosen at the next position."""

    def __init__(self, num_tags):
        super().__init__()
        self._num_tags = num_tags

    @property
    def state_size(self):
        return 1

    @property
    def output_size(self):
        return 1

    def __call__(self, inputs, state, scope=None):
        state = tf.squeeze(state, axis=1)
        new = tf.gather(inputs, state, batch_dims=1)[:, None]
        return new, new


__all__ = ["crf_sequence_score", "crf_log_norm", "crf_log_likelihood", "crf_unary_score", "crf_binary_score",
           "crf_decode", "viterbi_decode", "CrfForwardRnnCell", "CrfDecodeForwardRnnCell",
           "CrfDecodeBackwardRnnCell"]
