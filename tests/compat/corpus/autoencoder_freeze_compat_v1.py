# A graph autoencoder written against tensorflow.compat.v1 (as the few ModelZoo scripts ported with
# `import tensorflow.compat.v1 as tf` are), trained with sess.run and an NpuOptimizer session config, then
# frozen with convert_variables_to_constants from its TensorFlow 1 path and run again from the frozen GraphDef.
# Synthetic data: 16-dimensional points on a 3-dimensional subspace.
import os
import sys

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.python.framework import graph_util
from npu_bridge.estimator import npu_ops
from npu_bridge.npu_init import *

tf.disable_v2_behavior()

STEPS = 150
OUT = sys.argv[1] if len(sys.argv) > 1 else "."


def encoder(x):
    with tf.variable_scope("encoder"):
        h = tf.layers.dense(x, 8, activation=tf.nn.tanh, name="h1")
        return tf.layers.dense(h, 3, name="code")


def decoder(z):
    with tf.variable_scope("decoder"):
        h = tf.layers.dense(z, 8, activation=tf.nn.tanh, name="h1")
        return tf.layers.dense(h, 16, name="reconstruction")


def main():
    rng = np.random.RandomState(0)
    data = (rng.normal(size=(512, 3)) @ rng.normal(size=(3, 16))).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 16], name="input")
    reconstruction = tf.identity(decoder(encoder(x)), name="output")
    loss = tf.reduce_mean(tf.square(reconstruction - x))
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss)

    config = tf.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(STEPS):
            batch = data[rng.randint(0, len(data), 64)]
            _, value = sess.run([train_op, loss], {x: batch})
            if step % 10 == 0:
                print("step %d step_loss %.5f" % (step, value))
        expected = sess.run(reconstruction, {x: data[:8]})
        frozen = graph_util.convert_variables_to_constants(sess, sess.graph_def, ["output"])
    path = os.path.join(OUT, "frozen_autoencoder.pb")
    with tf.gfile.GFile(path, "wb") as f:
        f.write(frozen.SerializeToString())

    graph_def = tf.GraphDef()
    with tf.gfile.GFile(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=graph) as sess:
            got = sess.run("output:0", {"input:0": data[:8]})
    variables = [n.name for n in graph_def.node if n.op in ("VariableV2", "VarHandleOp")]
    print("frozen_matches %s variables_left %d" % (np.allclose(got, expected, atol=1e-5), len(variables)))


if __name__ == "__main__":
    main()
