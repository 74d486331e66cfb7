"""A 2-rank TF2 ModelZoo-style Keras job: shard_and_rebatch_dataset, broadcast of the initial weights and
npu_distributed_keras_optimizer_wrapper, under `npurun launch -n 2`. argv: out_dir."""
import json, sys
import numpy as np
import tensorflow as tf
import npu_device as npu

out = sys.argv[1]
npu.open().as_default()
ctx = npu.global_npu_ctx()
rng = np.random.RandomState(0)
x = rng.randn(512, 8).astype("float32"); y = (x @ rng.randn(8, 1)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y))
ds, batch = npu.distribute.shard_and_rebatch_dataset(ds, 64)
ds = ds.batch(batch, drop_remainder=True)
tf.random.set_seed(ctx.worker_id + 1)  # different initial weights per rank: the broadcast must align them
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="tanh", input_shape=(8,)), tf.keras.layers.Dense(1)])
initial = [w.numpy().tolist() for w in model.weights]
npu.distribute.broadcast(model.weights, root_rank=0)
opt = npu.distribute.npu_distributed_keras_optimizer_wrapper(tf.keras.optimizers.SGD(0.05))
model.compile(optimizer=opt, loss="mse")
history = model.fit(ds, epochs=4, verbose=0)
final = np.concatenate([w.numpy().ravel() for w in model.weights])
json.dump({"rank": ctx.worker_id, "size": ctx.workers_num, "batch": batch, "loss": history.history["loss"],
           "initial": initial[0][0][:2], "final_hex": final.tobytes().hex()}, open(f"{out}/rank{ctx.worker_id}.json", "w"))
print("rank", ctx.worker_id, "done")
