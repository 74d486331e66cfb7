"""npurun check measured against real runs (docs/compat.md, "## `npurun check`"): a use raises only if its line
runs. Code reached only through a config dict or a string, a local module imported only under a flag, a
function nothing calls, a gradient registered for an op: listed as "only if ...", not counted. And the misses:
a generated `_pb2` module, a package nothing on the scripts' sys.path can provide, TensorFlow 2 names of
npu_device scripts. Each script is ours, written in the style of the real scripts that showed it."""
import os
import textwrap

from npurun.tools.check import check_file


def _write(folder, files):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _raising(path):
    return {(f.file, f.name) for f in check_file(str(path)) if f.error}


def _by_name(path):
    return {f.name: f for f in check_file(str(path))}


def test_a_branch_chosen_by_a_config_dict_or_a_string_is_only_if(tmp_path):
    # ADAGAN style: opts['z_test'] picks the discriminator test; a dataset name picks the loader
    _write(tmp_path, {"train.py": """\
        import tensorflow as tf
        from npu_bridge.npu_init import *
        import model

        opts = {'z_test': 'moments', 'dataset': 'gmm'}


        def main():
            net = model.Pot(opts)
            return net.discriminator(opts, tf.zeros([4, 2]))


        if __name__ == '__main__':
            main()
        """, "model.py": """\
        import tensorflow as tf


        class Pot(object):
            def __init__(self, opts):
                if opts['dataset'] == 'celebA':
                    self.reader = tf.contrib.bigtable.BigtableClient('p', 'i')

            def discriminator(self, opts, x):
                if opts['z_test'] == 'cramer':
                    return self.cramer(opts, x)
                return tf.reduce_mean(x)

            def cramer(self, opts, x):
                return tf.contrib.distributions.MultivariateNormalDiag([0.], [1.]).cdf(x)
        """})
    found = _by_name(tmp_path / "train.py")
    assert _raising(tmp_path / "train.py") == set()
    reader = found["tensorflow.contrib.bigtable.BigtableClient"]
    assert "only if `opts['dataset'] == 'celebA'`" in reader.status
    normal = found["tensorflow.contrib.distributions.MultivariateNormalDiag"]
    assert "only if `opts['z_test'] == 'cramer'`" in normal.status and "cramer" in normal.detail
    # the same use in the branch every configuration takes raises
    text = (tmp_path / "model.py").read_text().replace("return tf.reduce_mean(x)", "return self.cramer(opts, x)")
    (tmp_path / "model.py").write_text(text)
    assert _raising(tmp_path / "train.py") == {("model.py", "tensorflow.contrib.distributions.MultivariateNormalDiag")}


def test_a_function_nothing_the_run_reaches_calls_is_only_if_called(tmp_path):
    # mixmatch style: libml/layers.py has losses other algorithms' scripts call; a TPU layer named only in a comment;
    # an EfficientNet-style host_call stored in a variable nothing reads
    _write(tmp_path, {"mixmatch.py": """\
        import tensorflow as tf
        from npu_bridge.npu_init import *
        from libml import layers


        def model_fn(x):
            def host_call_fn(gs):
                return tf.contrib.summary.scalar('gs', gs)
            host_call = (host_call_fn, [x])
            return layers.mse(x, x)


        def main(_):
            print(model_fn(tf.zeros([2])))


        if __name__ == '__main__':
            tf.app.run()
        """, "libml/__init__.py": "", "libml/layers.py": """\
        import tensorflow as tf


        def mse(a, b):
            return tf.reduce_mean(tf.square(a - b))


        def entropy(logits):
            return tf.contrib.distributions.OneHotCategorical(logits=logits).entropy()


        def entropy_penalty(logits):
            return entropy(logits) * 0.1


        class TpuBatchNorm(tf.layers.BatchNormalization):  # batch_norm=TpuBatchNorm,  (TPU only)
            def _moments(self, inputs, axes, keep_dims):
                return tf.contrib.tpu.cross_replica_sum(inputs)
        """})
    script = tmp_path / "mixmatch.py"
    found = _by_name(script)
    assert _raising(script) == set()
    assert "only if `entropy` is called" in found["tensorflow.contrib.distributions.OneHotCategorical"].status
    assert "only if `_moments` is called" in found["tensorflow.contrib.tpu.cross_replica_sum"].status
    assert "only if `host_call_fn` is called" in found["tensorflow.contrib.summary.scalar"].status
    # called from code that runs (through a chain), it raises
    text = script.read_text().replace("return layers.mse(x, x)", "return layers.entropy_penalty(x)")
    script.write_text(text)
    assert _raising(script) == {("libml/layers.py", "tensorflow.contrib.distributions.OneHotCategorical")}


def test_a_local_module_imported_only_under_a_flag_is_only_if(tmp_path):
    # EDSR style: `if FLAGS.platform.lower() == 'modelarts': from help_modelarts import ...` (moxing at its top)
    _write(tmp_path, {"train.py": """\
        import tensorflow as tf
        from npu_bridge.npu_init import *

        flags = tf.flags
        FLAGS = flags.FLAGS
        flags.DEFINE_string('platform', 'linux', 'linux or modelarts')


        def main(_):
            if FLAGS.platform.lower() == 'modelarts':
                from help_modelarts import result2obs
                result2obs(FLAGS)


        if __name__ == '__main__':
            tf.app.run()
        """, "help_modelarts.py": """\
        import moxing as mox


        def result2obs(flags):
            mox.file.copy_parallel('/cache/result', flags.obs_dir)
        """})
    script = tmp_path / "train.py"
    assert _raising(script) == set()
    assert "only if not `FLAGS.platform.lower() == 'modelarts'`" not in _by_name(script)["moxing"].status
    assert "only if `FLAGS.platform.lower() == 'modelarts'`" in _by_name(script)["moxing"].status
    script.write_text(script.read_text().replace("'linux', 'linux", "'modelarts', 'linux"))
    assert _raising(script) == {("help_modelarts.py", "moxing")}


def test_an_undefined_name_is_judged_under_the_branch_it_is_read_in(tmp_path):
    # AlignedReID style: `sess.run(DD, ...)` under `elif FLAGS.mode == 'cmc':`, DD defined nowhere
    script = tmp_path / "RES.py"
    script.write_text(textwrap.dedent("""\
        import tensorflow as tf
        from npu_bridge.npu_init import *
        tf.flags.DEFINE_string('mode', 'train', 'train, val, cmc')
        FLAGS = tf.flags.FLAGS


        def main(_):
            with tf.Session(config=npu_config_proto()) as sess:
                if FLAGS.mode == 'train':
                    sess.run(tf.no_op())
                elif FLAGS.mode == 'cmc':
                    sess.run(DD)


        if __name__ == '__main__':
            tf.app.run()
        """))
    assert _raising(script) == set()
    assert "only if" in _by_name(script)["DD"].status
    script.write_text(script.read_text().replace("'mode', 'train'", "'mode', 'cmc'"))
    assert _raising(script) == {("", "DD")}


def test_a_gradient_registered_for_an_op_is_only_if_the_graph_has_it(tmp_path):
    # the npu_ops.py 24 TensorFlow2 folders vendor: gradients of NPU ops, registered, never called by the script
    _write(tmp_path, {"train.py": """\
        import npu_device
        import tensorflow as tf
        import npu_ops

        tf.random.set_seed(1)
        model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
        loss = tf.losses.SparseCategoricalCrossentropy(from_logits=True)
        x = npu_ops.dropout(tf.zeros([2, 2]), 0.9)
        """, "npu_ops.py": """\
        import tensorflow as tf
        from tensorflow.python.framework import ops
        from npu_device import gen_npu_ops


        def dropout(x, keep_prob):
            return tf.nn.dropout(x, rate=1 - keep_prob)


        @ops.RegisterGradient("BasicLSTMCell")
        def basic_lstm_cell_grad(op, dct, dht):
            return gen_npu_ops.basic_lstm_cell_c_state_grad(op.inputs[2], dht, dct)
        """})
    script = tmp_path / "train.py"
    found = _by_name(script)
    # npu_device scripts keep TensorFlow 2's API under npurun run: tf.random.set_seed, tf.losses.<Keras loss> exist
    assert _raising(script) == set()
    grad = found["npu_device.gen_npu_ops.basic_lstm_cell_c_state_grad"]
    assert "only if the graph has a `BasicLSTMCell` op" in grad.status
    script.write_text(script.read_text() + "y = tf.no_such_module.thing\n")
    assert _raising(script) == {("", "tensorflow.no_such_module.thing")}
    assert "TensorFlow 2's API" in _by_name(script)["tensorflow.no_such_module.thing"].detail


def test_a_generated_pb2_module_needs_its_build_step(tmp_path):
    # AVOD style: protos/*.proto beside the code, the _pb2 modules made by the launch script's protoc
    _write(tmp_path, {"run_training.py": """\
        import tensorflow as tf
        from npu_bridge.npu_init import *
        from protos import model_pb2
        from protos import train_pb2

        config = model_pb2.ModelConfig()
        """, "protos/model.proto": "syntax = \"proto2\";\nmessage ModelConfig { optional int32 steps = 1; }\n",
        "protos/train.proto": "syntax = \"proto2\";\nmessage TrainConfig {}\n",
        "protos/train_pb2.py": "TrainConfig = object\n"})
    script = tmp_path / "run_training.py"
    found = _by_name(script)
    assert _raising(script) == {("", "protos.model_pb2")}
    assert found["protos.model_pb2"].status == "needs its build step"
    assert "protos/model.proto" in found["protos.model_pb2"].detail


def test_a_package_nothing_on_the_scripts_sys_path_provides_will_raise(tmp_path):
    # PoseFix style: main/config.py puts ../lib and ../data on sys.path; data/dataset.py imports pycocotools
    _write(tmp_path, {"README.md": "model\n", "main/train.py": """\
        import tensorflow as tf
        from npu_bridge.npu_init import *
        from config import cfg
        from tfutils import make_dir
        from dataset import Dataset

        make_dir(cfg.model_dir)
        """, "main/config.py": """\
        import os.path as osp
        import sys


        class Config(object):
            root_dir = osp.dirname(osp.dirname(osp.abspath(__file__)))
            model_dir = osp.join(root_dir, 'output')


        cfg = Config()
        sys.path.insert(0, osp.join(cfg.root_dir, 'lib'))
        sys.path.insert(0, osp.join(cfg.root_dir, 'data'))
        """, "lib/tfutils.py": "import os\n\n\ndef make_dir(path):\n    os.makedirs(path, exist_ok=True)\n",
        "data/dataset.py": "from pycocotools_for_test.coco import COCO\n\n\nclass Dataset(object):\n    pass\n"})
    script = tmp_path / "main" / "train.py"
    found = _by_name(script)
    assert _raising(script) == {(os.path.join("..", "data", "dataset.py"), "pycocotools_for_test")}
    assert found["tfutils"].status == "found through sys.path" and not found["tfutils"].error
    assert "nothing there can provide it" in found["pycocotools_for_test"].detail


def test_flag_branches_are_judged_with_the_arguments_the_script_is_started_with(tmp_path):
    # BigGAN / AlignedReID style: `--phase` / `--mode` pick what runs; `npurun check train.py -- --mode=cmc`
    import subprocess
    import sys

    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent("""\
        import argparse
        import tensorflow as tf
        from npu_bridge.npu_init import *

        parser = argparse.ArgumentParser()
        parser.add_argument('--phase', type=str, default='train')
        parser.add_argument('--use_xla', action='store_true')
        args = parser.parse_args()
        if args.phase == 'test':
            reader = tf.contrib.cloud.BigQueryReader()
        if args.use_xla:
            from tensorflow.contrib.compiler import xla
            step = xla.compile(lambda: reader)
        """))
    assert _raising(script) == set()
    assert check_file(str(script), argv=["--phase", "test"]) and {
        f.name for f in check_file(str(script), argv=["--phase=test", "--use_xla"]) if f.error} == {
        "tensorflow.contrib.cloud.BigQueryReader", "tensorflow.contrib.compiler.xla"}
    run = subprocess.run([sys.executable, "-m", "npurun.cli", "check", str(script), "--", "--phase=test"],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "1 will raise here" in run.stdout, run.stdout + run.stderr
    run = subprocess.run([sys.executable, "-m", "npurun.cli", "check", "--format", "json", str(script)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_keyword_an_installed_package_no_longer_takes_raises(tmp_path, monkeypatch):
    # word2vec_ID0134 style: `TSNE(perplexity=30, n_components=2, init='pca', n_iter=5000)` after training;
    # scikit-learn 1.7 renamed n_iter to max_iter. A package laid out as scikit-learn's (a re-export in
    # __init__.py of a class in a private module), installed under a site-packages folder.
    site = tmp_path / "site-packages"
    _write(site, {"tsne_lib_for_test/__init__.py": "from ._t_sne import TSNE\nfrom ._pca import PCA\n",
                  "tsne_lib_for_test/_t_sne.py": """\
        class TSNE(object):
            def __init__(self, n_components=2, *, perplexity=30.0, init='pca', max_iter=1000):
                self.max_iter = max_iter
        """, "tsne_lib_for_test/_pca.py": """\
        class PCA(object):
            def __init__(self, n_components=None, **kwargs):
                self.n_components = n_components
        """})
    monkeypatch.syspath_prepend(str(site))
    script = tmp_path / "run" / "word2vec.py"
    _write(tmp_path / "run", {"word2vec.py": """\
        import tensorflow as tf
        from npu_bridge.npu_init import *


        def plot(embeddings):
            from tsne_lib_for_test import TSNE, PCA
            low = TSNE(perplexity=30, n_components=2, init='pca', n_iter=5000)
            pca = PCA(n_components=2, whiten=True)
            return low, pca


        if __name__ == '__main__':
            plot(None)
        """})
    found = _by_name(script)
    assert _raising(script) == {("", "tsne_lib_for_test.TSNE(n_iter=)")}
    assert "takes no n_iter=" in found["tsne_lib_for_test.TSNE(n_iter=)"].detail
    script.write_text(script.read_text().replace("n_iter=5000", "max_iter=5000"))
    assert _raising(script) == set()


def test_an_option_file_named_from_the_model_folder_above_the_script_is_valid(tmp_path):
    # EfficientNet_B0_ID0009 style: efficientnet/main_npu.py names './efficientnet/ReduceMeanD.json' (its launch
    # script runs it from the model folder)
    _write(tmp_path, {"efficientnet/ReduceMeanD.json": '{"black-list": {"to-add": ["ReduceMeanD"]}}\n',
                      "efficientnet/main_npu.py": """\
        import tensorflow as tf
        from npu_bridge.npu_init import *

        config = NPURunConfig(precision_mode='allow_mix_precision', modify_mixlist='./efficientnet/ReduceMeanD.json')
        """})
    script = tmp_path / "efficientnet" / "main_npu.py"
    found = [f for f in check_file(str(script)) if f.name.startswith("modify_mixlist")]
    assert len(found) == 1 and not found[0].error and "above it" in found[0].detail
    script.write_text(script.read_text().replace("ReduceMeanD.json'", "Missing.json'"))
    assert [f.name for f in check_file(str(script)) if f.error] == ["modify_mixlist='./efficientnet/Missing.json'"]


def test_an_unsupported_contrib_name_imported_but_never_used_does_not_raise(tmp_path):
    # tacotron2_ID0018 style: networks.py imports contrib.seq2seq.dynamic_decode and runs its own decoder loop
    script = tmp_path / "networks.py"
    script.write_text(textwrap.dedent("""\
        import tensorflow as tf
        from tensorflow.contrib.seq2seq import dynamic_decode
        from tensorflow.contrib.bigtable import BigtableClient


        def decode(cell, inputs):
            return tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
        """))
    found = _by_name(script)
    assert _raising(script) == {("", "tensorflow.contrib.bigtable.BigtableClient")}  # (not in the table: it raises)
    assert "importing it works" in found["tensorflow.contrib.seq2seq.dynamic_decode"].detail
    script.write_text(script.read_text().replace("return tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)",
                                                 "return dynamic_decode(cell)"))
    assert ("", "tensorflow.contrib.seq2seq.dynamic_decode") in _raising(script)


_DIN_STYLE = """\
    import os
    import tensorflow as tf
    from npu_bridge.npu_init import *

    rank_size = int(os.getenv('RANK_SIZE', "1"))


    def input_fn():
        if rank_size == 1:
            return tf.data.TFRecordDataset("./data/train.tfrecord.gz", compression_type="GZIP").batch(1024)
        else:
            path = f"./data/train_{rank_size}_part{rank_id}.tfrecord.gz"
            return tf.data.TFRecordDataset(path).batch(1024)


    def main():
        return input_fn()


    if __name__ == '__main__':
        main()
    """


def test_a_branch_chosen_by_the_rank_environment_is_judged_as_npurun_run_sets_it(tmp_path, monkeypatch):
    # DIN style: `rank_size = int(os.getenv('RANK_SIZE', "1"))`; the multi-rank branch reads a `rank_id` that only
    # the launch script's `sed` defines. npurun run is one rank when no rank environment is set.
    for name in ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "TF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    script = tmp_path / "din_demo.py"
    script.write_text(textwrap.dedent(_DIN_STYLE))
    assert _raising(script) == set()
    assert "$RANK_SIZE under npurun run" in _by_name(script)["rank_id"].status
    monkeypatch.setenv("RANK_SIZE", "8")  # as a multi-rank launch would start it: the branch is taken
    monkeypatch.setenv("RANK_ID", "3")
    assert _raising(script) == {("", "rank_id")}


def test_an_environment_read_in_the_test_itself_is_judged_too(tmp_path, monkeypatch):
    for name in ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "TF_CONFIG", "DEVICE_ID"):
        monkeypatch.delenv(name, raising=False)
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import os
        import tensorflow as tf
        from npu_bridge.npu_init import *

        if int(os.environ['DEVICE_ID']) != 0:
            print(unknown_device_name)
        if os.getenv('CUSTOM_SWITCH') == 'on':
            print(other_unknown)
        """))
    raising = _raising(script)
    assert ("", "unknown_device_name") not in raising  # DEVICE_ID is 0 in a one-rank npurun run
    assert ("", "other_unknown") not in raising  # unset with no default: None != 'on'
    monkeypatch.setenv("CUSTOM_SWITCH", "on")
    assert ("", "other_unknown") in _raising(script)
