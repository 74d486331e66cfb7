"""Keras 3 model.fit steps/s on the MLP of bench/estimator_overhead.py, with steps_per_execution=SPE
and jit_compile=JIT ("0" or "1"): the XLA-compiled counterpart of /work/shared/bench/peer_keras_bench.py
(which uses jit_compile=False). Prints steps_per_sec=<rate>.
Usage: SPE=100 STEPS=3000 JIT=1 python bench/keras_fit.py
"""
import os
import time

import numpy as np

SPE = int(os.environ.get("SPE", "100"))
STEPS = int(os.environ.get("STEPS", "3000"))
JIT = os.environ.get("JIT", "1") == "1"


def main():
    import keras
    import tensorflow as tf

    rng = np.random.RandomState(0)
    x = rng.rand(1797, 64).astype("float32")
    y = rng.randint(0, 10, 1797).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(32, drop_remainder=True).prefetch(4)
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])
    model.compile(keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=SPE, jit_compile=JIT)
    model.fit(dataset, steps_per_epoch=SPE * 2, epochs=1, verbose=0)  # tracing and compilation
    start = time.perf_counter()
    model.fit(dataset, steps_per_epoch=STEPS, epochs=1, verbose=0)
    print(f"steps_per_sec={STEPS / (time.perf_counter() - start):.1f}")


if __name__ == "__main__":
    main()
