"""Progress for library users: npurun's INFO lines appear when the user raised TensorFlow's or
absl's verbosity to INFO, or called npurun.enable_logging(); not otherwise."""
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""\
    import sys
    import numpy as np
    import tensorflow as tf
    {setup}
    import npurun
    from npurun import EstimatorSpec, NPUEstimator, NPURunConfig
    {after_import}
    v1 = tf.compat.v1

    def input_fn():
        x = np.arange(32, dtype=np.float32).reshape(16, 2) / 32
        return tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True))).repeat().batch(4)

    def model_fn(features, labels, mode):
        w = v1.get_variable("w", [2, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=train_op)

    config = NPURunConfig(model_dir=sys.argv[1], log_step_count_steps=2, save_checkpoints_steps=4)
    NPUEstimator(model_fn, config=config).train(input_fn, max_steps=4)
    """)


def run(tmp_path, setup="", after_import=""):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(setup=setup, after_import=after_import))
    env = {k: v for k, v in os.environ.items() if k not in ("NPURUN_VERBOSE",)}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "model")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.slow
def test_no_npurun_info_lines_by_default(tmp_path):
    err = run(tmp_path)
    assert "Loss for final step" not in err and "loss = " not in err


@pytest.mark.slow
def test_tensorflow_verbosity_info_shows_npurun_progress(tmp_path):
    err = run(tmp_path, setup="tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)")
    assert "INFO:npurun:Loss for final step 4" in err
    assert "INFO:npurun:loss = " in err and "step = 2" in err  # every log_step_count_steps
    assert "INFO:npurun:Saving checkpoint for step 4" in err
    assert "\r" not in err  # stderr is a pipe here: no progress line redrawn in place, plain log lines


@pytest.mark.slow
def test_absl_verbosity_info_shows_npurun_progress(tmp_path):
    err = run(tmp_path, setup="from absl import logging as absl_logging\n"
                              "absl_logging.set_verbosity(absl_logging.INFO)")
    assert "Loss for final step 4" in err


@pytest.mark.slow
def test_enable_logging_shows_npurun_progress(tmp_path):
    err = run(tmp_path, after_import="npurun.enable_logging()")
    assert " npurun INFO Loss for final step 4" in err
    assert err.count("Loss for final step 4") == 1  # shown once, not also through TensorFlow's handler


def test_a_users_own_logging_configuration_wins(caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="npurun"):
        logging.getLogger("npurun").info("a progress line")
    assert [r.getMessage() for r in caplog.records] == ["a progress line"]


CUINIT = ("E0000 00:00:1796060906.871105   30098 cuda_platform.cc:52] failed call to cuInit: INTERNAL: "
          "CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n")


def test_failed_gpu_look_up_is_hidden_only_where_no_nvidia_device_exists(monkeypatch):
    from npurun import logs

    monkeypatch.setattr(logs, "_has_nvidia_device", lambda: False)
    assert not logs.keep_native_line(CUINIT, 1)
    assert logs.keep_native_line(CUINIT, 0), "-v shows everything"
    monkeypatch.setattr(logs, "_has_nvidia_device", lambda: True)
    assert logs.keep_native_line(CUINIT, 1), "with a GPU device node the failure may explain a missing GPU"
    assert logs.keep_native_line(CUINIT.replace("failed call to cuInit", "some other failure"), 1)


IMPORTS_THEN_PROBE = textwrap.dedent("""\
    import os
    from npurun import NPUEstimator  # npurun imports TensorFlow (without its banner)
    import npurun.compat, npurun.debug, npurun.distribute, npurun.estimator, npurun.precision, npurun.runtime
    import npurun.adapter, npurun.tf1, npurun.tf_estimator, npurun.tools, npurun.util
    os.environ["TF_XLA_FLAGS"] = "--tf_xla_disable_constant_folding=true"
    from tensorflow.python.client import pywrap_tf_session as c_api
    # True only if this is TensorFlow's first (and only) parse of TF_XLA_FLAGS in the process.
    print("UNPARSED" if c_api.TF_GetXlaConstantFoldingDisabled() else "ALREADY PARSED")
""")


def test_importing_npurun_does_not_make_tensorflow_read_its_flags():
    # Listing devices (tf.config.list_physical_devices) parses TF_XLA_FLAGS once per process; done
    # at import, it came before npurun could set the compile cache folder there.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "NPURUN_"))}
    done = subprocess.run([sys.executable, "-c", IMPORTS_THEN_PROBE], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "UNPARSED", done.stderr[-3000:]


class _HandledError(Exception):
    message = ("Graph execution error:\n\nDetected at node 'SerializeIterator_1' defined at ...\n"
               "PyFunc is stateful.\n\t [[{{node SerializeIterator_1}}]]")


def test_native_lines_of_an_error_npurun_handles_are_dropped_and_other_lines_kept(capfd, monkeypatch):
    from npurun import logs

    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)  # file descriptor 2, as in a script (capfd reads it)
    lines = (b"W0000 00:00:1796244931.803930   32686 op_kernel.cc:1858] OP_REQUIRES failed at iterator_ops.cc:1120"
             b" : FAILED_PRECONDITION: PyFunc is stateful.\n"
             b"\t [[{{node SerializeIterator_1}}]]\n"
             b"W0000 00:00:1796244931.804011   32686 other.cc:1] something else went wrong\n")
    with pytest.raises(_HandledError):
        with logs.native_lines_of_handled_error():
            os.write(2, lines)
            raise _HandledError()
    err = capfd.readouterr().err
    assert "PyFunc is stateful" not in err and "SerializeIterator_1" not in err
    assert "something else went wrong" in err
    # no error: every line the block printed is kept
    with logs.native_lines_of_handled_error():
        os.write(2, lines)
    assert capfd.readouterr().err.count("PyFunc is stateful") == 1


UNSAVEABLE_INPUT = textwrap.dedent("""\
    import sys
    import numpy as np
    import tensorflow as tf
    from npurun import EstimatorSpec, NPUEstimator, NPURunConfig
    v1 = tf.compat.v1

    def input_fn():
        # a Python step in the pipeline: its position cannot be checkpointed
        ds = tf.data.Dataset.range(64).map(lambda i: tf.numpy_function(lambda x: np.float32(x) / 64, [i], tf.float32))
        return ds.map(lambda x: (tf.reshape(x, [1]), tf.reshape(x, [1]))).batch(4).repeat()

    def model_fn(features, labels, mode):
        w = v1.get_variable("w", [1, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=train_op)

    NPUEstimator(model_fn, config=NPURunConfig(model_dir=sys.argv[1], save_checkpoints_steps=2)).train(input_fn, max_steps=4)
    """)


@pytest.mark.slow
def test_an_input_whose_position_cannot_be_saved_gives_npurun_s_line_only(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(UNSAVEABLE_INPUT)
    env = {k: v for k, v in os.environ.items() if k not in ("NPURUN_VERBOSE", "TF_CPP_MIN_LOG_LEVEL")}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "model")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Checkpoints will not hold the input pipeline's position (it cannot be saved: PyFunc is stateful.)" \
        in done.stderr
    # TensorFlow's own lines about the same failed probe are not shown (the warning above says it)
    assert "OP_REQUIRES failed" not in done.stderr and "SerializeIterator" not in done.stderr, done.stderr


def test_the_whole_run_filter_passes_lines_as_they_come_and_drops_noise_once_a_line_is_whole():
    from npurun._native_stderr import LineFilter

    lines = LineFilter(min_level=1, has_nvidia_device=False)
    mutation = (b"W0000 00:00:1796396107.755370   12141 c_api.cc:305] Operation '{name:'training/SGD/x/Assign'}' "
                b"was changed by setting attribute after it was run by a session. This mutation will have no effect\n")
    cuinit = CUINIT.encode()
    # a progress bar's redraws pass at once, though no line has ended
    assert lines.feed(b"  3/10 [==>") == b"  3/10 [==>"
    assert lines.feed(b"....]\r  4/10") == b"....]\r  4/10"
    assert lines.feed(b"\n") == b"\n"
    # a native line is decided when it is whole, however it is split
    assert lines.feed(mutation[:3]) == b""
    assert lines.feed(mutation[3:40]) == b""
    assert lines.feed(mutation[40:] + cuinit[:20]) == b""
    assert lines.feed(cuinit[20:] + b"I0000 00:00:1 1 x.cc:1] info\nW0000 00:00:1 1 x.cc:2] kept\nE") == \
        b"W0000 00:00:1 1 x.cc:2] kept\n"
    assert lines.feed(b"rror: the script's own\n") == b"Error: the script's own\n"
    assert lines.feed(b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n") == b""
    assert lines.feed(b"WARNING:tensorflow:real\n") == b"WARNING:tensorflow:real\n"
    # what is held when the stream ends is judged as a line
    assert lines.feed(b"F0000 00:00:1 1 x.cc:3] Check failed") == b""
    assert lines.close() == b"F0000 00:00:1 1 x.cc:3] Check failed"
    assert LineFilter(min_level=0, has_nvidia_device=False).feed(mutation) == mutation, "-v: everything"


def test_tensorflows_deprecation_notices_are_shown_at_the_scripts_lines_only(tmp_path):
    import logging

    from npurun.tf1.world import _LIBRARY_DEPRECATIONS

    def notice(location):
        return logging.LogRecord("tensorflow", logging.WARNING, __file__, 1,
                                 "From %s: %s (from %s) is deprecated and will be removed %s.\n"
                                 "Instructions for updating:\n%s",
                                 (location, "_colocate_with", "tensorflow.python.framework.ops", "in a future version",
                                  "Colocations handled automatically by placer."), None)

    library = os.path.join(os.path.dirname(pytest.__file__), "python_api.py")  # an installed package's file
    assert not _LIBRARY_DEPRECATIONS.filter(notice(f"{library}:883"))
    assert _LIBRARY_DEPRECATIONS.filter(notice(f"{tmp_path / 'train.py'}:18"))
    other = logging.LogRecord("tensorflow", logging.WARNING, __file__, 1, "From %s: something else", ("x.py:1",), None)
    assert _LIBRARY_DEPRECATIONS.filter(other)


def test_the_colocation_warning_of_a_gpu_device_placed_on_the_cpu_is_dropped_with_its_block():
    from npurun._native_stderr import LineFilter

    # what TensorFlow prints per resource when a script's tf.device("/gpu:0") is soft-placed on the CPU
    block = (b"W0000 00:00:1796397663.197829   28743 colocation_graph.cc:1216] Failed to place the graph without "
             b"changing the devices of some resources. Some of the operations (that had to be colocated with resource "
             b"generating operations) are not supported on the resources' devices. Current candidate devices are [\n"
             b"  /job:localhost/replica:0/task:0/device:CPU:0].\n"
             b"See below for details of this colocation group:\nColocation Debug Info:\n"
             b"Colocation group had the following types and supported devices: \n"
             b"Root Member(assigned_device_name_index_=-1 requested_device_name_='/device:GPU:0')\n"
             b"AssignVariableOp: CPU \nVarHandleOp: CPU \n\n"
             b"Colocation members, user-requested devices, and framework assigned devices, if any:\n"
             b"  v (VarHandleOp) /device:GPU:0\n  v/Assign (AssignVariableOp) /device:GPU:0\n\n")
    lines = LineFilter(min_level=1, has_nvidia_device=False)
    passed = b"".join(lines.feed(part) for part in (block[:150], block[150:400], block[400:] + block, b"step 1\n"))
    assert passed == b"step 1\n"
    assert LineFilter(min_level=0, has_nvidia_device=False).feed(block) == block, "-v: everything"
    # a native line that follows ends a block, whatever its state
    lines = LineFilter(min_level=1, has_nvidia_device=False)
    assert lines.feed(block[:300] + b"\nE0000 00:00:1 1 x.cc:2] real error\nafter\n") == \
        b"E0000 00:00:1 1 x.cc:2] real error\nafter\n"


def test_npurun_warnings_show_as_one_line_and_others_as_python_shows_them(monkeypatch):
    import io
    import os
    import warnings as warnings_module

    import npurun
    from npurun import logs

    shown = []
    monkeypatch.setattr(warnings_module, "showwarning",
                        lambda message, category, filename, lineno, file=None, line=None: shown.append(filename))
    logs.show_npurun_warnings_plainly()
    logs.show_npurun_warnings_plainly()  # once is enough: not wrapped twice
    inside = os.path.join(os.path.dirname(npurun.__file__), "runtime", "contributors.py")
    out = io.StringIO()
    warnings_module.showwarning(UserWarning("has no effect here"), UserWarning, inside, 33, out,
                                "contribute(options, mode, plan)")
    assert out.getvalue() == "npurun: UserWarning: has no effect here\n"
    warnings_module.showwarning(UserWarning("the script's"), UserWarning, "/tmp/train.py", 5, out)
    assert shown == ["/tmp/train.py"]  # Python's own display for a warning located elsewhere
