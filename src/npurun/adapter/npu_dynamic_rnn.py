"""The adapter's fused RNN layers (`npu_bridge.estimator.npu.npu_dynamic_rnn`), written with TensorFlow ops.

On Ascend, `DynamicRNN` (an LSTM) and `DynamicGRUV2` (a GRU) each call one NPU kernel over the whole
time-major sequence. Here the same recurrence runs as a `tf.scan` over time: the same variables (names,
shapes, layout: one `[input + hidden, 4 * hidden]` LSTM weight with gates i, j, f, o; GRU weights
`[input, 3 * hidden]` and `[hidden, 3 * hidden]` with gates z, r, h and the reset applied after the
hidden product), the same outputs (every one time-major `[time, batch, hidden]`), and TensorFlow
differentiates it.

With `seq_length`, steps at or past a sequence's length output zeros and carry the state unchanged
(tf.nn.dynamic_rnn's rule). Options the scripts leave at their defaults and this does not compute
(`num_proj`, `use_peephole`, `keep_prob` < 1, `cell_depth` > 1) raise NotImplementedError naming them.
"""
from __future__ import annotations

import math

UNIDIRECTIONAL = "UNIDIRECTIONAL"
BIDIRECTIONAL = "BIDIRECTIONAL"


def _tf():
    import tensorflow as tf

    return tf.compat.v1


def _static(dimension):
    return getattr(dimension, "value", dimension)


def _sequence_mask(seq_length, time_size, dtype):
    """[time, batch, 1]: 1 while the step is within the sequence's length."""
    tf = _tf()
    mask = tf.sequence_mask(seq_length, maxlen=time_size, dtype=dtype)  # [batch, time]
    return tf.expand_dims(tf.transpose(mask), -1)


class _FusedRNN:
    """Shared by the LSTM and GRU layers: arguments, variable scope (reused on later calls), time layout."""

    _scope_name = "dynamic_rnn"
    _gates = 4

    def __init__(self, hidden_size, dtype, direction=UNIDIRECTIONAL, cell_depth=1, keep_prob=1.0, cell_clip=-1.0,
                 num_proj=0, time_major=True, activation="tanh", is_training=True):
        if direction not in (UNIDIRECTIONAL, BIDIRECTIONAL):
            raise ValueError(f"Invalid direction: {direction}, expecting {UNIDIRECTIONAL} or {BIDIRECTIONAL}")
        for name, value, default in (("cell_depth", cell_depth, 1), ("keep_prob", keep_prob, 1.0),
                                     ("num_proj", num_proj, 0), ("activation", activation, "tanh")):
            if value != default:
                raise NotImplementedError(f"{type(self).__name__}({name}={value!r}) is not computed by npurun "
                                          f"(only {name}={default!r})")
        self.hidden_size, self.direction, self.cell_clip = hidden_size, direction, cell_clip
        self.time_major, self.is_training = time_major, is_training
        self.dtype = _tf().as_dtype(dtype)
        self._scope = None

    def _variables(self, input_size, batch_size):
        raise NotImplementedError

    def _run(self, x, seq_length, state, weights, reverse):
        raise NotImplementedError

    def _enter(self, x):
        """Open the layer's variable scope (created on the first call, reused after) and its variables."""
        tf = _tf()
        if self._scope is None:
            with tf.variable_scope(None, default_name=self._scope_name) as scope:
                self._scope = scope
        return tf.variable_scope(self._scope, reuse=tf.AUTO_REUSE)

    def _time_major(self, x):
        tf = _tf()
        x = tf.convert_to_tensor(x)
        if not self.time_major:
            x = tf.transpose(x, [1, 0, 2])
        if _static(x.shape[2]) is None:
            raise ValueError("Expected input_shape[2] to be known, saw shape: input_size.")
        return x

    def _directions(self, outputs_per_direction):
        """One direction: its outputs; both: each output stacked [2, ...] (forward first), as the adapter does."""
        tf = _tf()
        if len(outputs_per_direction) == 1:
            outputs = outputs_per_direction[0]
        else:
            outputs = [tf.stack(pair, axis=0) for pair in zip(*outputs_per_direction)]
        if not self.time_major:
            outputs = [tf.transpose(o, [0, 2, 1, 3] if len(outputs_per_direction) > 1 else [1, 0, 2])
                       for o in outputs]
        return outputs

    def _scan(self, step, x, seq_length, initial, reverse):
        """Run `step(carry, x_t) -> (carry, outputs)` over time; masking past `seq_length`."""
        tf = _tf()
        time_size = tf.shape(x)[0]
        mask = (_sequence_mask(seq_length, time_size, x.dtype) if seq_length is not None
                else tf.ones([time_size, 1, 1], x.dtype))
        if reverse:
            x, mask = tf.reverse(x, [0]), tf.reverse(mask, [0])

        def masked_step(carry, inputs):
            x_t, m = inputs
            new_carry, outputs = step(carry[0], x_t)
            kept = tuple(m * n + (1 - m) * o for n, o in zip(new_carry, carry[0]))
            # y is zero past the length; the other outputs are the carried state's / this step's gates
            return kept, outputs(kept, m)

        first = step(initial, x[0])[1](initial, tf.ones_like(mask[0]))  # structure of the outputs
        _, outputs = tf.scan(masked_step, (x, mask), initializer=(initial, first))
        if reverse:
            outputs = tuple(tf.reverse(o, [0]) for o in outputs)
        return list(outputs)


class DynamicRNN(_FusedRNN):
    """The adapter's fused LSTM: `y, output_h, output_c, i, j, f, o, tanhc = DynamicRNN(h, dtype)(x)`."""

    def __init__(self, hidden_size, dtype, cell_type="LSTM", direction=UNIDIRECTIONAL, cell_depth=1,
                 use_peephole=False, keep_prob=1.0, cell_clip=-1.0, num_proj=0, time_major=True,
                 activation="tanh", forget_bias=0.0, is_training=True):
        super().__init__(hidden_size, dtype, direction=direction, cell_depth=cell_depth, keep_prob=keep_prob,
                         cell_clip=cell_clip, num_proj=num_proj, time_major=time_major, activation=activation,
                         is_training=is_training)
        if cell_type != "LSTM":
            raise NotImplementedError(f"DynamicRNN(cell_type={cell_type!r}) is not computed by npurun (only 'LSTM')")
        if use_peephole:
            raise NotImplementedError("DynamicRNN(use_peephole=True) is not computed by npurun")
        self.cell_type, self.use_peephole, self.forget_bias = cell_type, use_peephole, forget_bias

    def __call__(self, x, seq_length=None, init_h=None, init_c=None, weight=None, bias=None):
        tf = _tf()
        x = self._time_major(x)
        two = self.direction == BIDIRECTIONAL
        hidden, input_size = self.hidden_size, _static(x.shape[2])
        with self._enter(x):
            lead = [2] if two else []
            w = tf.get_variable("dynamicrnn/w", lead + [input_size + hidden, 4 * hidden], self.dtype,
                                initializer=tf.glorot_uniform_initializer(seed=10, dtype=self.dtype))
            b = tf.get_variable("dynamicrnn/b", lead + [4 * hidden], self.dtype, initializer=tf.zeros_initializer())
            _seq_length_variable(x)
        weight = w if weight is None else weight
        bias = b if bias is None else bias
        batch = tf.shape(x)[1]
        zeros = tf.zeros([2 if two else 1, batch, hidden], self.dtype)
        init_h = zeros if init_h is None else tf.reshape(init_h, [-1, batch, hidden])
        init_c = zeros if init_c is None else tf.reshape(init_c, [-1, batch, hidden])
        runs = []
        for d in range(2 if two else 1):
            w_d, b_d = (weight[d], bias[d]) if two else (weight, bias)
            runs.append(self._lstm(x, seq_length, (init_h[d], init_c[d]), w_d, b_d, reverse=d == 1))
        return self._directions(runs)

    def _lstm(self, x, seq_length, initial, w, b, reverse):
        tf = _tf()

        def step(state, x_t):
            h, c = state
            i, j, f, o = tf.split(tf.matmul(tf.concat([x_t, h], 1), w) + b, 4, axis=1)
            i, j, f, o = tf.sigmoid(i), tf.tanh(j), tf.sigmoid(f + self.forget_bias), tf.sigmoid(o)
            c_new = f * c + i * j
            if self.cell_clip > 0:
                c_new = tf.clip_by_value(c_new, -self.cell_clip, self.cell_clip)
            tanhc = tf.tanh(c_new)
            h_new = o * tanhc
            return (h_new, c_new), lambda kept, m: (m * h_new, kept[0], kept[1], i, j, f, o, tanhc)

        return self._scan(step, x, seq_length, initial, reverse)


class DynamicGRUV2(_FusedRNN):
    """The adapter's fused GRU: `y, output_h, update, reset, new, hidden_new = DynamicGRUV2(h, dtype)(x)`.

    update z, reset r, new n = tanh(x W_n + b_n + r * (h U_n + c_n)), h' = z * h + (1 - z) * n
    (reset after the hidden product, as the kernel's default `reset_after=True`)."""

    _scope_name = "dynamic_gru_v2"

    def __init__(self, hidden_size, dtype, direction=UNIDIRECTIONAL, cell_depth=1, keep_prob=1.0, cell_clip=-1.0,
                 num_proj=0, time_major=True, activation="tanh", gate_order="zrh", reset_after=True,
                 is_training=True):
        super().__init__(hidden_size, dtype, direction=direction, cell_depth=cell_depth, keep_prob=keep_prob,
                         cell_clip=cell_clip, num_proj=num_proj, time_major=time_major, activation=activation,
                         is_training=is_training)
        if direction != UNIDIRECTIONAL:
            raise NotImplementedError("DynamicGRUV2 is unidirectional in the adapter too")
        if gate_order not in ("zrh", "rzh") or not reset_after:
            raise NotImplementedError(f"DynamicGRUV2(gate_order={gate_order!r}, reset_after={reset_after!r}) "
                                      f"is not computed by npurun (gate_order 'zrh' or 'rzh', reset_after=True)")
        self.gate_order, self.reset_after = gate_order, reset_after

    def __call__(self, x, seq_length=None, init_h=None):
        tf = _tf()
        x = self._time_major(x)
        hidden, input_size = self.hidden_size, _static(x.shape[2])
        stdv = 1.0 / math.sqrt(hidden)
        with self._enter(x):
            uniform = tf.random_uniform_initializer(-stdv, stdv)
            w_in = tf.get_variable("dynamicgruv2/weight_input", [input_size, 3 * hidden], self.dtype, uniform)
            w_hid = tf.get_variable("dynamicgruv2/weight_hidden", [hidden, 3 * hidden], self.dtype, uniform)
            b_in = tf.get_variable("dynamicgruv2/bias_input", [3 * hidden], self.dtype, uniform)
            b_hid = tf.get_variable("dynamicgruv2/bias_hidden", [3 * hidden], self.dtype, uniform)
            _seq_length_variable(x)
        batch = tf.shape(x)[1]
        h0 = tf.zeros([batch, hidden], self.dtype) if init_h is None else tf.reshape(init_h, [batch, hidden])
        order = self.gate_order

        def step(state, x_t):
            (h,) = state
            gx = dict(zip(order, tf.split(tf.matmul(x_t, w_in) + b_in, 3, axis=1)))
            gh = dict(zip(order, tf.split(tf.matmul(h, w_hid) + b_hid, 3, axis=1)))
            z, r = tf.sigmoid(gx["z"] + gh["z"]), tf.sigmoid(gx["r"] + gh["r"])
            hidden_new = gh["h"]
            n = tf.tanh(gx["h"] + r * hidden_new)
            h_new = z * h + (1 - z) * n
            return (h_new,), lambda kept, m: (m * h_new, kept[0], z, r, n, hidden_new)

        return self._directions([self._scan(step, x, seq_length, (h0,), reverse=False)])


def _seq_length_variable(x):
    """The adapter's layers keep a non-trainable `dynamicbase/seq_length` variable (full length for every
    batch row); created here too so checkpoints have the same keys."""
    tf = _tf()
    time_size, batch_size = _static(x.shape[0]) or 1, _static(x.shape[1]) or 16
    return tf.get_variable("dynamicbase/seq_length", [batch_size], tf.int32,
                           initializer=tf.constant_initializer(time_size, dtype=tf.int32), trainable=False)
