"""TF <= 2.10's `tensorflow.python.training.tracking` package, which official models' vendored code imports
(`tracking.AutoTrackable`: Deep_Speech, NMT_ID0512, albert / bert-squad's `official`; 5 folders), at the place
TensorFlow moved it to (`tensorflow.python.trackable`); `npurun check` agrees."""
import textwrap

from npurun.tools.check import check_source

from .conftest import run_compat

SCRIPT = textwrap.dedent("""\
    import tensorflow as tf
    from tensorflow.python.training.tracking import tracking
    from tensorflow.python.training.tracking import base as trackable


    class Vocab(tracking.AutoTrackable):
        def __init__(self):
            self.table = tf.Variable([1.0, 2.0], name="table")


    vocab = Vocab()
    print("trackable", isinstance(vocab, trackable.Trackable), "session", tf.Session is not None)
    """)


def test_tracking_path_imports(tmp_path):
    script = tmp_path / "model_helper.py"
    script.write_text(SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "trackable True session True" in done.stdout, done.stdout


def test_check_agrees():
    assert not [f for f in check_source(SCRIPT, "model_helper.py") if f.error]
