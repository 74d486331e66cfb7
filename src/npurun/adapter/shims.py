"""Small adapter functions and classes implemented here (the coverage table says which names use them).

They keep the adapter's signatures and meaning; where the meaning needs another npurun module
(ranks and collectives from `npurun.distribute`) it is looked up by name when called, so a module
that is not available yet gives `AdapterAPIError` naming it.
"""
from __future__ import annotations

import contextlib
import enum
import os

from . import tables

_WORLD = "hccl_world_group"


def _distribute(name: str, adapter_name: str):
    return tables.resolve(tables.Mapped(f"npurun.distribute:{name}"), adapter_name)


# ---- npu_optimizer.allreduce ----------------------------------------------------------------
def optimizer_allreduce(tensor, average=True):
    """npu_optimizer.allreduce: the sum over all ranks (the mean when `average`); IndexedSlices are gathered."""
    import tensorflow as tf

    name = "npu_bridge.estimator.npu.npu_optimizer.allreduce"
    size = _distribute("get_rank_size", name)()
    if isinstance(tensor, tf.IndexedSlices):
        allgather = _distribute("allgather", name)
        values = allgather(tensor.values, size)
        if average:
            values = values / tf.cast(size, values.dtype)
        return tf.IndexedSlices(values, allgather(tensor.indices, size), dense_shape=tensor.dense_shape)
    summed = _distribute("allreduce", name)(tensor, "sum")
    return summed / tf.cast(size, summed.dtype) if average else summed


# ---- npu_hook ---------------------------------------------------------------------------------------
def _output_tensor_hook_class():
    import tensorflow as tf

    class NPUOutputTensorHook(tf.compat.v1.train.SessionRunHook):
        """Fetches `tensors` every step and passes the collected values to `output_fn`.

        `output_fn(list_of_dicts)` is called every `output_every_n_steps` host steps (0: only at the
        end) and at the end for what is left. `dependencies` become control dependencies of the
        fetched tensors, as in the adapter.
        """

        def __init__(self, tensors, dependencies=None, output_fn=None, output_every_n_steps=0):
            if not isinstance(output_every_n_steps, int) or output_every_n_steps < 0:
                raise ValueError(f"NPUOutputTensorHook: output_every_n_steps must be an int >= 0; "
                                 f"got {output_every_n_steps!r}")
            self._output_fn = output_fn
            self._every = output_every_n_steps
            self._outputs = []
            self._steps = 0
            self._tensors = None
            if tensors is not None:
                if not isinstance(tensors, dict):
                    tensors = {getattr(t, "name", str(t)): t for t in tensors}
                if dependencies is not None:
                    deps = dependencies if isinstance(dependencies, (list, tuple)) else [dependencies]
                    with tf.control_dependencies(deps):
                        tensors = {key: tf.identity(value) for key, value in tensors.items()}
                self._tensors = tensors

        def before_run(self, run_context):
            if self._tensors is not None:
                return tf.compat.v1.train.SessionRunArgs(self._tensors)
            return None

        def after_run(self, run_context, run_values):
            if self._tensors is not None:
                self._outputs.append(dict(run_values.results))
            self._steps += 1
            if self._every and self._steps % self._every == 0:
                self._flush()

        def end(self, session):
            if self._outputs:
                self._flush()

        def _flush(self):
            if self._output_fn is not None:
                self._output_fn(list(self._outputs))
            self._outputs.clear()

    return NPUOutputTensorHook


def _plain_hook_classes():
    """NpuEmptyHook, SetIterationsVarHook and TellMeStepOrLossHook: SessionRunHooks that do nothing here."""
    import tensorflow as tf

    base = tf.compat.v1.train.SessionRunHook

    class NpuEmptyHook(base):
        """A SessionRunHook that does nothing (as in the adapter)."""

    class SetIterationsVarHook(base):
        """The adapter loads its device loop's iteration variables; here the loop count comes from
        NPURunConfig(iterations_per_loop=...) or util.set_iteration_per_loop, so nothing is loaded."""

        def __init__(self, iterations_per_loop=None):
            self._iterations_per_loop = iterations_per_loop

    class TellMeStepOrLossHook(base):
        """The adapter reports step/loss to the Ascend runtime's inner checks through environment
        variables; there is no such check here. The arguments are validated as the adapter does."""

        def __init__(self, step=None, total_step=None, loss=None, final_loss=None):
            if step is None and loss is None:
                raise ValueError("TellMeStepOrLossHook: one of step or loss must be specified")
            self._step, self._total_step, self._loss, self._final_loss = step, total_step, loss, final_loss

    return {"NpuEmptyHook": NpuEmptyHook, "SetIterationsVarHook": SetIterationsVarHook,
            "TellMeStepOrLossHook": TellMeStepOrLossHook}


def _experimental_options():
    """The adapter's `experimental_options`: Grappler passes it keeps on (a plain dict of RewriterConfig values)."""
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    passes = ("function_optimization", "constant_folding", "shape_optimization", "arithmetic_optimization",
              "loop_optimization", "dependency_optimization", "layout_optimizer")
    return {"disable_model_pruning": False, **{name: RewriterConfig.ON for name in passes}}


def _script_tensorflow():
    """npu_init's `tf`: the `tensorflow` module a script imports, which on Ascend is TensorFlow 1.

    Looked up at each read (never cached here) by an import as a script's (`__main__`) would do it,
    so npurun's TF1 world (which gives scripts' imports TensorFlow 1) is picked up when it is on;
    where `tensorflow` is TensorFlow 2 itself, its TensorFlow 1 API (`tf.compat.v1`) is given, as
    scripts that write `import tensorflow.compat.v1 as tf` before the star import expect.
    """
    import builtins
    import importlib

    tensorflow = builtins.__import__("tensorflow", {"__name__": "__main__"}, None, (), 0)
    if hasattr(tensorflow, "placeholder"):
        return tensorflow
    return importlib.import_module("tensorflow.compat.v1")


_UNCACHED = {"script_tensorflow": _script_tensorflow}
_LAZY = {"NPUOutputTensorHook": lambda: _output_tensor_hook_class(),
         **{name: (lambda name=name: _plain_hook_classes()[name])
            for name in ("NpuEmptyHook", "SetIterationsVarHook", "TellMeStepOrLossHook")},
         "experimental_options": _experimental_options}


def __getattr__(name):
    if name in _UNCACHED:
        return _UNCACHED[name]()
    if name in _LAZY:
        value = _LAZY[name]()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- util -------------------------------------------------------------------------------------------
def variable_initializer_in_host(var_list):
    """An op initialising `var_list` (host and device are the same process here)."""
    import tensorflow as tf

    return tf.compat.v1.variables_initializer(var_list, name="var_in_host")


def npu_compile(sess, *fetches):
    """Run `fetches` once (the adapter compiles the graph by running it)."""
    sess.run(fetches)


_global_dict: dict = {}


def global_dict_init():
    _global_dict.clear()


def set_value(key, value):
    _global_dict[key] = value


def get_value(key, def_value=None):
    return _global_dict.get(key, def_value)


# ---- hccl.split.api ---------------------------------------------------------------------------------
def _check_split(values, what):
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, (int, float)) and v >= 0 for v in values):
        raise ValueError(f"{what}: expected a list of non-negative numbers; got {values!r}")


def set_split_strategy_by_idx(idxList, group=_WORLD):  # noqa: N803 (the adapter's argument name)
    """Validated, then nothing: TensorFlow's collectives decide how gradients are packed here."""
    _check_split(idxList, "set_split_strategy_by_idx")


def set_split_strategy_by_size(dataSizeList, group=_WORLD):  # noqa: N803
    """Validated, then nothing: TensorFlow's collectives decide how gradients are packed here."""
    _check_split(dataSizeList, "set_split_strategy_by_size")


# ---- npu_scope --------------------------------------------------------------------------------------
@contextlib.contextmanager
def without_npu_compile_scope():
    """The block runs as written (nothing is compiled for an NPU here)."""
    yield


# ---- npu_init helpers -------------------------------------------------------------------------------
def npu_close():
    """Nothing to release here."""


def npu_config_proto(config_proto=None):
    """A ConfigProto (the given one, or a new one) with soft placement on, placement logging off and
    an NpuOptimizer entry (added once, as the adapter does), so `tf.Session(config=...)` is an
    NPUSession that honours the entry's options (all defaults when the entry was added here).

    The adapter also turns grappler's remapping and memory optimisation off, because its graph
    engine fuses on its own; here TensorFlow's fusions are what fusion_switch_file controls, so
    they are left as the proto has them.
    """
    from tensorflow.core.protobuf import config_pb2

    from ..config import param_map

    if not isinstance(config_proto, config_pb2.ConfigProto):
        config_proto = config_pb2.ConfigProto()
    if param_map.find_npu_optimizer(config_proto) is None:
        param_map.add_npu_optimizer(config_proto, {})
    config_proto.allow_soft_placement = True
    config_proto.log_device_placement = False
    return config_proto


def npu_session_config_init(session_config=None):
    """The adapter's name for npu_config_proto on a session config."""
    return npu_config_proto(session_config)


def npu_run_config_init(run_config=None):
    """The run config (a new tf.estimator.RunConfig if none) with an NPU session config."""
    from ..config import NPURunConfig
    from ..tf_estimator import RunConfig

    if not isinstance(run_config, NPURunConfig):
        run_config = RunConfig()
    return run_config.replace(session_config=npu_session_config_init(run_config.session_config))


def npu_hooks_append(hooks_list=None):
    """`hooks_list` (a new list if it is not one) with NPUBroadcastGlobalVariablesHook(0, RANK_ID) appended."""
    hook_class = _distribute("NPUBroadcastGlobalVariablesHook", "npu_bridge.npu_init.npu_hooks_append")
    if not isinstance(hooks_list, list):
        hooks_list = []
    hooks_list.append(hook_class(0, int(os.getenv("RANK_ID", "0"))))
    return hooks_list


def npu_graph_options(graph_options=None):
    """The GraphOptions given (a new one if none), unchanged."""
    from tensorflow.core.protobuf import config_pb2

    return graph_options if isinstance(graph_options, config_pb2.GraphOptions) else config_pb2.GraphOptions()


def npu_optimizer_options(optimizer_options=None):
    """The OptimizerOptions given (a new one if none), unchanged."""
    from tensorflow.core.protobuf import config_pb2

    if isinstance(optimizer_options, config_pb2.OptimizerOptions):
        return optimizer_options
    return config_pb2.OptimizerOptions()


def init_resource(config=None):
    """A session (for `config`, a new ConfigProto if none) and a shutdown op, as the adapter's
    init_resource; records the rank ids for get_npu_*."""
    import tensorflow as tf

    from .npu_ops import initialize_system, shutdown_system

    name = "npu_bridge.npu_init.init_resource"
    global_dict_init()
    sess = tf.compat.v1.Session(config=npu_session_config_init(config))
    sess.run(initialize_system())
    for key, function in (("npu_rank_id", "get_rank_id"), ("npu_local_rank_id", "get_local_rank_id"),
                          ("npu_rank_size", "get_rank_size"), ("npu_local_rank_size", "get_local_rank_size")):
        set_value(key, _distribute(function, name)())
    return sess, shutdown_system()


def shutdown_resource(sess, npu_shutdown):
    sess.run(npu_shutdown)


def close_session(sess):
    sess.close()


def get_npu_rank_id():
    return get_value("npu_rank_id", 0)


def get_npu_local_rank_id():
    return get_value("npu_local_rank_id", 0)


def get_npu_rank_size():
    return get_value("npu_rank_size", 1)


def get_npu_local_rank_size():
    return get_value("npu_local_rank_size", 1)


# ---- optimizers -------------------------------------------------------------------------------------
def npu_tf_optimizer(opt):
    """`NPUDistributedOptimizer(opt)`: gradients averaged over ranks (opt itself with one rank)."""
    return _distribute("NPUDistributedOptimizer", "npu_bridge.npu_init.npu_tf_optimizer")(opt)


def npu_keras_optimizer(opt):
    """The adapter's KerasDistributeOptimizer(opt): the optimizer with gradients averaged over ranks.

    With one rank there is nothing to average and `opt` is returned as it is. With several, a
    `tf.compat.v1.train.Optimizer` gets NPUDistributedOptimizer; a Keras optimizer cannot be
    wrapped here (Keras 3 has no gradient hook to patch), which raises AdapterAPIError.
    """
    import tensorflow as tf

    name = "npu_bridge.npu_init.npu_keras_optimizer"
    if _distribute("get_rank_size", name)() == 1:
        return opt
    if isinstance(opt, tf.compat.v1.train.Optimizer):
        return _distribute("NPUDistributedOptimizer", name)(opt)
    raise tables.AdapterAPIError(
        f"{name}: averaging a Keras optimizer's gradients over ranks is not supported by npurun (Keras 3 has "
        f"no gradient hook to patch); use a tf.compat.v1.train optimizer with npu_tf_optimizer, or NPUEstimator")


# ---- accepted with no effect ------------------------------------------------------------------------
class MemoryConfig:
    """The adapter's NPU memory policies, kept as given (they have no CPU/GPU counterpart)."""

    def __init__(self, atomic_clean_policy=0, static_memory_policy=0, memory_optimization_policy=None,
                 variable_use_1g_huge_page=0):
        self._atomic_clean_policy = atomic_clean_policy
        self._static_memory_policy = static_memory_policy
        self._memory_optimization_policy = memory_optimization_policy
        self._variable_use_1g_huge_page = variable_use_1g_huge_page


def decorator_tf_session(func):
    """The adapter wraps Session.__init__ to add its default NPU config; here `func` is returned as it is."""
    return func


def set_graph_exec_config(fetch, dynamic_input=False, dynamic_graph_execute_mode="dynamic_execute",
                          dynamic_inputs_shape_range=None, is_train_graph=False, experimental_config=None):
    """`fetch` itself: the attributes the adapter sets are read only by the Ascend graph engine."""
    return fetch


class NpuExecutePlacement(enum.Enum):
    """The adapter's placement choices for npu_variable_scope (read only by the Ascend graph engine)."""

    ALL = "all"
    CUBE = "cube"
    VECTOR = "vector"
    TAISHAN = "taishan"
    DVPP = "dvpp"
    HOST = "host"


@contextlib.contextmanager
def graph_engine_scope(*args, **kwargs):
    """The block runs as written: the attributes the adapter's scope sets are read only by the Ascend
    graph engine (placement, memory type, prefetch, engine choice); the results are the same."""
    yield


def npu_resource_init(*args, **kwargs):
    """Nothing to open here (the adapter's npu_plugin opens the NPU device)."""


def npu_resource_shutdown():
    """Nothing to release here."""


# ---- npu_rnn ----------------------------------------------------------------------------------------
def npu_dynamic_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """The adapter's npu_dynamic_rnn: `cell` over time-major `inputs` [time, batch, ...], unrolled with
    tf.compat.v1.nn.static_rnn; returns (outputs stacked time-major, final state), as the adapter does."""
    import tensorflow as tf

    outputs, state = tf.compat.v1.nn.static_rnn(cell, tf.unstack(inputs, axis=0), initial_state=initial_state,
                                                dtype=dtype, sequence_length=sequence_length, scope=scope)
    return tf.stack(outputs, axis=0), state


def _keras_backend():
    """The backend of the Keras a TF1 script's `tf.keras` is under `npurun run` (tf-keras, Keras 2)."""
    from tf_keras.src import backend

    return backend


def set_keras_session_npu_config(config=None):
    """A session with the NPU session config (npu_session_config_init(config)) made tf.keras's session."""
    import tensorflow as tf

    session = tf.compat.v1.Session(config=npu_session_config_init(config))
    _keras_backend().set_session(session)
    return session


def npu_clear_session(config=None):
    """tf.keras's clear_session(), then a fresh session with the NPU session config as its session."""
    _keras_backend().clear_session()
    set_keras_session_npu_config(config)
