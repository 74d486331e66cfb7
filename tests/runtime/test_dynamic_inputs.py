"""dynamic_input / dynamic_inputs_shape_range: shapes applied to dataset (getnext) and placeholder
(data) inputs, and out-of-range sizes failing with a message naming input, dimension, value and
range."""
import re

import numpy as np
import pytest
import tensorflow as tf

from helpers import mlp_step, options, session_for, v1
from npurun.runtime import compilation, dynamic_inputs


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
