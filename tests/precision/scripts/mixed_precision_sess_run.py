# An Ascend-style sess.run-mode script asking for allow_mix_precision through the NpuOptimizer entry.
# It prints the dtypes of the MatMuls TensorFlow executed, and the training loss.
import tensorflow.compat.v1 as tf
from npu_bridge.npu_init import *

tf.disable_v2_behavior()

x = tf.random.normal([64, 32], seed=1)
labels = tf.random.uniform([64], 0, 4, dtype=tf.int32, seed=2)
hidden = tf.layers.dense(x, 64, activation=tf.nn.relu, name="hidden")
logits = tf.layers.dense(hidden, 4, name="logits")
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

config = tf.ConfigProto(allow_soft_placement=True)
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")

with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    metadata = tf.RunMetadata()
    _, value = sess.run([train_op, loss], options=tf.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    dtypes = sorted({tf.as_dtype(node.attr["T"].type).name for graph in metadata.partition_graphs
                     for node in graph.node if "MatMul" in node.op and "T" in node.attr})
    print("matmul_dtypes", ",".join(dtypes))
    print("loss", value)
