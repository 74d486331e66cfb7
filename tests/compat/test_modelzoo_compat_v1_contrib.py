"""`tf.compat.v1.contrib` as TF 1.15 had it (its compat.v1 was the whole v1 API, contrib included): ProtoAttend_ID2040's
`tf.compat.v1.contrib.layers.xavier_initializer`, Yolov5_ID1720's mnv3 layers, IEG_ID2049's autoaugment `.image`.
The script is in their style; `npurun check` agrees with the run, and a name contrib lacks still raises."""
import textwrap

from npurun.tools.check import check_source

from .conftest import run_compat

SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf


    def conv(x, filters):
        init = tf.compat.v1.contrib.layers.xavier_initializer()
        w = tf.compat.v1.get_variable("w", [3, 3, int(x.shape[-1]), filters], initializer=init)
        return tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")


    images = tf.compat.v1.placeholder(tf.float32, [None, 8, 8, 3])
    net = conv(images, 4)
    net = tf.compat.v1.contrib.layers.flatten(net)
    turned = tf.compat.v1.contrib.image.rotate(images, 0.0)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        data = np.random.RandomState(0).rand(2, 8, 8, 3).astype(np.float32)
        out, same = sess.run([net, turned], {images: data})
    print("flat", out.shape, "rotate_0_is_identity", np.allclose(same, data, atol=1e-6))
    """)


def test_compat_v1_contrib_runs(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "flat (2, 256) rotate_0_is_identity True" in done.stdout, done.stdout


def test_check_agrees():
    assert not [f for f in check_source(SCRIPT, "model.py") if f.error]
    missing = check_source(SCRIPT + "tf.compat.v1.contrib.no_such_module.thing()\n", "model.py")
    assert [f for f in missing if f.error and "no_such_module" in f.name], missing
