"""Loop sinking: N training steps inside one Session.run (iterations_per_loop > 1).

The graph: a `tf.while_loop` of N iterations. Each iteration takes the next input element (the
input's get_next lives inside the loop, as `enable_data_pre_proc=True` asks) and runs model_fn's
training step; the next iteration starts only after the train_op ran, so each iteration's
variable updates complete before the next one reads the variables.

When a finite input ends inside a loop, get_next fails in the iteration after the last element:
that iteration has not touched any state yet, the ones before it are complete (variable updates
are not rolled back), so the run ends with OutOfRangeError and the global step counts exactly the
steps that ran. The training loop takes that as the normal end of training, reports the losses
and host_call values of the iterations that ran (still in the buffers below), and checkpoints.

Per iteration the loop keeps the loss and, for `NPUEstimatorSpec.host_call`, the host_call
tensors, in local [N, ...] buffer variables read after the run, so the host can
log every iteration's loss and produce host_call summaries for any step of the loop.

model_fn is called inside the loop body, so its ops live there, named as outside a loop (the loop's
name scope is not theirs: variables keep the names evaluate and predict give them). Its `tf.compat.v1.summary` ops
are lifted to the host like host_call tensors, and hooks fetching its loss get the last
iteration's value (see host_values.py).

With whole-step XLA compilation, `runtime.compilation.loop_compilation` decides. "loop" (a GPU):
the loop is one XLA computation; the input is read outside it, N elements stacked by one
get_next, so a finite input's last N-1 elements at most (a partial loop) are not trained on.
"step" (a CPU): the loop stays the executor's, get_next inside it, and each iteration's step is
one XLA computation (XLA's CPU backend runs convolution gradients inside a compiled loop as generic
loops, many times slower; see runtime/compilation.py).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

import numpy as np
import tensorflow as tf

from . import compiled_step, host_values, inner_fetches
from .inputs import split_element
from .spec import ModeKeys

_v1 = tf.compat.v1


@dataclass
class LoopOutputs:
    """Tensors of the loop, all fetchable from the outer graph.

    step_after: global step after the loop; losses: float32 [N]; loss: their mean (NaN if any
    is NaN); host_values: list of [N, ...] host_call tensors (empty without host_call).
    """

    step_after: Any
    losses: Any
    loss: Any
    host_values: List[Any]
    host_call: Optional[tuple] = None  # (fn, tensors of one iteration): model_fn's host_call and summaries
    # The buffers read without running the loop: after a loop the input ended inside, they hold
    # the values of the iterations that ran.
    buffered_losses: Any = None
    buffered_host_values: List[Any] = None
    # Tensors hooks fetch by name: those LoggingTensorHooks name ('learning_rate', 'loss/total_loss') and the
    # scalars model_fn named at its top level ('loss', 'total_loss' for a before_run fetching 'loss:0'), found in
    # the loop body: (the tensor there, its last iteration's value outside), so hooks get what they get on Ascend.
    named: List[Any] = None


def check_input(inp, iterations: int) -> None:
    """Loop sinking needs a tf.data.Dataset input (its iterator is re-read inside the loop)."""
    if inp.dataset is None:
        raise ValueError(f"iterations_per_loop={iterations} needs input_fn to return a tf.data.Dataset; it "
                         f"returned tensors (for example from a one-shot iterator), which cannot be read inside "
                         f"a device loop. Return the dataset itself, or use iterations_per_loop=1")


def build(estimator, inp, iterations: int, global_step, compile_loop: Optional[Callable] = None,
          hooks=(), compile_iteration: Optional[Callable] = None) -> tuple:
    """Build the loop; returns (the EstimatorSpec model_fn returned inside it, LoopOutputs).

    `compile_loop(fn, inputs)`, when given, builds `fn(*inputs)` as one XLA computation (see
    runtime.compilation.compile_step); the input is then read outside the loop: one get_next
    gives the N elements of the loop stacked (the dataset was batched by N), and iteration i
    takes the i-th of them. Tensors that `hooks` (and model_fn's training hooks) name by string, and the
    scalars model_fn names at its top level, are kept from the last iteration (`LoopOutputs.named`).
    `compile_iteration(fn, inputs)` instead builds each iteration's step (model_fn and the buffer
    writes) as one XLA computation inside the loop, whose get_next stays outside it (how a CPU
    compiles a device loop: runtime.compilation.loop_compilation).
    """
    captured = {}
    named = []  # (tensor in the body, its one-slot buffer)
    buffers: List[Any] = []
    # Slots 0..N-1: each iteration's loss; slot N: the iterations done in this run (exact in
    # float32), written by the same op, so a loop the input ended inside says how far it got.
    loss_buffer = _buffer("loss", tf.TensorSpec([], tf.float32), iterations + 1)

    def train_step(i, features, labels):
        # model_fn's names are those it has outside a loop (evaluate, predict and export build it so): a
        # loop body is under the loop's name scope (control flow v1), which Keras layers' variables would
        # take ('npurun_device_loop/dense/kernel'), and the checkpoint would not restore in other modes.
        with _v1.get_default_graph().name_scope(None):
            return _train_step(i, features, labels)

    def _train_step(i, features, labels):
        before = {op.name for op in _v1.get_default_graph().get_operations()}
        with host_values.lifting(static_shapes=True) as lifted, _checkpoint_initializers_outside():
            spec = estimator.call_model_fn(features, labels, ModeKeys.TRAIN)
        host_call = host_values.combine(spec.host_call, lifted.host_call(after=spec.train_op))
        captured.setdefault("spec", spec)
        captured.setdefault("host_call", host_call)
        updates = []
        for tensor in inner_fetches.named_in_body(list(hooks) + list(spec.training_hooks)
                                                  + list(spec.training_chief_hooks)) + \
                inner_fetches.named_scalars_in_body(before):
            if tensor.shape.is_fully_defined() and all(t is not tensor for t, _ in named):
                slot = _buffer(f"named_{len(named)}", tensor, 1)
                named.append((tensor, slot))
                updates.append(_v1.scatter_update(slot, [0], tf.expand_dims(tensor, 0)))
        if host_call is not None:
            for k, tensor in enumerate(host_call[1]):
                if len(buffers) <= k:
                    buffers.append(_buffer(k, tensor, iterations))
                updates.append(_v1.scatter_update(buffers[k], [i], tf.expand_dims(tensor, 0)))
        with tf.control_dependencies([spec.train_op] + updates):
            loss = tf.cast(tf.identity(spec.loss), tf.float32)
            done = tf.cast(i + 1, tf.float32)
            return _v1.scatter_update(loss_buffer, tf.stack([i, iterations]), tf.stack([loss, done]))

    def run_loop(*stacked):
        def body(i):
            # Sequencing: every op of this iteration waits for `i`, and `i` of the next iteration is
            # produced only after this iteration's train_op ran. Without that, iterations of a while
            # loop overlap and a step could read variables before the previous step's update.
            with tf.control_dependencies([i]):
                if compile_loop is None:
                    features, labels = split_element(inp.iterator.get_next())
                else:  # iteration i's slice of the N stacked elements
                    features, labels = compiled_step.repack(structure, leaves, positions, [t[i] for t in stacked])
            if compile_iteration is None:
                done = train_step(i, features, labels)
            else:
                done = _compiled_iteration(compile_iteration, train_step, i, features, labels)
            with tf.control_dependencies([done]):
                return (i + 1,)

        # A static trip count lets XLA compile the loop; the plain loop does without its extra counter.
        bound = iterations if compile_loop is not None else None
        count, = tf.while_loop(lambda i: i < iterations, body, (tf.constant(0),), name="npurun_device_loop",
                               maximum_iterations=bound)
        return count

    if compile_loop is None:
        count = run_loop()
    else:
        structure = (inp.features, inp.labels)
        leaves, positions = compiled_step.tensor_leaves(structure)
        count = compile_loop(run_loop, [leaves[k] for k in positions])
    with tf.control_dependencies([count]):
        step_after = global_step.read_value()
        losses = loss_buffer.read_value()[:iterations]
        values = [buffer.read_value() for buffer in buffers]
        last_named = [(tensor, slot.read_value()[0]) for tensor, slot in named]
    outputs = LoopOutputs(step_after, losses, tf.reduce_mean(losses), values, captured["host_call"],
                          loss_buffer.read_value(), [buffer.read_value() for buffer in buffers],
                          last_named)
    return captured["spec"], outputs


def _compiled_iteration(compile_iteration, train_step, i, features, labels):
    """`train_step(i, features, labels)` built by `compile_iteration` as one computation; its output
    (i, once the step ran) is what the loop waits for."""
    structure = (features, labels)
    leaves, positions = compiled_step.tensor_leaves(structure)

    def computation(index, *tensors):
        f, l = compiled_step.repack(structure, leaves, positions, tensors)
        with tf.control_dependencies([train_step(index, f, l)]):
            return tf.identity(index)

    return compile_iteration(computation, [i] + [leaves[k] for k in positions])


@contextlib.contextmanager
def _checkpoint_initializers_outside():
    """`tf.compat.v1.train.init_from_checkpoint` in model_fn (BERT's pretrained weights) replaces each variable's
    initializer with a restore from the checkpoint, built where it is called: inside the loop body that would be
    an op of the loop's frame, which the variables' initializer (run once, outside the loop) cannot use. Built
    under `init_scope` it is outside the loop, as the variables themselves are, and as TF 1.15 built it (model_fn
    outside any loop)."""
    from tensorflow.python.training import checkpoint_utils

    original = checkpoint_utils._set_checkpoint_initializer

    def set_checkpoint_initializer(*args, **kwargs):
        with _v1.init_scope():
            return original(*args, **kwargs)

    checkpoint_utils._set_checkpoint_initializer = set_checkpoint_initializer
    try:
        yield
    finally:
        checkpoint_utils._set_checkpoint_initializer = original


def _buffer(k, tensor, iterations):
    if not tensor.shape.is_fully_defined():
        raise ValueError(f"host_call tensor {tensor.name} has shape {tensor.shape}; with iterations_per_loop > 1 "
                         f"host_call tensors need a static shape")
    # A local variable: not checkpointed, created once (init_scope lifts it out of the loop).
    return _v1.get_variable(f"npurun_device_loop/buffer_{k}", [iterations] + tensor.shape.as_list(), tensor.dtype,
                            initializer=_v1.zeros_initializer(), trainable=False,
                            collections=[_v1.GraphKeys.LOCAL_VARIABLES], use_resource=True)


class HostCall:
    """Runs `host_call` fn on the host for chosen iterations' values and writes its summaries.

    `host_call` is (fn, list of tensors), as `host_values.combine` gives it (which also turns a
    dict host_call into that form). fn is called once, at graph building, with placeholders shaped
    like one iteration's tensors; the summary ops it returns are run with each chosen iteration's
    values fed.
    """

    def __init__(self, host_call, iteration_tensors: List[Any]):
        fn, _ = host_call
        graph = _v1.get_default_graph()
        before = list(graph.get_collection(_v1.GraphKeys.SUMMARIES))
        self.placeholders = [_v1.placeholder(t.dtype, t.shape, name=f"npurun_host_call_input_{k}")
                             for k, t in enumerate(iteration_tensors)]
        outputs = fn(*self.placeholders)
        # The host_call's summaries run only here, with fed values: keep them out of merge_all().
        summaries = graph.get_collection_ref(_v1.GraphKeys.SUMMARIES)
        summaries[:] = before
        outputs = [o for o in tf.nest.flatten(outputs) if o is not None] if outputs is not None else []
        strings = [o for o in outputs if isinstance(o, tf.Tensor) and o.dtype == tf.string]
        others = [o for o in outputs if not (isinstance(o, tf.Tensor) and o.dtype == tf.string)]
        self.summary = _v1.summary.merge(strings) if strings else None
        self.others = others

    def write(self, sess, writer, values: List[np.ndarray], steps: List[int], first_step: int) -> None:
        """For each global step in `steps`, feed the values of the iteration that reached it."""
        fetches = [self.summary] + self.others if self.summary is not None else self.others
        if not fetches:
            return
        for step in steps:
            k = step - first_step
            results = sess.run(fetches, feed_dict={p: v[k] for p, v in zip(self.placeholders, values)})
            if self.summary is not None and writer is not None:
                writer.add_summary(results[0], step)


def scheduled_steps(previous: int, step: int, every: Optional[int]) -> List[int]:
    """The multiples of `every` in (previous, step]."""
    if not every:
        return []
    first = (previous // every + 1) * every
    return list(range(first, step + 1, every))

