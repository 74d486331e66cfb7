"""XLA control: `jit_compile` and `mix_compile_mode`.

Rules:
  - `jit_compile="false"`: XLA never compiles (the session's global_jit_level is OFF).
  - `jit_compile="true"` with `mix_compile_mode=False` ("full sink", the Ascend default): the whole
    training step is one XLA computation, and with iterations_per_loop > 1 the whole device loop
    is. The Estimator builds the step through `compile_step` (see below). An op XLA cannot compile
    for the device is a ValueError naming the op, its type and the reason, raised by a graph
    transform when the graph is finalised, before anything runs (xla_coverage.py).
  - `jit_compile="true"` with `mix_compile_mode=True` ("mixed"): XLA auto-clustering
    (global_jit_level ON_1; on a CPU, where TensorFlow fixes its auto-clustering policy at the
    first session of a process, a graph transform also marks every op as a compilation candidate,
    see `mark_for_compilation`): XLA compiles the clusters it can and the other ops run in the
    TensorFlow executor. `compile_step` then builds the step plainly.
  - `jit_compile="auto"`: on a GPU as "true"; on a CPU as "false". Why: measured on this project's
    2-core CPU (docs/compilation.md, `bench/compile_cache.py --modes`), XLA adds seconds of
    compilation before the first step and its steady-state step time is within noise of, or worse
    than, TensorFlow's oneDNN kernels; on GPUs XLA's fusion removes kernel launches and memory
    round trips, which is where it pays off.
  - When the session config given by the user sets global_jit_level and jit_compile is "auto",
    the user's setting is kept.

How the Estimator uses it (iterations_per_loop = N; estimator/compiled_step.py, device_loop.py):
  N == 1:  model_fn's step is built by compile_step(options, step_fn, input tensors).
  N > 1 and loop_is_compiled(options): the dataset goes through stack_for_loop (one get_next
           gives N batches) and the Estimator's tf.while_loop over them is built by compile_step.
  N > 1 otherwise: the Estimator's own tf.while_loop with get_next inside; nothing to call here
           (mixed mode clusters the loop body automatically).
`device_loop` below is the same loop for sess.run scripts. `step_fn` builds one training step
(model_fn, optimizer, global_step update) and returns the loss (with the train op as a control
dependency); variables may be created inside it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .plan import Options, SessionPlan
# The Estimator and dynamic_execute reach these through this module.
from . import xla_coverage
from .xla_coverage import COMPILE_ID_ATTR, whole_step_check  # noqa: F401

JIT_VALUES = ("auto", "true", "false")


@dataclass(frozen=True)
class JitChoice:
    """What jit_compile and mix_compile_mode resolve to for this machine.

    mode: "off", "whole" (one XLA computation per step/loop) or "mixed" (auto-clustering).
    device_type: the XLA compilation device ("XLA_CPU_JIT" or "XLA_GPU_JIT").
    reason: one line saying why, for messages.
    """

    mode: str
    device_type: str
    reason: str

    @property
    def compiles(self) -> bool:
        return self.mode != "off"


def has_gpu() -> bool:
    """Whether TensorFlow sees a GPU in this process."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def resolve_jit(options: Options, gpu: bool | None = None) -> JitChoice:
    """The JitChoice for `options` (see module rules); `gpu` overrides device detection."""
    gpu = has_gpu() if gpu is None else gpu
    device_type = "XLA_GPU_JIT" if gpu else "XLA_CPU_JIT"
    value = options.get("jit_compile", "auto")
    if value == "false":
        return JitChoice("off", device_type, "jit_compile='false'")
    if value == "auto" and not gpu:
        return JitChoice("off", device_type, "jit_compile='auto' does not compile on a CPU")
    why = "jit_compile='true'" if value == "true" else "jit_compile='auto' compiles on a GPU"
    if options.get("mix_compile_mode", False):
        return JitChoice("mixed", device_type, why + ", mix_compile_mode=True: auto-clustering")
    return JitChoice("whole", device_type, why + ", mix_compile_mode=False: the whole step is compiled")


def explained_compile_errors(options: Options, graph):
    """A context manager: XLA compilation failures of the step re-raised naming the op
    (`xla_coverage.explained_compile_errors`), for the JitChoice of `options`."""
    return xla_coverage.explained_compile_errors(resolve_jit(options), graph)


def loop_is_compiled(options: Options) -> bool:
    """True when the device loop must be one XLA computation (then its input must be stacked)."""
    return resolve_jit(options).mode == "whole"


# --------------------------------------------------------------------------- building the step

def compile_step(options: Options, fn: Callable[..., Any], inputs: Sequence = ()):
    """Build `fn(*inputs)` into the current graph, as one XLA computation in "whole" mode.

    In "whole" mode the ops `fn` creates are marked for one XLA cluster (xla.compile semantics:
    variables created inside are placed outside it, resource variables are used, summaries inside
    are dropped); the result has `fn`'s structure (a single tensor stays a tensor; an op, or None,
    becomes an op that runs the computation). In the other modes `fn(*inputs)` is called as is.
    """
    if resolve_jit(options).mode != "whole":
        return fn(*inputs)
    from tensorflow.python.compiler.xla import xla
    from tensorflow.python.util import deprecation

    returned = {}

    def computation(*args):
        returned["value"] = fn(*args)
        return returned["value"]

    with deprecation.silence():  # xla.compile is deprecated for eager code; graph mode has no successor
        outputs = xla.compile(computation, list(inputs))
    value = returned.get("value")
    if _is_tensor(value) and isinstance(outputs, (list, tuple)) and len(outputs) == 1:
        return outputs[0]
    return outputs


def _is_tensor(value) -> bool:
    import tensorflow as tf

    return isinstance(value, tf.Tensor)


def stack_for_loop(dataset, iterations: int):
    """`dataset` with `iterations` consecutive elements stacked into one (for `device_loop`)."""
    return dataset.batch(iterations, drop_remainder=True)


def device_loop(step_fn: Callable[[Any], Any], iterations: int, stacked) -> Any:
    """Run `step_fn(element_i)` for i < iterations over the leading axis of `stacked`.

    Returns the per-iteration losses, a float32 tensor of shape [iterations]. Built with
    tf.while_loop and a fixed trip count, so XLA can compile the loop as a whole.
    """
    import tensorflow as tf

    flat = tf.nest.flatten(stacked)

    def body(i, losses):
        element = tf.nest.pack_sequence_as(stacked, [t[i] for t in flat])
        loss = tf.cast(step_fn(element), tf.float32)
        return i + 1, losses.write(i, loss)

    losses = tf.TensorArray(tf.float32, size=iterations)
    _, losses = tf.while_loop(lambda i, _: i < iterations, body, (tf.constant(0), losses),
                              maximum_iterations=iterations)
    return losses.stack()



def mark_for_compilation(graph, mode: str) -> None:
    """A graph transform: mark every op as an XLA candidate (`_XlaCompile`, one `_XlaScope`).

    Why not only global_jit_level: TensorFlow fixes the CPU's auto-clustering policy when it first
    registers the XLA CPU device (the first session of the process), from tf_xla_cpu_global_jit;
    after that ON_1 never clusters CPU ops. Explicit marks are honoured at any time, and the
    clustering pass still leaves out the ops XLA cannot compile, which run in TensorFlow.
    """
    from tensorflow.core.framework import attr_value_pb2

    compile_attr = attr_value_pb2.AttrValue(b=True)
    scope_attr = attr_value_pb2.AttrValue(s=b"npurun_mixed")
    for op in graph.get_operations():
        op._set_attr("_XlaCompile", compile_attr)  # before finalize, as jit_scope would at creation
        op._set_attr("_XlaScope", scope_attr)



# --------------------------------------------------------------------------- the plan

def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    """Set the session's JIT level and, in whole mode, the compilability check (module rules)."""
    import tensorflow as tf

    choice = resolve_jit(options)
    optimizer_options = plan.config_proto.graph_options.optimizer_options
    levels = tf.compat.v1.OptimizerOptions
    user_chose = optimizer_options.global_jit_level != levels.DEFAULT
    if not (user_chose and options.get("jit_compile", "auto") == "auto"):
        # "whole" compiles only what compile_step marked; auto-clustering on top would split it.
        optimizer_options.global_jit_level = levels.ON_1 if choice.mode == "mixed" else levels.OFF
    if choice.mode == "mixed" and choice.device_type == "XLA_CPU_JIT":
        plan.graph_transforms.append(mark_for_compilation)
    if choice.mode == "whole":
        plan.graph_transforms.append(whole_step_check(choice.device_type))
