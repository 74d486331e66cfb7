"""Memory caps, engine parallelism and auto-tuning on this (CPU-only) machine."""
import time
import warnings

import pytest
import tensorflow as tf

from helpers import options, session_for, v1
from npurun.runtime import resources
from npurun.runtime.contributors import build_plan


@pytest.mark.parametrize("kwargs,named", [
    (dict(graph_memory_max_size=str(8 * 1024 ** 3)), "graph_memory_max_size"),
    (dict(variable_memory_max_size=1024 ** 3), "variable_memory_max_size"),
])
def test_memory_options_warn_on_cpu(kwargs, named):
    with pytest.warns(UserWarning, match=f"{named} cap GPU memory and have no effect on this machine"):
        build_plan(options(**kwargs), "train")


def test_memory_cap_on_gpus_is_one_virtual_device_per_gpu():
    opts = options(graph_memory_max_size=str(2 * 1024 ** 3))  # variable memory: its 5 GB default
    limit = resources.memory_limit(opts)
    assert limit == 7 * 1024 ** 3
    config = v1.ConfigProto()
    resources.cap_gpu_memory(config, limit, visible_gpus=2)
    devices = config.gpu_options.experimental.virtual_devices
    assert [list(d.memory_limit_mb) for d in devices] == [[7 * 1024.0], [7 * 1024.0]]
    assert resources.memory_limit(options()) is None


def two_sleeps(opts):
    def sleep(x):
        time.sleep(0.4)
        return x

    a = tf.numpy_function(sleep, [tf.constant(1.0)], tf.float32)
    b = tf.numpy_function(sleep, [tf.constant(2.0)], tf.float32)  # independent of a
    return [a, b], {}, []


def wall_time(threads):
    with session_for(options(stream_max_parallel_num=f"DNN_VM_TF:{threads}"), two_sleeps) as built:
        built.run()  # warm up
        start = time.perf_counter()
        built.session.run(built.fetch)
        return time.perf_counter() - start


def test_dnn_vm_tf_sets_how_many_ops_run_at_once():
    assert wall_time(1) >= 0.75  # one inter-op thread: the two sleeps run one after the other
    assert wall_time(2) < 0.7    # two threads: side by side


def test_dnn_vm_tf_config():
    config = build_plan(options(stream_max_parallel_num="DNN_VM_TF:3"), "train").config_proto
    assert config.inter_op_parallelism_threads == 3
    assert [p.num_threads for p in config.session_inter_op_thread_pool] == [3]


def test_gpu_only_settings_warn_on_cpu():
    with pytest.warns(UserWarning, match="DNN_V100:2 sets GPU compute parallelism"):
        plan = build_plan(options(stream_max_parallel_num="DNN_VM_TF:4,DNN_V100:2"), "train")
    assert "TF_GPU_THREAD_COUNT" not in plan.env
    with pytest.warns(UserWarning, match="auto_tune_mode='GA,RL' tunes GPU kernels"):
        build_plan(options(auto_tune_mode="GA,RL"), "train")


def test_defaults_warn_about_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_plan(options(), "train")
