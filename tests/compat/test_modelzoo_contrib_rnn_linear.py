"""DIEN's style (DIEN_ID0109, DIEN_ID3065): an attention GRU cell written on TF 1.15's private `_Linear` from
`tensorflow.contrib.rnn.python.ops.rnn_cell`, run by `tf.nn.dynamic_rnn`, and a shuffle helper whose local
`tf = open(...)` is a file, not TensorFlow. Checked against a NumPy GRU with the same weights; `npurun check`
must report neither as raising."""
import textwrap

from npurun.tools.check import check_source

from .conftest import run_compat

SCRIPT = textwrap.dedent("""\
    from npu_bridge.npu_init import *
    import os
    import tempfile
    import numpy as np
    import tensorflow as tf
    from tensorflow.contrib.rnn import *
    from tensorflow.contrib.rnn.python.ops.rnn_cell import  _Linear
    from tensorflow.contrib.rnn.python.ops import core_rnn_cell
    from tensorflow.python.ops import math_ops
    from tensorflow.python.ops import init_ops
    from tensorflow.python.ops import array_ops
    from tensorflow.python.ops import variable_scope as vs


    class AttGRUCell(RNNCell):
        def __init__(self, num_units, reuse=None):
            super(AttGRUCell, self).__init__(_reuse=reuse)
            self._num_units = num_units
            self._gate_linear = None
            self._candidate_linear = None

        @property
        def state_size(self):
            return self._num_units

        @property
        def output_size(self):
            return self._num_units

        def __call__(self, inputs, state, att_score=None):
            return self.call(inputs, state, att_score)

        def call(self, inputs, state, att_score=None):
            if self._gate_linear is None:
                with vs.variable_scope("gates"):
                    self._gate_linear = _Linear([inputs, state], 2 * self._num_units, True,
                                                bias_initializer=init_ops.constant_initializer(1.0))
            value = math_ops.sigmoid(self._gate_linear([inputs, state]))
            r, u = array_ops.split(value=value, num_or_size_splits=2, axis=1)
            if self._candidate_linear is None:
                with vs.variable_scope("candidate"):
                    self._candidate_linear = core_rnn_cell._Linear([inputs, r * state], self._num_units, True)
            c = math_ops.tanh(self._candidate_linear([inputs, r * state]))
            new_h = u * state + (1 - u) * c
            return new_h, new_h


    def shuffle(path):
        handle, tpath = tempfile.mkstemp(dir=os.path.dirname(path))
        tf = open(tpath, 'w')
        for line in open(path):
            tf.write(line)
        tf.close()
        os.close(handle)
        return tpath


    def main():
        rng = np.random.RandomState(0)
        data = rng.rand(2, 3, 4).astype(np.float32)
        inputs = tf.constant(data)
        with tf.variable_scope("gru1"):
            outputs, last = tf.nn.dynamic_rnn(AttGRUCell(5), inputs, dtype=tf.float32)
        names = sorted(v.name for v in tf.global_variables())
        print("names", names)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out, values = sess.run([outputs, {v.name: v for v in tf.global_variables()}])
        sig = lambda z: 1 / (1 + np.exp(-z))
        h = np.zeros((2, 5), np.float32)
        for t in range(3):
            x = data[:, t]
            gates = sig(np.concatenate([x, h], 1) @ values["gru1/rnn/gates/kernel:0"]
                        + values["gru1/rnn/gates/bias:0"])
            r, u = gates[:, :5], gates[:, 5:]
            c = np.tanh(np.concatenate([x, r * h], 1) @ values["gru1/rnn/candidate/kernel:0"]
                        + values["gru1/rnn/candidate/bias:0"])
            h = u * h + (1 - u) * c
        print("matches_numpy", np.allclose(out[:, -1], h, atol=1e-5))
        print("gate_bias_ones", bool(np.all(values["gru1/rnn/gates/bias:0"] == 1.0)))
        with open("lines.txt", "w") as f:
            f.write("a\\nb\\n")
        print("shuffled", open(shuffle(os.path.abspath("lines.txt"))).read().split())


    if __name__ == "__main__":
        main()
    """)


def test_linear_of_contrib_rnn_cell_and_a_local_tf_file_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert ("names ['gru1/rnn/candidate/bias:0', 'gru1/rnn/candidate/kernel:0', "
            "'gru1/rnn/gates/bias:0', 'gru1/rnn/gates/kernel:0']") in out, out
    assert "matches_numpy True" in out and "gate_bias_ones True" in out, out
    assert "shuffled ['a', 'b']" in out, out


def test_check_sees_neither_as_raising():
    findings = check_source(SCRIPT, "train.py")
    assert not [f for f in findings if f.error], [f for f in findings if f.error]
    assert not [f for f in findings if f.name.startswith("tensorflow.close")], findings
