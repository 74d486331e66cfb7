"""Issue 23's seed-2028 sample, part B: gaps its real scripts hit, each in the style of the script that hit it."""
import pytest

AUTOTUNE_SCRIPT = '''\
import os

from npu_bridge.npu_init import *
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

# WaveGlow_ID0024's train.py: its launch script exports FLAG_AUTOTUNE="" (no tuning) and the script copies
# the variable into the NpuOptimizer's auto_tune_mode.
config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
custom_op.parameter_map["auto_tune_mode"].s = tf.compat.as_bytes(os.getenv("FLAG_AUTOTUNE"))
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
sess = tf.Session(config=config)
x = tf.placeholder(tf.float32, [None, 2])
total = tf.reduce_sum(x * 3.0)
print("autotune_off", sess.run(total, feed_dict={x: [[1.0, 2.0]]}))
'''


@pytest.fixture(scope="module")
def autotune_run(tmp_path_factory):
    from .conftest import run_compat

    folder = tmp_path_factory.mktemp("sample_f_b")
    (folder / "train.py").write_text(AUTOTUNE_SCRIPT)
    return run_compat("run", folder / "train.py", cwd=folder, env={"FLAG_AUTOTUNE": ""})


def test_an_empty_auto_tune_mode_in_the_session_config_means_no_tuning(autotune_run):
    assert autotune_run.returncode == 0, autotune_run.stderr[-3000:]
    assert "autotune_off 9.0" in autotune_run.stdout, autotune_run.stdout[-2000:]


def test_a_bad_auto_tune_mode_is_still_refused():
    from npurun import NPURunConfig
    from npurun.config.errors import OptionValueError

    assert NPURunConfig(auto_tune_mode="").auto_tune_mode == ""
    with pytest.raises(OptionValueError, match="auto_tune_mode"):
        NPURunConfig(auto_tune_mode="GA, ")
