"""The sixth random sample (seed 2036), folders 7-8: gaps its real scripts hit, each in the style of the script
that hit it; each test failed before its fix."""

import pytest

# UGATIT_ID0722's utils.py: a TF 1 GAN on a session whose sample images are encoded and written with
# `np.array(cv2.imencode('.jpg', images)[1]).tostring()` (NumPy 2.3 removed ndarray.tostring; TFRecord
# writers' `image.tostring()` too), and whose test phase reads images back with
# `cv2.imdecode(np.fromstring(tf.gfile.Open(path, 'rb').read(), np.uint8), ...)` (NumPy 2 removed fromstring's
# binary mode). Here the encoder is NumPy alone (no cv2): the bytes of the merged batch. Its input is
# contrib.data's shuffle_and_repeat / map_and_batch / prefetch_to_device('/gpu:0').
TOSTRING_SCRIPT = '''\
import os
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *
from tensorflow.contrib.data import prefetch_to_device, shuffle_and_repeat, map_and_batch


def inverse_transform(images):
    return ((images + 1.) / 2) * 255.0


def merge(images, size):
    h, w = images.shape[1], images.shape[2]
    img = np.zeros((h * size[0], w * size[1], 3))
    for idx, image in enumerate(images):
        i = idx % size[1]
        j = idx // size[1]
        img[h * j:h * (j + 1), w * i:w * (i + 1), :] = image
    return img


def imsave(images, size, path):
    images = merge(inverse_transform(images), size)
    encoded = np.array(images.astype('uint8').reshape(-1))
    with open(path, 'wb') as file:
        file.write(encoded.tostring())
    return len(encoded.tostring())


trainA = tf.data.Dataset.from_tensor_slices(np.zeros((4, 6, 6, 3), np.float32))
trainA = trainA.apply(shuffle_and_repeat(4)).apply(map_and_batch(lambda image: image * 2 - 1, 2,
                                                                  num_parallel_batches=16, drop_remainder=True))
trainA = trainA.apply(prefetch_to_device('/gpu:0', None))
x = trainA.make_one_shot_iterator().get_next()
with tf.variable_scope("generator"):
    fake = tf.tanh(tf.layers.conv2d(x, 3, 3, padding="same"))
config = npu_config_proto(config_proto=tf.ConfigProto(allow_soft_placement=True))
with tf.Session(config=config) as sess:
    tf.global_variables_initializer().run()
    fake_A = sess.run(fake)
    written = imsave(fake_A, [2, 1], os.path.join(os.getcwd(), "fake_A_000_00001.jpg"))
scalar = np.float32(1.5).tostring()
print("written", written, "scalar", scalar == np.float32(1.5).tobytes(),
      "same", np.arange(3, dtype=np.int16).tostring() == np.arange(3, dtype=np.int16).tobytes())


def load_test_data(image_path):
    img = np.fromstring(tf.gfile.Open(image_path, 'rb').read(), np.uint8)
    img[0] = 7  # a copy of the bytes, writable, as fromstring's binary mode gave
    return img


back = load_test_data(os.path.join(os.getcwd(), "fake_A_000_00001.jpg"))
print("read back", back.shape, back.dtype, int(back[0]),
      "int16", np.fromstring(np.arange(3, dtype=np.int16).tobytes(), dtype=np.int16, count=2).tolist(),
      "text", np.fromstring("1 2 3", dtype=np.int64, sep=" ").tolist())
'''


@pytest.fixture(scope="module")
def tostring_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("tostring")
    (tmp_path / "main.py").write_text(TOSTRING_SCRIPT)
    return run_compat("run", tmp_path / "main.py", cwd=tmp_path), tmp_path


def test_ndarray_tostring_is_tobytes(tostring_run):
    result, tmp_path = tostring_run
    assert result.returncode == 0, result.stderr[-3000:]
    assert "written 216 scalar True same True" in result.stdout, result.stdout[-2000:]
    assert (tmp_path / "fake_A_000_00001.jpg").stat().st_size == 216


def test_fromstring_binary_mode_is_a_copy_of_the_bytes(tostring_run):
    result, _ = tostring_run
    assert result.returncode == 0, result.stderr[-3000:]
    assert "read back (216,) uint8 7 int16 [0, 1] text [1, 2, 3]" in result.stdout, result.stdout[-2000:]


# The line UGATIT's run printed once per prefetch_to_device input (8 ModelZoo folders use prefetch_to_device or
# copy_to_device); the tests' runs keep TF_CPP_MIN_LOG_LEVEL=2, so the whole-run filter's rule is asked directly.
GENERATOR_DATASET_LINE = (
    "W0000 00:00:1796409914.311366   14533 dataset.cc:997] Input of GeneratorDatasetOp::Dataset will not be "
    "optimized because the dataset does not implement the AsGraphDefInternal() method needed to apply "
    "optimizations.")


def test_prefetch_to_device_input_is_quiet():
    from npurun._native_stderr import keep_native_line

    assert not keep_native_line(GENERATOR_DATASET_LINE, 1, False)
    assert keep_native_line(GENERATOR_DATASET_LINE, 0, False), "-v shows everything"
    assert keep_native_line(GENERATOR_DATASET_LINE.replace("GeneratorDatasetOp", "SomeOtherOp")
                            .replace("will not be optimized", "failed"), 1, False)
