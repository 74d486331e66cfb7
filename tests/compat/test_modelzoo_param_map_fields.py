"""Parameter-map entries as real ModelZoo scripts write them: `dynamic_input .b = 1` (an int in the bool field,
which protobuf stores as True: MGCNN_ID1039, AUTOAUGMENT, OSMN, DS-CNN, 2D_Unet, SSD-VGG, ...) and the Ascend
adapter's own bool `jit_compile .b = True` (Face-ResNet50_ID1372, OpenPose_ID0117): the first is the option
set to True, the second the adapter's operator-compilation switch, accepted with a warning, neither refused by
the run nor by `npurun check`."""
import textwrap

from npurun.tools.check import check_source

from .conftest import run_compat

SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    from npu_bridge.npu_init import *

    global_config = tf.ConfigProto(log_device_placement=False)
    custom_op = global_config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["dynamic_input"].b = 1
    custom_op.parameter_map["dynamic_graph_execute_mode"].s = tf.compat.as_bytes("lazy_recompile")
    custom_op.parameter_map["jit_compile"].b = True
    global_config.graph_options.rewrite_options.remapping = RewriterConfig.OFF

    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 2.0))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session(config=global_config) as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([train, loss], {x: np.ones((n, 3))})[1] for n in (4, 7, 5)]
    print("losses", losses[0] > losses[-1], "batches of 4, 7, 5 rows")
    """)


def test_int_bool_field_and_adapter_bool_jit_compile_run(tmp_path):
    script = tmp_path / "mgcnn_npu.py"
    script.write_text(SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "losses True batches of 4, 7, 5 rows" in done.stdout
    assert "NpuOptimizer parameter 'jit_compile' set as bool (.b)" in done.stderr
    assert "online" in done.stderr and "no effect" in done.stderr


def test_check_reads_the_fields_as_protobuf_stores_them():
    findings = {f.name.split(" ")[0]: f for f in check_source(SCRIPT, "mgcnn_npu.py") if f.section == "parameter_map"}
    assert not findings["dynamic_input"].error and "True" in findings["dynamic_input"].name, findings
    jit = findings["jit_compile"]
    assert not jit.error and jit.status == "accepted, no effect here" and "online" in jit.detail, jit
    refused = check_source(SCRIPT.replace('["jit_compile"].b = True', '["jit_compile"].i = 1'), "mgcnn_npu.py")
    assert any(f.error and f.name.startswith("jit_compile") for f in refused), refused
