"""NumPy names TF 1.15-era scripts call that today's NumPy removed (asscalar: 6 ModelZoo folders; in1d: 3; bool8 and
int0: 2 each; trapz, loads: 1), given back under `npurun run` as that NumPy had them; `npurun check` agrees."""
import textwrap

from npurun.tools.check import check_source

from .conftest import run_compat

SCRIPT = textwrap.dedent("""\
    import pickle
    import numpy as np
    import tensorflow as tf


    def evaluate(pred, labels):
        hits = np.in1d(pred, labels)
        area = np.trapz([0.0, 1.0, 1.0], [0.0, 0.5, 1.0])
        mean = np.asscalar(np.mean(np.array([1.0, 2.0])))
        flags = np.zeros(2, dtype=np.bool8)
        index = np.array([3], dtype=np.int0)
        return hits, area, mean, flags, index


    hits, area, mean, flags, index = evaluate(np.array([[1, 5], [2, 7]]), np.array([1, 2, 3]))
    print("in1d", hits.tolist(), "trapz", area, "asscalar", mean, type(mean).__name__)
    print("dtypes", flags.dtype, index.dtype == np.intp, "loads", np.loads(pickle.dumps({"a": 1})))
    with tf.Session() as sess:
        print("tf", sess.run(tf.constant(mean)))
    """)


def test_removed_numpy_names_run_as_numpy_1_had_them(tmp_path):
    script = tmp_path / "eval.py"
    script.write_text(SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "in1d [True, False, True, False] trapz 0.75 asscalar 1.5 float" in out, out
    assert "dtypes bool True loads {'a': 1}" in out, out


def test_check_agrees():
    assert not [f for f in check_source(SCRIPT, "eval.py") if f.error]
