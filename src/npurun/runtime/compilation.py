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
  N > 1, whole mode: `loop_compilation(options)` says what is one XLA computation:
           "loop" (on a GPU): the dataset goes through stack_for_loop (one get_next gives N
           batches) and the Estimator's tf.while_loop over them is built by compile_step;
           "step" (on a CPU): the Estimator's own tf.while_loop with get_next inside, and each
           iteration's step (model_fn, optimizer, buffers) built by compile_step inside it.
  N > 1 otherwise: the Estimator's own tf.while_loop with get_next inside; nothing to call here
           (mixed mode clusters the loop body automatically).

Why a CPU compiles the step and not the loop (measured, docs/compilation.md "Device loops and XLA on
a CPU"): in a whole-loop computation XLA's CPU backend emits the gradient convolutions
(Conv2DBackpropFilter / Conv2DBackpropInput, whose dimension order is not the canonical one) as
generic elemental loops (`*Conv2DBackpropFilter*_elemental_kernel_module` in an XLA dump), where the
same convolutions compiled at a computation's top level are transposed into the canonical form
and run in its Eigen convolution kernel. A ResNet step runs many times slower that way. The step
compiled inside the executor's loop keeps the fast kernels; what it gives up (the executor's
per-iteration loop ops) costs microseconds per step. `NPURUN_XLA_DEVICE_LOOP` (npurun extension,
process environment) chooses: "auto" (default: "step" on a CPU, "loop" on a GPU, and "loop" for
dynamic_execute with ranged inputs, whose padding needs the stacked input), "step" or "loop";
a whole-loop computation with convolution gradients for a CPU warns with the measured cost
(`warn_loop_cost`). The rule and its measurements live in config/xla_advice.py (plain Python, read by
`npurun explain` too).
`device_loop` below is the same loop for sess.run scripts. `step_fn` builds one training step
(model_fn, optimizer, global_step update) and returns the loss (with the train op as a control
dependency); variables may be created inside it.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..config.xla_advice import CPU_CONV_LOOP_SLOWDOWN, LOOP_ENV, LOOP_VALUES, loop_rule, loop_setting  # noqa: F401
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


CONV_GRADIENT_OPS = frozenset({
    "Conv2DBackpropFilter", "Conv2DBackpropInput", "Conv3DBackpropFilterV2", "Conv3DBackpropInputV2",
    "DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropInput"})


class XlaLoopCostWarning(UserWarning):
    """An XLA computation holds a loop over convolution gradients for a CPU (see `warn_loop_cost`)."""


def loop_compilation(options: Options, gpu: bool | None = None,
                     environ: Mapping[str, str] = os.environ) -> str:
    """What XLA compiles of a device loop (iterations_per_loop > 1): "none" (XLA is off or mixed),
    "loop" (the whole loop is one computation: its input must be stacked) or "step" (each
    iteration's step is one computation inside the executor's loop). See the module rules."""
    choice = resolve_jit(options, gpu)
    if choice.mode != "whole":
        return "none"
    if loop_setting(environ) == "auto" and _pads_ranged_inputs(options):
        # dynamic_execute compiles once for the range by padding the stacked input outside the
        # computation (dynamic_inputs.py); a get_next inside the executor's loop is not padded.
        return "loop"
    return loop_rule(choice.device_type == "XLA_GPU_JIT", environ)


def _pads_ranged_inputs(options: Options) -> bool:
    return bool(options.get("dynamic_input") and options.get("dynamic_inputs_shape_range")
                and (options.get("dynamic_graph_execute_mode") or "dynamic_execute") == "dynamic_execute")


def loop_is_compiled(options: Options, gpu: bool | None = None) -> bool:
    """True when the device loop must be one XLA computation (then its input must be stacked)."""
    return loop_compilation(options, gpu) == "loop"


def _inside_loop(op, graph) -> bool:
    """Whether `op` (in an xla.compile computation) sits in a tf.while_loop built inside it."""
    context = op._get_control_flow_context()
    while context is not None:
        if context.IsWhileContext():
            return True
        if context.IsXLAContext():
            return False  # reached the computation's own context: the loop (if any) is outside it
        context = context.outer_context
    return False


def looped_conv_gradients(graph, ops) -> list:
    """The convolution-gradient ops among `ops` that run in a loop inside their XLA computation
    (tf.while_loop of TF 1 control flow, or the body function of a While op among `ops`)."""
    found = [op for op in ops if op.type in CONV_GRADIENT_OPS and _inside_loop(op, graph)]
    bodies = [op.get_attr("body").name for op in ops if op.type in ("While", "StatelessWhile")]
    if bodies:
        library = {f.signature.name: f for f in graph.as_graph_def().library.function}
        seen, todo = set(), list(bodies)
        while todo:
            name = todo.pop()
            if name in seen or name not in library:
                continue
            seen.add(name)
            for node in library[name].node_def:
                if node.op in CONV_GRADIENT_OPS:
                    found.append(node)
                for attr in node.attr.values():
                    if attr.HasField("func"):
                        todo.append(attr.func.name)
    return found


def loop_cost_message(count: int) -> str:
    return (f"npurun XLA: this XLA computation runs {count} convolution gradient op(s) inside a loop on the CPU; "
            f"XLA's CPU backend emits those as generic loops, not its convolution kernels: measured "
            f"{CPU_CONV_LOOP_SLOWDOWN:.0f}x slower per step than compiling each step (docs/compilation.md). "
            f"Unset {LOOP_ENV} (or set it to 'step') to compile the step inside the loop, or use "
            f"jit_compile='false' (docs/compilation.md)")


def warn_loop_cost(graph, ops, device_type: str) -> bool:
    """Warn (XlaLoopCostWarning, with the measured cost) when a CPU computation of `ops` loops over
    convolution gradients; returns whether it warned."""
    if device_type != "XLA_CPU_JIT":
        return False
    found = looped_conv_gradients(graph, ops)
    if found:
        warnings.warn(loop_cost_message(len(found)), XlaLoopCostWarning, stacklevel=3)
    return bool(found)


# --------------------------------------------------------------------------- building the step

def compile_step(options: Options, fn: Callable[..., Any], inputs: Sequence = ()):
    """Build `fn(*inputs)` into the current graph, as one XLA computation in "whole" mode.

    In "whole" mode the ops `fn` creates are marked for one XLA cluster (xla.compile semantics:
    variables created inside are placed outside it, resource variables are used, summaries inside
    are dropped); the result has `fn`'s structure (a single tensor stays a tensor; an op, or None,
    becomes an op that runs the computation). In the other modes `fn(*inputs)` is called as is.
    """
    choice = resolve_jit(options)
    if choice.mode != "whole":
        return fn(*inputs)
    import tensorflow as tf
    from tensorflow.python.compiler.xla import xla
    from tensorflow.python.util import deprecation

    returned = {}

    def computation(*args):
        returned["value"] = fn(*args)
        return returned["value"]

    graph = tf.compat.v1.get_default_graph()
    before = len(graph.get_operations())
    with deprecation.silence():  # xla.compile is deprecated for eager code; graph mode has no successor
        outputs = xla.compile(computation, list(inputs))
    warn_loop_cost(graph, graph.get_operations()[before:], choice.device_type)
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
