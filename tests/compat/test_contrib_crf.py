"""tf.contrib.crf (npurun.tf1.contrib.crf) against its definition: every tag sequence enumerated."""
import itertools

import numpy as np
import tensorflow as tf

from npurun.tf1.contrib import crf

RNG = np.random.RandomState(7)
BATCH, MAX_LEN, TAGS = 3, 4, 3
INPUTS = RNG.randn(BATCH, MAX_LEN, TAGS).astype(np.float32)
TRANSITIONS = RNG.randn(TAGS, TAGS).astype(np.float32)
LENGTHS = np.array([4, 2, 1], np.int32)
TAG_INDICES = RNG.randint(0, TAGS, size=(BATCH, MAX_LEN)).astype(np.int32)


def _score(b, tags):
    return (sum(INPUTS[b, t, tag] for t, tag in enumerate(tags))
            + sum(TRANSITIONS[tags[t], tags[t + 1]] for t in range(len(tags) - 1)))


def _all_scores(b):
    return {tags: _score(b, tags) for tags in itertools.product(range(TAGS), repeat=int(LENGTHS[b]))}


def test_sequence_score_log_norm_and_likelihood_match_enumeration():
    score = crf.crf_sequence_score(INPUTS, TAG_INDICES, LENGTHS, TRANSITIONS).numpy()
    log_norm = crf.crf_log_norm(INPUTS, LENGTHS, TRANSITIONS).numpy()
    likelihood, _ = crf.crf_log_likelihood(INPUTS, TAG_INDICES, LENGTHS, tf.constant(TRANSITIONS))
    for b in range(BATCH):
        expected_score = _score(b, tuple(TAG_INDICES[b, :LENGTHS[b]]))
        expected_norm = np.log(np.sum(np.exp(list(_all_scores(b).values()))))
        np.testing.assert_allclose(score[b], expected_score, rtol=1e-5)
        np.testing.assert_allclose(log_norm[b], expected_norm, rtol=1e-5)
        np.testing.assert_allclose(likelihood.numpy()[b], expected_score - expected_norm, rtol=1e-4, atol=1e-5)
    unary = crf.crf_unary_score(TAG_INDICES, LENGTHS, INPUTS).numpy()
    binary = crf.crf_binary_score(TAG_INDICES, LENGTHS, TRANSITIONS).numpy()
    np.testing.assert_allclose(unary + binary, score, rtol=1e-5)


def test_decoding_finds_the_best_sequence_of_the_enumeration():
    tags, best = crf.crf_decode(INPUTS, TRANSITIONS, LENGTHS)
    for b in range(BATCH):
        scores = _all_scores(b)
        winner = max(scores, key=scores.get)
        length = int(LENGTHS[b])
        assert tuple(tags.numpy()[b, :length]) == winner
        assert not tags.numpy()[b, length:].any()  # past the length: 0
        np.testing.assert_allclose(best.numpy()[b], scores[winner], rtol=1e-5)
        sequence, value = crf.viterbi_decode(INPUTS[b, :length], TRANSITIONS)
        assert tuple(sequence) == winner
        np.testing.assert_allclose(value, scores[winner], rtol=1e-5)


def test_the_forward_cell_steps_the_log_norm_recursion():
    cell = crf.CrfForwardRnnCell(tf.constant(TRANSITIONS))
    state = tf.constant(INPUTS[:, 0])
    for t in range(1, MAX_LEN):
        _, state = cell(tf.constant(INPUTS[:, t]), state)
    full = LENGTHS == MAX_LEN
    np.testing.assert_allclose(tf.reduce_logsumexp(state, axis=1).numpy()[full],
                               crf.crf_log_norm(INPUTS, LENGTHS, TRANSITIONS).numpy()[full], rtol=1e-5)


def test_log_likelihood_creates_transitions_and_trains_in_a_tf1_graph():
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf.compat.v1.get_variable("unary", initializer=tf.constant(INPUTS))
        likelihood, transitions = crf.crf_log_likelihood(inputs, TAG_INDICES, LENGTHS)
        loss = tf.reduce_mean(-likelihood)
        train = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    assert transitions.name == "transitions:0" and transitions.shape == (TAGS, TAGS)
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(init)
        first = sess.run(loss)
        for _ in range(20):
            sess.run(train)
        assert sess.run(loss) < 0.5 * first
