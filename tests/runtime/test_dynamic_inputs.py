"""dynamic_input / dynamic_inputs_shape_range: shapes applied to dataset (getnext) and placeholder
(data) inputs, and out-of-range sizes failing with a message naming input, dimension, value and
range. dynamic_graph_execute_mode: under whole-step XLA compilation, one compilation for the range
(dynamic_execute) against one per distinct shape (lazy_recompile), counted in what XLA compiled."""
import json
import re
import warnings

import numpy as np
import pytest
import tensorflow as tf

from helpers import batch, mlp_step, options, run_python, session_for, v1
from npurun.runtime import compilation, dynamic_inputs
from npurun.runtime.contributors import build_plan


def dataset_step(batch_size, apply=True, labels_range=True):
    def build(opts):
        xs = np.random.RandomState(0).rand(200, 8).astype(np.float32)
        ys = np.zeros(200, np.int32)
        dataset = tf.data.Dataset.from_tensor_slices(({"x": xs}, ys)).batch(batch_size)
        if apply:
            dataset = dynamic_inputs.apply_to_dataset(opts, dataset)
        iterator = v1.data.make_initializable_iterator(dataset)
        features, labels = iterator.get_next()
        build.static = (features["x"].shape.as_list(), labels.shape.as_list())
        loss = compilation.compile_step(opts, mlp_step, [features["x"], labels])
        return loss, {}, [iterator.initializer]
    return build


RANGES = "getnext:[2~64,8],[2~64]"


def test_batches_in_range_run_and_fixed_dims_become_static():
    build = dataset_step(32)
    with session_for(options(dynamic_input=True, dynamic_inputs_shape_range=RANGES), build) as built:
        loss, _ = built.run()
    assert np.isfinite(loss)
    assert build.static == ([None, 8], [None])


@pytest.mark.parametrize("apply", [True, False])  # False: the graph transform checks the GetNext
def test_batch_out_of_range_names_input_dimension_value_and_range(apply):
    with session_for(options(dynamic_input=True, dynamic_inputs_shape_range=RANGES),
                     dataset_step(100, apply=apply)) as built:
        with pytest.raises(tf.errors.InvalidArgumentError) as caught:
            built.run()
    message = str(caught.value)
    # Both inputs (features [100, 8], labels [100]) break their 2~64 batch range; the executor runs
    # the two checks in parallel, so either may be the one reported.
    assert re.search(r"dynamic_inputs_shape_range: getnext input [01] \(", message), message
    assert "dimension 0: size" in message and "[100]" in message and "is outside 2~64" in message


def test_without_dynamic_input_nothing_is_checked():
    with session_for(options(dynamic_inputs_shape_range=RANGES), dataset_step(100)) as built:
        assert np.isfinite(built.run()[0])


def test_range_count_must_match_the_inputs():
    with pytest.raises(ValueError, match="gives 1 getnext shape.*2 getnext input"):
        with session_for(options(dynamic_input=True, dynamic_inputs_shape_range="getnext:[2~64,8]"),
                         dataset_step(32)):
            pass


def test_range_rank_must_match_the_input():
    with pytest.raises(ValueError, match=r"getnext input 0 \(0/x\) has rank 2"):
        with session_for(options(dynamic_input=True, dynamic_inputs_shape_range="getnext:[2~64],[2~64]"),
                         dataset_step(32)):
            pass


def placeholders(names):
    def build(opts):
        a = v1.placeholder(tf.float32, [None, 3], name=names[0])
        b = v1.placeholder(tf.float32, [None], name=names[1])
        return tf.reduce_sum(a) + tf.reduce_sum(b), {}, []
    return build


@pytest.mark.parametrize("names,first", [
    (("Placeholder", "Placeholder_1"), "a"),  # no names given: definition order
    (("zeta", "alpha"), "b"),                 # names given: alphabetical order
])
def test_placeholders_follow_definition_or_name_order(names, first):
    ranges = "data:[1~4,3],[1~4]" if first == "a" else "data:[1~4],[1~4,3]"
    with session_for(options(dynamic_input=True, dynamic_inputs_shape_range=ranges), placeholders(names)) as built:
        a, b = built.graph.get_tensor_by_name(names[0] + ":0"), built.graph.get_tensor_by_name(names[1] + ":0")
        ok = {a: np.ones([2, 3]), b: np.ones([4])}
        assert built.session.run(built.fetch, ok) == 10.0
        with pytest.raises(tf.errors.InvalidArgumentError) as caught:
            built.session.run(built.fetch, {a: np.ones([2, 3]), b: np.ones([5])})
    index = 1 if first == "a" else 0
    assert f"data input {index} ({names[1]}), dimension 0: size" in str(caught.value)
    assert "[5]" in str(caught.value) and "is outside 1~4" in str(caught.value)


def test_scalar_ranges_and_fixed_sizes():
    def build(opts):
        n = v1.placeholder(tf.float32, [], name="Placeholder")
        v = v1.placeholder(tf.float32, [None], name="Placeholder_1")
        return n * tf.reduce_sum(v), {}, []
    with session_for(options(dynamic_input=True, dynamic_inputs_shape_range="data:[],[3]"), build) as built:
        n, v = (built.graph.get_tensor_by_name(f"{name}:0") for name in ("Placeholder", "Placeholder_1"))
        assert built.session.run(built.fetch, {n: 2.0, v: np.ones(3)}) == 6.0
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"data input 1 \(Placeholder_1\), dimension 0: "
                                                                 r"size\] \[4\] \[is not 3"):
            built.session.run(built.fetch, {n: 2.0, v: np.ones(4)})


# --------------------------------------------------------------------------- dynamic_graph_execute_mode

WHOLE = dict(jit_compile="true", dynamic_input=True)
SIZES = [5, 5, 17, 17, 33, 33, 64, 64]  # 4 distinct batch sizes, in pairs for a 2-iteration loop

# A fresh process (the persistent compilation cache is a process-wide TF_XLA_FLAGS flag): each
# XLA compilation adds one entry to the cache folder, so the entries added while a session runs
# count its compilations.
COUNT_COMPILATIONS = """
import json, os
import numpy as np
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
from helpers import mlp_step, options, session_for, v1
from npurun.runtime import compilation, dynamic_inputs
CACHE, SIZES = %r, %r

def build(iterations):
    def build(opts):
        def element(n):
            x = tf.reshape(tf.range(n * 8, dtype=tf.float32) %% 7.0 / 7.0, [n, 8])
            return {"x": x}, tf.range(n, dtype=tf.int32) %% 4
        dataset = dynamic_inputs.apply_to_dataset(opts, tf.data.Dataset.from_tensor_slices(SIZES).map(element))
        if iterations == 1:
            iterator = v1.data.make_initializable_iterator(dataset)
            features, labels = iterator.get_next()
            return compilation.compile_step(opts, mlp_step, [features["x"], labels]), {}, [iterator.initializer]
        iterator = v1.data.make_initializable_iterator(compilation.stack_for_loop(dataset, iterations))
        step = lambda element: mlp_step(element[0]["x"], element[1])
        losses = compilation.compile_step(
            opts, lambda s: compilation.device_loop(step, iterations, s), [iterator.get_next()])
        return losses, {}, [iterator.initializer]
    return build

def entries():
    folder = os.path.join(CACHE, "kernel_cache")
    return len(os.listdir(folder)) if os.path.isdir(folder) else 0

result = {}
for mode, iterations in [("dynamic_execute", 1), ("lazy_recompile", 1), ("dynamic_execute", 2)]:
    before = entries()
    opts = options(jit_compile="true", dynamic_input=True, dynamic_graph_execute_mode=mode,
                   iterations_per_loop=iterations, dynamic_inputs_shape_range="getnext:[2~64,8],[2~64]",
                   op_compiler_cache_mode="enable", op_compiler_cache_dir=CACHE)
    with session_for(opts, build(iterations)) as built:
        losses = [np.ravel(built.run()[0]).tolist() for _ in range(len(SIZES) // iterations)]
    result[f"{mode}/{iterations}"] = {"compilations": entries() - before, "losses": sum(losses, [])}
print("NPURUN_RESULT " + json.dumps(result))
"""


def test_dynamic_execute_compiles_once_for_the_range_lazy_recompile_once_per_shape(tmp_path):
    out = run_python(COUNT_COMPILATIONS % (str(tmp_path), SIZES)).stdout
    result = json.loads(next(l for l in out.splitlines() if l.startswith("NPURUN_RESULT ")).split(" ", 1)[1])
    assert {key: run["compilations"] for key, run in result.items()} == {
        "dynamic_execute/1": 1,   # one executable for every batch size in 2~64
        "lazy_recompile/1": 4,    # one per distinct batch size
        "dynamic_execute/2": 1,   # a device loop over the stacked input too
    }
    # The padding changes nothing in what is computed: same losses, step by step.
    reference = result["lazy_recompile/1"]["losses"]
    assert len(set(np.round(reference, 4))) > 4
    for run in result.values():
        np.testing.assert_allclose(run["losses"], reference, rtol=1e-5)


def placeholder_mlp(opts):
    x = v1.placeholder(tf.float32, [None, 8], name="Placeholder")
    y = v1.placeholder(tf.int32, [None], name="Placeholder_1")
    return compilation.compile_step(opts, mlp_step, [x, y]), {}, []


def two_batches(built):
    feeds = [{built.graph.get_tensor_by_name("Placeholder:0"): x, built.graph.get_tensor_by_name("Placeholder_1:0"): y}
             for x, y in (batch(5, seed=1), batch(12, seed=2))]
    return [built.run(feed_dict=feed) for feed in feeds]


def test_dynamic_execute_feeds_xla_the_input_padded_to_its_bounds_with_the_real_size():
    ranges = "data:[1~16,8],[1~16]"
    runs = {}
    for mode in ("dynamic_execute", "lazy_recompile"):
        with session_for(options(**WHOLE, dynamic_graph_execute_mode=mode, dynamic_inputs_shape_range=ranges),
                         placeholder_mlp) as built:
            bounds = [op for op in built.graph.get_operations() if op.type == "XlaSetDynamicDimensionSize"]
            runs[mode] = (bounds, two_batches(built))
    bounds, results = runs["dynamic_execute"]
    # Both inputs: dimension 0 bounded at 16, inside the XLA computation, reading a Pad outside it.
    assert len(bounds) == 2
    for op in bounds:
        assert op.get_attr(compilation.COMPILE_ID_ATTR)
        assert op.inputs[0].op.type == "Pad" and op.inputs[0].shape.as_list()[0] == 16
        assert tf.get_static_value(op.inputs[1]) == 0
    for _, executed in results:
        assert {"Pad", "XlaLaunch"} <= executed
    lazy_bounds, lazy_results = runs["lazy_recompile"]
    assert lazy_bounds == [] and all("Pad" not in executed for _, executed in lazy_results)
    np.testing.assert_allclose([loss for loss, _ in results], [loss for loss, _ in lazy_results], rtol=1e-5)


@pytest.mark.parametrize("kwargs,message", [
    (dict(jit_compile="false", dynamic_graph_execute_mode="lazy_recompile",
          dynamic_inputs_shape_range=RANGES), "'lazy_recompile' has no effect here: XLA does not compile"),
    (dict(jit_compile="true", mix_compile_mode=True, dynamic_inputs_shape_range=RANGES),
     "cannot compile once for the whole range with mix_compile_mode=True"),
    (dict(jit_compile="true"), "'dynamic_execute' needs dynamic_inputs_shape_range"),
])
def test_execute_modes_without_their_mechanism_warn_when_the_plan_is_built(kwargs, message):
    with pytest.warns(UserWarning, match=message):
        build_plan(options(dynamic_input=True, **kwargs), "train")


@pytest.mark.parametrize("kwargs", [
    dict(jit_compile="true", dynamic_inputs_shape_range=RANGES),
    dict(jit_compile="true", dynamic_graph_execute_mode="lazy_recompile", dynamic_inputs_shape_range=RANGES),
    dict(jit_compile="false", dynamic_inputs_shape_range=RANGES),
])
def test_execute_modes_with_their_mechanism_build_silently(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_plan(options(dynamic_input=True, **kwargs), "train")


def test_unbounded_dimension_of_a_compiled_input_warns_and_is_not_padded():
    with pytest.warns(UserWarning, match=r"data input 0 \(Placeholder\), dimension\(s\) 0 have no upper bound"):
        with session_for(options(**WHOLE, dynamic_inputs_shape_range="data:[-1,8],[1~16]"), placeholder_mlp) as built:
            bounded = [op for op in built.graph.get_operations() if op.type == "XlaSetDynamicDimensionSize"]
    assert [op.inputs[0].shape.as_list() for op in bounded] == [[16]]  # only the labels


@pytest.mark.parametrize("index,warns", [(lambda x: x[-1], True), (lambda x: x[-2:], True),
                                         (lambda x: x[:-1], False), (lambda x: x[0], False)])
def test_slices_counting_from_the_padded_end_are_reported(index, warns):
    def build(opts):
        x = v1.placeholder(tf.float32, [None, 3], name="Placeholder")
        return compilation.compile_step(opts, lambda x: tf.reduce_sum(index(x)), [x]), {}, []

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with session_for(options(**WHOLE, dynamic_inputs_shape_range="data:[1~10,3]"), build):
            pass
    reported = [str(w.message) for w in caught if "constant negative index" in str(w.message)]
    assert bool(reported) == warns, reported
    if warns:
        assert "strided_slice" in reported[0] and "reads the padding" in reported[0]


def padded_ops(x):
    """Ops whose result depends on the length of dimension 1 of x ([batch, time, 6]), and a gradient."""
    w = tf.constant(np.random.RandomState(3).randn(3, 6, 5).astype(np.float32))
    conv = tf.nn.relu(tf.nn.conv1d(x, w, 1, "SAME"))
    image = tf.reshape(x[:, :, :4], [tf.shape(x)[0], tf.shape(x)[1], 2, 2])
    return tf.concat([
        tf.reduce_mean(x, [0, 1]), tf.reduce_max(x, [0, 1]), tf.reduce_min(x, [0, 1]),
        tf.reduce_logsumexp(x, [0, 1]), tf.math.reduce_variance(x, [0, 1]),
        tf.cast(tf.reshape(tf.argmax(x, 1), [-1]), tf.float32),
        tf.reshape(tf.nn.softmax(x, 1)[:, 0], [-1]), tf.reshape(tf.cumsum(x, 1, reverse=True)[:, 0], [-1]),
        tf.reshape(tf.math.top_k(tf.transpose(x, [0, 2, 1]), 2).values, [-1]),
        tf.reduce_mean(conv, [0, 1]), tf.reshape(tf.reduce_max(tf.nn.max_pool2d(image, 2, 1, "SAME"), [1, 2]), [-1]),
        tf.reshape(tf.gradients(tf.reduce_sum(tf.square(conv)), x)[0][:, 0], [-1]),
        tf.cast(tf.shape(x), tf.float32)], 0)


def test_dynamic_execute_computes_what_lazy_recompile_computes():
    def build(opts):
        x = v1.placeholder(tf.float32, [None, None, 6], name="Placeholder")
        return compilation.compile_step(opts, padded_ops, [x]), {}, []

    rng = np.random.RandomState(0)
    feeds = [-np.abs(rng.randn(2, t, 6)).astype(np.float32) - 0.1 for t in (3, 11)]  # all < 0: zeros would win a max
    values = {}
    for mode in ("dynamic_execute", "lazy_recompile"):
        opts = options(**WHOLE, dynamic_graph_execute_mode=mode, dynamic_inputs_shape_range="data:[2,1~16,6]")
        with session_for(opts, build) as built:
            x = built.graph.get_tensor_by_name("Placeholder:0")
            bounded = [op for op in built.graph.get_operations() if op.type == "XlaSetDynamicDimensionSize"]
            values[mode] = [built.session.run(built.fetch, {x: feed}) for feed in feeds]
        assert len(bounded) == (1 if mode == "dynamic_execute" else 0)
    for padded, exact in zip(values["dynamic_execute"], values["lazy_recompile"]):
        np.testing.assert_allclose(padded, exact, rtol=1e-5, atol=1e-6)


def test_the_applied_mark_survives_export_to_a_meta_graph():
    # Savers export the graph's collections with every checkpoint; a value protobuf cannot hold
    # is dropped with a logged warning at every save.
    graph = tf.Graph()
    with graph.as_default():
        dataset = tf.data.Dataset.from_tensor_slices(np.zeros([4, 8], np.float32)).batch(2)
        dynamic_inputs.apply_to_dataset(options(dynamic_input=True, dynamic_inputs_shape_range="getnext:[1~2,8]"),
                                        dataset)
        meta = v1.train.export_meta_graph()
    assert list(meta.collection_def[dynamic_inputs.APPLIED_COLLECTION].int64_list.value) == [1]
