"""The sixth random sample (seed 2036), folders 5-6: gaps their real scripts hit, each in the style of the
script that hit it; each test failed before its fix."""

import pytest

# Gitloss_ID1277's gitloss.py: a slim conv net (arg_scope'd conv2d / max_pool2d, flatten, fully_connected) with a
# center loss whose centers are updated by tf.scatter_sub, trained in a tf.Session(config=npu_config_proto()).
SLIM_CENTER_LOSS_SCRIPT = '''\
from npu_bridge.npu_init import *

import numpy as np
import tensorflow as tf
import tensorflow.contrib.layers as initializers

slim = tf.contrib.slim
tf.app.flags.DEFINE_integer('steps', 4, 'The train steps')
FLAGS = tf.app.flags.FLAGS

images = tf.placeholder(tf.float32, shape=(None, 12, 12, 1), name='images')
labels = tf.placeholder(tf.int64, shape=(None), name='labels')
global_step = tf.Variable(0, trainable=False, name='global_step')

with slim.arg_scope([slim.conv2d], kernel_size=3, padding='SAME'):
    with slim.arg_scope([slim.max_pool2d], kernel_size=2):
        x = slim.conv2d(images, num_outputs=4, weights_initializer=initializers.xavier_initializer(), scope='c1')
        x = slim.max_pool2d(x, scope='p1')
        x = slim.flatten(x, scope='flat')
        feature = slim.fully_connected(x, num_outputs=2, activation_fn=None, scope='fc1')
        logits = slim.fully_connected(feature, num_outputs=3, activation_fn=None, scope='fc2')

with tf.variable_scope('loss'):
    centers = tf.get_variable('centers', [3, 2], initializer=tf.constant_initializer(0), trainable=False)
    centers_batch = tf.gather(centers, labels)
    center_loss = tf.reduce_mean(tf.square(feature - centers_batch))
    update_centers = tf.scatter_sub(centers, labels, 0.5 * (centers_batch - feature))
    softmax_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    total_loss = softmax_loss + center_loss
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.arg_max(logits, 1), labels), tf.float32))
train_op = tf.train.AdamOptimizer(0.001).minimize(total_loss, global_step=global_step)

sess = tf.Session(config=npu_config_proto())
sess.run(tf.global_variables_initializer())
rng = np.random.RandomState(0)
for step in range(FLAGS.steps):
    batch_labels = rng.randint(0, 3, 6)
    _, loss, acc, _ = sess.run([train_op, total_loss, accuracy, update_centers],
                               feed_dict={images: rng.rand(6, 12, 12, 1), labels: batch_labels})
print("steps", sess.run(global_step), "finite", bool(np.isfinite(loss)))
'''


@pytest.fixture(scope="module")
def slim_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("slim_center_loss")
    (tmp_path / "gitloss.py").write_text(SLIM_CENTER_LOSS_SCRIPT)
    return run_compat("run", tmp_path / "gitloss.py", "--steps=3", cwd=tmp_path)


def test_slim_layers_train_quietly(slim_run):
    """tf_slim's `layer.apply` calls are library code: TensorFlow's "`layer.apply` is deprecated" UserWarning
    (TF 1.15: a deprecation notice located in contrib's layers.py, which npurun drops) is not printed."""
    assert slim_run.returncode == 0, slim_run.stderr
    assert "steps 3 finite True" in slim_run.stdout
    assert "layer.apply" not in slim_run.stderr, slim_run.stderr


# CTPN_ID0054's tf_anchor_target_layer.py: foreground / background anchors are sampled from boolean masks of the
# anchors' overlaps with the ground truth by the adapter's AI CPU op, `custom_op.randomchoicewithmask(x=mask,
# count=n)`; its indices are squeezed and gathered, its mask becomes the labels (also CTPN_ID0053,
# ModelZoo_CTPN_TF_HARD).
RANDOM_CHOICE_SCRIPT = '''\
import numpy as np
import tensorflow as tf
from npu_bridge.npu_cpu import npu_cpu_ops as custom_op
from npu_bridge.npu_init import *

overlaps = tf.placeholder(tf.float32, shape=[12, 3], name='overlaps')
scores = tf.get_variable('scores', [12, 2], initializer=tf.constant_initializer(0.1))
max_overlap = tf.reduce_max(overlaps, axis=1)
mask_fg = tf.greater_equal(max_overlap, 0.7)
mask_bg = tf.less_equal(max_overlap, 0.3)
num_fg, num_bg = 4, 6
inds_fg, mask_fg_ret = custom_op.randomchoicewithmask(x=mask_fg, count=num_fg)
inds_bg, mask_bg_ret = custom_op.randomchoicewithmask(x=mask_bg, count=num_bg, seed=3, seed2=5)
fg_index = tf.squeeze(inds_fg)
bg_index = tf.squeeze(inds_bg)
selected = tf.concat([tf.gather(scores, fg_index), tf.gather(scores, bg_index)], axis=0)
labels = tf.cast(tf.concat([tf.cast(mask_fg_ret, tf.float32), tf.zeros(num_bg)], axis=0), tf.int32)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=selected))
train_op = tf.train.AdamOptimizer(0.01).minimize(loss)

values = np.zeros([12, 3], np.float32)
values[[1, 5, 7], 0] = 0.9          # 3 foreground anchors (fewer than num_fg)
values[[0, 2, 3, 4, 6, 8, 9, 10], 1] = 0.1   # 8 background anchors (more than num_bg)
values[11, 2] = 0.5                 # neither
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(2):
        fg, fg_mask, bg, bg_mask, _ = sess.run([inds_fg, mask_fg_ret, inds_bg, mask_bg_ret, train_op],
                                               feed_dict={overlaps: values})
    print("shapes", inds_fg.shape.as_list(), mask_fg_ret.shape.as_list(), fg.dtype, fg_mask.dtype)
    print("fg", sorted(fg[fg_mask, 0].tolist()), fg[~fg_mask].tolist())
    print("bg", len(set(bg[:, 0].tolist())), bg_mask.tolist(), set(bg[:, 0].tolist()) <= {0, 2, 3, 4, 6, 8, 9, 10})
'''


@pytest.fixture(scope="module")
def random_choice_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("random_choice")
    (tmp_path / "tf_anchor_target_layer.py").write_text(RANDOM_CHOICE_SCRIPT)
    return run_compat("run", tmp_path / "tf_anchor_target_layer.py", cwd=tmp_path)


def test_randomchoicewithmask_samples_true_elements(random_choice_run):
    """`npu_bridge.npu_cpu.npu_cpu_ops.randomchoicewithmask` imports and runs: int32 [count, rank] indices of
    distinct true elements, zero rows past them, and a bool [count] mask of the real rows."""
    assert random_choice_run.returncode == 0, random_choice_run.stderr
    out = random_choice_run.stdout
    assert "shapes [4, 1] [4] int32 bool" in out
    assert "fg [1, 5, 7] [[0]]" in out  # all 3 foreground anchors, one padding row
    assert "bg 6 [True, True, True, True, True, True] True" in out  # 6 distinct of the 8 background anchors


# CTPN_ID0054's utils/rpn_msr/generate_anchors.py, imported by the training script, ends in a demo block
# `if __name__ == '__main__': ... from IPython import embed; embed()`; the block runs only when that file is started
# itself. The entry script's own `__main__` block runs. Its demo.py imports `utils.bbox.nms`, of which the model
# has only nms.pyx until the launch script's make.sh builds it (bbox.pyx here is built: its .so is beside it).
ANCHORS_MODULE = '''\
import numpy as np


def generate_anchors(heights=(11, 16, 23)):
    return np.array([[0, 0, 15, h - 1] for h in heights], np.int32)


if __name__ == '__main__':
    import time

    t = time.time()
    a = generate_anchors()
    print(time.time() - t)
    from IPython_not_here import embed;

    embed()
'''
ANCHORS_SCRIPT = '''\
import tensorflow as tf
from utils.generate_anchors import generate_anchors
from utils.bbox.bbox import bbox_overlaps
from utils.bbox.nms import nms

if __name__ == '__main__':
    import not_installed_in_main
    print(generate_anchors().shape)
'''


@pytest.fixture(scope="module")
def main_block_check(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("main_block")
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "utils" / "generate_anchors.py").write_text(ANCHORS_MODULE)
    (tmp_path / "utils" / "bbox").mkdir()
    for name in ("bbox.pyx", "nms.pyx"):
        (tmp_path / "utils" / "bbox" / name).write_text("import numpy as np\n")
    (tmp_path / "utils" / "bbox" / "bbox.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    (tmp_path / "train_npu.py").write_text(ANCHORS_SCRIPT)
    return run_compat("check", tmp_path / "train_npu.py", cwd=tmp_path)


def test_check_imported_modules_main_block_does_not_raise(main_block_check):
    """An import in an imported module's `if __name__ == '__main__':` block is not counted as raising; one in
    the entry script's own block is."""
    out = main_block_check.stdout
    lines = {line.split(" -- ")[0].strip(): line for line in out.splitlines() if " -- " in line}
    module_line = next(line for key, line in lines.items() if key.endswith("IPython_not_here"))
    assert not module_line.lstrip().startswith("!"), out
    assert "only if `__name__ == '__main__'`" in module_line and "imports this module" in module_line, out
    script_line = next(line for key, line in lines.items() if key.endswith("not_installed_in_main"))
    assert script_line.lstrip().startswith("!"), out
    assert "2 will raise here" in out, out


def test_check_cython_source_without_its_build_raises(main_block_check):
    """`from utils.bbox.nms import nms` with only utils/bbox/nms.pyx: ModuleNotFoundError until it is built, as
    check says; `utils.bbox.bbox`, built, is not reported."""
    out = main_block_check.stdout
    assert " ! line 4: utils.bbox.nms -- not built: the model has only utils/bbox/nms.pyx, a Cython source" in out, out
    assert "utils.bbox.bbox" not in out, out
