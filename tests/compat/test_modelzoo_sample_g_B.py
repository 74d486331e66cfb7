"""Issue 23's third seed-2028 sample, part B: gaps its real scripts hit, each in the style of the script that hit it."""
import pytest

MIXUP_SCRIPT = '''\
import inspect

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *


# ASSEMBLED-CNN_ID0941's input pipeline: an AutoAugment-style policy asks each augmentation whether it takes
# `prob` (inspect.getargspec, inside a Dataset.map function), and mixup draws its weights from a Beta
def flip(image, prob):
    return tf.cond(tf.random_uniform([]) < prob, lambda: tf.image.flip_left_right(image), lambda: image)


def brightness(image, factor):
    return tf.clip_by_value(image * factor, 0., 255.)


def parse_policy_info(func, prob, level):
    if 'prob' in inspect.getargspec(func)[0]:
        return func, (prob,)
    return func, (level,)


def augment(image):
    for func, prob, level in ((flip, 0.5, 0.), (brightness, 0.3, 1.1)):
        chosen, args = parse_policy_info(func, prob, level)
        image = chosen(image, *args)
    return image


def mixup(x, y, alpha=0.2):
    dist = tf.contrib.distributions.Beta(alpha, alpha)
    batch_size = tf.shape(x)[0]
    lam = dist.sample([batch_size // 2])
    x1, x2 = tf.split(x, 2, axis=0)
    y1, y2 = tf.split(y, 2, axis=0)
    lam_x = tf.reshape(lam, [batch_size // 2, 1, 1, 1])
    lam_y = tf.reshape(lam, [batch_size // 2, 1])
    return lam_x * x1 + (1. - lam_x) * x2, lam_y * y1 + (1. - lam_y) * y2, lam


images = np.random.RandomState(0).uniform(0, 255, (4, 8, 8, 3)).astype(np.float32)
labels = np.eye(5, dtype=np.float32)[[0, 1, 2, 3]]
ds = tf.data.Dataset.from_tensor_slices((images, labels)).map(lambda x, y: (augment(x), y)).batch(4)
x, y = tf.data.make_one_shot_iterator(ds).get_next()
mixed_x, mixed_y, lam = mixup(x, y)
with tf.Session() as sess:
    mx, my, l = sess.run([mixed_x, mixed_y, lam])
print("mixup", mx.shape, my.shape, bool(np.all((l >= 0) & (l <= 1))), bool(np.allclose(my.sum(axis=1), 1.)))
try:
    inspect.getargspec(lambda a, *, b: a)
except ValueError as error:
    print("keyword-only refused")

# DeepMatchVO / SfMLearner style: mask reprojection errors above their 99th percentile per example; mixmatch style:
# a KL divergence between two Categoricals; ADAGAN style: a Normal's log density
err = tf.constant(np.arange(2 * 5 * 20, dtype=np.float32).reshape(2, 5, 20))
thresh = tf.contrib.distributions.percentile(err, q=99, axis=[1, 2])
median = tf.contrib.distributions.percentile(err[0], q=50)
low = tf.contrib.distributions.percentile(err, q=30, axis=[1, 2], interpolation='lower', keep_dims=True)
grad = tf.gradients(thresh, err)[0]
kl = tf.contrib.distributions.kl_divergence(tf.contrib.distributions.Categorical(logits=[[0., 1.]]),
                                            tf.contrib.distributions.Categorical(logits=[[1., 0.]]))
logp = tf.contrib.distributions.Normal(0., 2.).log_prob(0.)
with tf.Session() as sess:
    t, m, lo, g, k, lp = sess.run([thresh, median, low, grad, kl, logp])
print("percentile", t.tolist(), float(m), lo.shape, lo.ravel().tolist(), g.sum(axis=(1, 2)).tolist())
print("kl %.5f logp %.5f" % (k[0], lp))
'''


@pytest.fixture(scope="module")
def mixup_run(tmp_path_factory):
    from .conftest import run_compat

    folder = tmp_path_factory.mktemp("sample_g_b")
    (folder / "main_classification.py").write_text(MIXUP_SCRIPT)
    return run_compat("run", folder / "main_classification.py", cwd=folder)


def test_inspect_getargspec_is_python_3_7s_for_tf1_scripts(mixup_run):
    assert mixup_run.returncode == 0, mixup_run.stderr[-3000:]
    assert "mixup (2, 8, 8, 3) (2, 5) True True" in mixup_run.stdout, mixup_run.stdout[-2000:]
    assert "keyword-only refused" in mixup_run.stdout


def test_contrib_distributions_are_tf1_distributions_and_percentile(mixup_run):
    import numpy as np

    assert mixup_run.returncode == 0, mixup_run.stderr[-3000:]
    # 100 values per example, decreasing rank round(99 * 0.01) = 1: the second largest; the median of 100 values
    # is rank round(49.5) = 50 (round half to even) from the top, 49; 'lower' takes rank ceil(99 * 0.7) = 70 -> 29
    assert "percentile [98.0, 198.0] 49.0 (2, 1, 1) [29.0, 129.0] [1.0, 1.0]" in mixup_run.stdout, mixup_run.stdout
    expected_kl = (np.exp(1) - 1) / (np.exp(1) + 1)  # KL(softmax(0, 1) || softmax(1, 0))
    expected_logp = -0.5 * np.log(2 * np.pi) - np.log(2.)
    assert f"kl {expected_kl:.5f} logp {expected_logp:.5f}" in mixup_run.stdout, mixup_run.stdout


def test_percentile_refuses_an_unknown_interpolation():
    from npurun.tf1.contrib.distributions import percentile

    with pytest.raises(ValueError, match="interpolation='linear'.*nearest, lower, higher"):
        percentile([1., 2.], 50, interpolation="linear")


def test_contrib_only_distributions_still_name_tensorflow_probability():
    from npurun.names.coverage import AdapterAPIError
    from npurun.tf1.contrib import ContribModule

    with pytest.raises(AdapterAPIError, match="MultivariateNormalDiag.*tensorflow-probability"):
        ContribModule("distributions").MultivariateNormalDiag(loc=[0.], scale_diag=[1.])
