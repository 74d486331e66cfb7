"""npurun check against the first errors of real runs (docs/compat.md, Round 2's check measurement): uses under a
flag's branch, names installed packages no longer have, imports of a package the script sits in."""
import textwrap

from npurun.tools.check import check_file, check_source

XLA_FLAG = textwrap.dedent("""\
    import tensorflow as tf
    from npu_bridge.npu_init import *

    flags = tf.flags
    FLAGS = flags.FLAGS
    flags.DEFINE_bool("use_xla_for_gpu", False, "compile with XLA on a GPU")
    flags.DEFINE_string("chip", "npu", "npu or gpu")


    def train_step(loss):
        if FLAGS.use_xla_for_gpu:
            from tensorflow.contrib.compiler import xla
            loss = xla.compile(lambda: loss)
        if FLAGS.chip == "npu":
            optimizer = tf.contrib.bigtable.BigtableClient("project", "instance")
        else:
            optimizer = tf.contrib.cloud.BigQueryReader()
        return optimizer
    """)


def _raising(findings):
    return {f.name: f for f in findings if f.error}


def test_a_use_under_a_flag_says_so_and_counts_only_when_the_default_takes_the_branch():
    findings = {f.name: f for f in check_source(XLA_FLAG)}
    xla = findings["tensorflow.contrib.compiler.xla"]
    assert not xla.error and "only if `FLAGS.use_xla_for_gpu` (--use_xla_for_gpu default False)" in xla.status
    bigtable = findings["tensorflow.contrib.bigtable.BigtableClient"]
    assert bigtable.error and "FLAGS.chip == 'npu'" in bigtable.detail and "defaults take" in bigtable.detail
    cloud = findings["tensorflow.contrib.cloud.BigQueryReader"]
    assert not cloud.error and "only if not `FLAGS.chip == 'npu'`" in cloud.status


def test_argparse_defaults_decide_too():
    source = textwrap.dedent("""\
        import argparse
        import tensorflow as tf
        parser = argparse.ArgumentParser()
        parser.add_argument("--use-fp16", action="store_true")
        parser.add_argument("--platform", default="NPU", type=str)
        args = parser.parse_args()
        if args.use_fp16 and args.platform == "GPU":
            from tensorflow.contrib import cudnn_rnn
            scale = cudnn_rnn.CudnnLSTM(1, 128)
        """)
    found = {f.name: f for f in check_source(source)}
    manager = found["tensorflow.contrib.cudnn_rnn.CudnnLSTM"]
    assert not manager.error and "--use_fp16 default False" in manager.status and "--platform default 'NPU'" in manager.status


def test_a_removed_name_of_an_installed_package_raises(tmp_path):
    # Hourglass_ID0155's input: `scipy.misc.imresize` (removed in SciPy 1.3); CFL_ID1230: `Image.ANTIALIAS`
    # (removed in Pillow 10); both modules are installed, so their imports pass
    script = tmp_path / "datagen.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np
        import scipy.misc
        from scipy import misc
        from PIL import Image
        from scipy.misc import imresize as resize


        def _augment(img, size):
            img = scipy.misc.imresize(img, (size, size))
            img = Image.fromarray(img).resize((size, size), Image.ANTIALIAS)
            img = Image.fromarray(img).resize((size, size), Image.LANCZOS)
            return misc.imresize(np.asarray(img), 0.5), np.NaN, np.float32(1), np.lookfor
        """))
    found = _raising(check_file(str(script)))
    # np.NaN (NumPy 2 removed it) is given back by npurun run's TF1 world; np.lookfor is not
    assert set(found) == {"scipy.misc.imresize", "PIL.Image.ANTIALIAS", "numpy.lookfor"}, sorted(found)
    assert found["scipy.misc.imresize"].line == 5 and "ImportError" in found["scipy.misc.imresize"].detail
    assert "Pillow" in found["PIL.Image.ANTIALIAS"].detail and "LANCZOS" in found["PIL.Image.ANTIALIAS"].detail
    assert all(f.section == "installed" for f in found.values())


def test_a_local_module_shadowing_an_installed_name_is_not_looked_up_there(tmp_path):
    (tmp_path / "scipy").mkdir()
    (tmp_path / "scipy" / "__init__.py").write_text("")
    (tmp_path / "scipy" / "misc.py").write_text("def imresize(img, size):\n    return img\n")
    script = tmp_path / "train.py"
    script.write_text("from scipy import misc\nx = misc.imresize(1, 2)\n")
    assert not _raising(check_file(str(script)))


def test_a_name_a_local_package_lacks_is_an_import_error(tmp_path):
    # SESEMI_ID1270: `from dataset import svhn, cifar10, cifar100`; the folder ships only dataset/cifar10.py
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "__init__.py").write_text("")
    (tmp_path / "dataset" / "cifar10.py").write_text("def load_data():\n    return None\n")
    (tmp_path / "utils.py").write_text("def datagen(x):\n    return x\n")
    script = tmp_path / "train_evaluate.py"
    script.write_text(textwrap.dedent("""\
        import npu_bridge.npu_init
        from dataset import svhn, cifar10, cifar100
        from utils import datagen
        from keras.preprocessing.image import ImageDataGenerator  # tf-keras's under npurun run
        """))
    found = _raising(check_file(str(script)))
    assert set(found) == {"dataset.svhn", "dataset.cifar100"}, sorted(found)
    assert found["dataset.svhn"].line == 2 and "ImportError" in found["dataset.svhn"].detail


def test_a_script_inside_its_own_package_finds_that_package(tmp_path):
    # AVOD_ID0818: avod/experiments/run_training.py imports `avod.builders...` (its launch script puts the folder
    # above `avod` on PYTHONPATH); the module-level use of a contrib name there was missed as "avod not installed"
    root = tmp_path / "avod"
    (root / "experiments").mkdir(parents=True)
    (root / "builders").mkdir()
    for folder in (root, root / "experiments", root / "builders"):
        (folder / "__init__.py").write_text("")
    (root / "builders" / "optimizer_builder.py").write_text(
        "import tensorflow as tf\nmax_bytes = tf.contrib.memory_stats.MaxBytesInUse\n")  # (AVOD's trainer.py;
    # its tf.contrib.opt.MovingAverageOptimizer, the name first used here, is provided since)
    script = root / "experiments" / "run_training.py"
    script.write_text("import avod\nfrom avod.builders import optimizer_builder\n")
    findings = check_file(str(script))
    assert not any(f.section == "imports" for f in findings), findings
    assert set(_raising(findings)) == {"tensorflow.contrib.memory_stats.MaxBytesInUse"}


def test_packages_pip_installed_into_a_pythonpath_folder_are_installed_not_local(tmp_path, monkeypatch):
    # MNN-LANENET_ID1251 run with its requirements installed by `pip install --target DIR` and DIR on PYTHONPATH:
    # check scanned tqdm's own source as the script's and reported 3 false "will raise" (pandas names in a
    # method tqdm only calls for pandas); the folder of the script's own modules on PYTHONPATH is still followed
    deps = tmp_path / "deps"
    (deps / "progress").mkdir(parents=True)
    (deps / "progress-4.0.dist-info").mkdir()
    (deps / "progress" / "__init__.py").write_text(
        "import tensorflow as tf\nbar = tf.contrib.bigtable.BigtableClient\n")
    own = tmp_path / "code"
    (own / "trainner").mkdir(parents=True)
    (own / "trainner" / "__init__.py").write_text(
        "import tensorflow as tf\nsession = tf.contrib.cloud.BigQueryReader\n")
    script = tmp_path / "tools" / "train.py"
    script.parent.mkdir()
    script.write_text("import progress\nimport trainner\n")
    monkeypatch.setenv("PYTHONPATH", f"{own}:{deps}")
    findings = check_file(str(script))
    contrib = {name for name in _raising(findings) if name.startswith("tensorflow.contrib")}
    assert contrib == {"tensorflow.contrib.cloud.BigQueryReader"}, findings


def test_an_unbound_name_read_only_in_a_branch_the_flag_defaults_do_not_take_is_not_counted(tmp_path):
    # ViDeNN_ID1146's main_spatialCNN.py: `global_config` and `lr` exist only in the CPU branch's leftovers,
    # under the `else` of `if args.use_gpu:` (argparse default 1); they were counted as "will raise"
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent("""\
        from npu_bridge.npu_init import *
        import argparse
        import tensorflow as tf

        parser = argparse.ArgumentParser(description='')
        parser.add_argument('--use_gpu', dest='use_gpu', type=int, default=1, help='gpu flag, 1 for GPU and 0 for CPU')
        args = parser.parse_args()


        def main(_):
            if args.use_gpu:
                sess = tf.Session(config=npu_config_proto())
            else:
                with tf.Session(config=global_config) as sess:
                    train(sess, lr=lr)
            print(batch_size_global)
        """))
    findings = check_file(str(script))
    raising = _raising(findings)
    assert set(raising) == {"batch_size_global"}, sorted(raising)
    guarded = {f.name: f for f in findings if f.name in ("global_config", "lr")}
    assert set(guarded) == {"global_config", "lr"} and all("only if not" in f.status for f in guarded.values())
