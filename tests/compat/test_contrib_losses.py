"""tf.contrib.losses.metric_learning.triplet_semihard_loss (npurun.tf1.contrib.metric_learning) against its
definition enumerated in NumPy, and the module as the scripts reach it under `npurun run` (one subprocess):
MASF_ID1191's `tf.contrib.losses.metric_learning.triplet_semihard_loss(labels=..., embeddings=..., margin=...)`
and Revisiting_self_supervised_ID0935's exemplar loss over l2-normalised logits, the rest of tf.contrib.losses
a clear error."""
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from npurun.tf1.contrib import metric_learning
from npurun.tools.check import check_source

from .conftest import run_compat


def _numpy_semihard(labels, embeddings, margin):
    """TF 1.15's documented loss, one (anchor, positive) pair at a time, in float64."""
    embeddings = embeddings.astype(np.float64)
    distance = ((embeddings[:, None, :] - embeddings[None, :, :]) ** 2).sum(-1)
    losses = []
    for a in range(len(labels)):
        negatives = [n for n in range(len(labels)) if labels[n] != labels[a]]
        for p in range(len(labels)):
            if p == a or labels[p] != labels[a]:
                continue
            semi_hard = [distance[a, n] for n in negatives if distance[a, n] > distance[a, p]]
            negative = min(semi_hard) if semi_hard else max((distance[a, n] for n in negatives), default=0.0)
            losses.append(max(margin + distance[a, p] - negative, 0.0))
    return np.mean(losses)


@pytest.mark.parametrize("seed, margin", [(0, 1.0), (1, 0.2), (2, 3.0)])
def test_triplet_semihard_loss_matches_the_definition(seed, margin):
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 3, size=9)
    embeddings = rng.randn(9, 4).astype(np.float32)
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True) * (1 + seed)
    got = metric_learning.triplet_semihard_loss(labels, embeddings, margin=margin).numpy()
    np.testing.assert_allclose(got, _numpy_semihard(labels, embeddings, margin), rtol=1e-5, atol=1e-6)


def test_no_semihard_negative_takes_the_farthest_and_the_gradient_is_finite():
    # anchor 0 and its positive 1 are farther apart than every negative of 0: the farthest negative is used
    labels = np.array([0, 0, 1, 1])
    embeddings = np.array([[0, 0], [3, 0], [1, 0], [0, 1.5]], np.float32)
    expected = _numpy_semihard(labels, embeddings, 1.0)
    variable = tf.Variable(embeddings)
    with tf.GradientTape() as tape:
        loss = metric_learning.triplet_semihard_loss(labels, variable, margin=1.0)
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-6)
    gradient = tape.gradient(loss, variable).numpy()
    assert np.isfinite(gradient).all() and np.abs(gradient).sum() > 0


SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    from tensorflow.contrib.losses import metric_learning

    def repeat(x, n):  # Revisiting_self_supervised's utils.repeat: each element n times
        return tf.reshape(tf.tile(tf.expand_dims(x, 1), [1, n]), [-1])

    rng = np.random.RandomState(0)
    images = rng.randn(12, 8).astype(np.float32)
    label_group = tf.placeholder(tf.int32, shape=(12,))  # MASF's meta_sample_num labels
    logits = tf.layers.dense(tf.constant(images), 4)
    embeddings = tf.nn.l2_normalize(logits, axis=1)
    masf = tf.contrib.losses.metric_learning.triplet_semihard_loss(labels=label_group, embeddings=embeddings,
                                                                   margin=0.5)
    labels = repeat(tf.range(4), 3)
    exemplar = metric_learning.triplet_semihard_loss(labels, tf.nn.l2_normalize(logits, axis=0), margin=0.5)
    train = tf.train.AdamOptimizer(0.05).minimize(masf)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {label_group: np.repeat(np.arange(4), 3)}
        first = sess.run(masf, feed)
        for _ in range(40):
            sess.run(train, feed)
        print("masf falls", sess.run(masf, feed) < first, "exemplar", np.isfinite(sess.run(exemplar)))
    print("same function", metric_learning.triplet_semihard_loss is
          tf.contrib.losses.metric_learning.triplet_semihard_loss)
    for use in (lambda: tf.contrib.losses.sigmoid_cross_entropy(logits, tf.ones_like(logits)),
                lambda: tf.contrib.losses.metric_learning.contrastive_loss(labels, logits, logits)):
        try:
            use()
        except Exception as error:
            print(type(error).__name__, str(error).split(":")[0])
    """)


def test_scripts_train_with_the_triplet_loss_and_the_rest_of_contrib_losses_raises(tmp_path):
    (tmp_path / "masf.py").write_text(SCRIPT)
    done = run_compat("run", tmp_path / "masf.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "masf falls True exemplar True" in out and "same function True" in out, out
    assert "AdapterAPIError tf.contrib.losses.sigmoid_cross_entropy is not supported by npurun" in out, out
    assert "AdapterAPIError tf.contrib.losses.metric_learning.contrastive_loss is not supported by npurun" in out


def test_check_reads_the_nested_module():
    findings = {f.name: f for f in check_source(SCRIPT, "masf.py")}
    provided = findings["tensorflow.contrib.losses.metric_learning.triplet_semihard_loss"]
    assert not provided.error and "npurun.tf1.contrib.metric_learning" in provided.detail, provided
    refused = findings["tensorflow.contrib.losses.metric_learning.contrastive_loss"]
    assert refused.error and "ModelZoo does not use" in refused.detail, refused
    assert findings["tensorflow.contrib.losses.sigmoid_cross_entropy"].error
