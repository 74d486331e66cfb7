"""Issue 23's third random sample (seed 2028), the folders run late (parts A, B, C's "not run (deadline)"): gaps
their real scripts hit, each in the style of the script that hit it (docs/compat.md, "Third random sample (seed
2028)"); each test failed before its fix.
"""

# 3D_ResNet_ID0486's resnet3d.py (standalone Keras 2.2 on TF 1.15): layers from Keras 2.x's layer modules
# (`keras.layers.merge`, `advanced_activations`, `normalization`: 13 folders), and a residual shortcut sized from
# the layer outputs' `_keras_shape` (9 folders), trained with fit on the NPU session.
KERAS2_LAYER_MODULES_SCRIPT = '''\
from npu_bridge.npu_init import *
import numpy as np
from math import ceil
from keras.models import Model
from keras.layers import Input, Dense, Flatten
from keras.layers.convolutional import Conv3D
from keras.layers.merge import add
from keras.layers.normalization import BatchNormalization
from keras.layers.advanced_activations import LeakyReLU
from tensorflow.python.keras.layers.normalization import BatchNormalization as TFBatchNormalization

config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
sess = set_keras_session_npu_config(config=config)


def shortcut(block_input, residual):
    stride = ceil(block_input._keras_shape[1] / residual._keras_shape[1])
    channels = residual._keras_shape[-1]
    if stride > 1 or block_input._keras_shape[-1] != channels:
        block_input = Conv3D(channels, (1, 1, 1), strides=(stride, stride, stride))(block_input)
    return add([block_input, residual])


inputs = Input(shape=(8, 8, 4, 1))
residual = LeakyReLU()(BatchNormalization()(Conv3D(4, (3, 3, 3), strides=(2, 2, 2), padding="same")(inputs)))
outputs = Dense(2, activation="softmax")(Flatten()(TFBatchNormalization()(shortcut(inputs, residual))))
model = Model(inputs=inputs, outputs=outputs)
model.compile(loss="categorical_crossentropy", optimizer="sgd")
labels = np.random.randint(0, 2, size=[4])
history = model.fit(np.random.rand(4, 8, 8, 4, 1), np.eye(2)[labels], batch_size=2, epochs=1, verbose=0)
print("shapes", inputs._keras_shape, residual._keras_shape, len(history.history["loss"]))
close_session(sess)
'''


def test_keras2_layer_modules_and_keras_shape(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(KERAS2_LAYER_MODULES_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "shapes (None, 8, 8, 4, 1) (None, 4, 4, 2, 4) 1" in done.stdout, done.stdout[-2000:]
