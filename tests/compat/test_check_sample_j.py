"""check accuracy on issue 23's EDVR_ID0056: a TensorFlow 1 API name that does not exist (it raises on
Ascend's TensorFlow 1.15 too) read under a test on a value is reported "only if" that test, not as an error
the run will meet; the same name read where nothing guards it stays "will raise"."""
import textwrap

from npurun.tools.check import check_source

# EDVR's ascendcv/dataloader/noise.py: seeding only when a config gives a seed, with TensorFlow 2's name
# for it; its configs give none, so the script runs on Ascend and here.
NOISE_STYLE = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf


    class NoiseAugmentation(object):
        def __init__(self, **kwargs):
            self.random_seed = kwargs.get('random_seed', None)
            if self.random_seed is not None:
                np.random.seed(self.random_seed)
                tf.random.set_seed(self.random_seed)

        def apply(self, clean_data):
            return clean_data + tf.random_normal(tf.shape(clean_data), stddev=0.01)


    augment = NoiseAugmentation()
    print(augment.apply(tf.zeros([2, 2])))
    """)


def _set_seed(report):
    return [f for f in report if f.name == "tensorflow.random.set_seed"]


def test_a_missing_tf1_name_under_a_value_test_says_only_if():
    found = _set_seed(check_source(NOISE_STYLE, "noise.py"))
    assert len(found) == 1, found
    assert not found[0].error, found
    assert "only if `self.random_seed is not None`" in found[0].status, found
    assert "AttributeError" in found[0].detail and "Ascend" in found[0].detail


def test_the_same_name_unguarded_will_raise():
    source = NOISE_STYLE.replace("        if self.random_seed is not None:\n"
                                 "            np.random.seed(self.random_seed)\n"
                                 "            tf.random.set_seed(self.random_seed)\n",
                                 "        tf.random.set_seed(0)\n")
    assert source != NOISE_STYLE
    found = _set_seed(check_source(source, "noise.py"))
    assert len(found) == 1 and found[0].error, found


def test_guarded_and_unguarded_uses_of_one_name_will_raise():
    source = NOISE_STYLE + "tf.random.set_seed(1)\n"
    found = _set_seed(check_source(source, "noise.py"))
    assert len(found) == 1 and found[0].error, found


# LMTCNN_ID1278's data.py (and GNMT's, NMT's): the version comparison of a TensorFlow-1.x-era script.
LMTCNN_STYLE = textwrap.dedent("""\
    from distutils.version import LooseVersion
    import distutils.util
    import tensorflow as tf

    if LooseVersion(tf.__version__) >= LooseVersion("1.4"):
        print("new enough", distutils.util.strtobool("yes"))
    """)


def test_distutils_submodules_are_judged_as_this_interpreter_imports_them():
    # setuptools' distutils shim (its distutils-precedence.pth) hands `distutils` over with a spec listing no
    # submodule locations; the standard library's may be a stub (Debian's). check must agree with importing.
    import importlib

    try:
        importlib.import_module("distutils.version")
        importlib.import_module("distutils.util")
        importable = True
    except ImportError:
        importable = False
    found = [f for f in check_source(LMTCNN_STYLE, "data.py") if f.name.startswith("distutils")]
    assert bool([f for f in found if f.error]) is not importable, found


def test_the_adapter_loss_scale_optimizer_module_has_its_manager():
    # subpixel's model.py: the adapter's npu_loss_scale_optimizer imports FixedLossScaleManager at its top (the
    # name resolving is test_aliases'; here check agrees)
    source = "from npu_bridge.estimator.npu.npu_loss_scale_optimizer import FixedLossScaleManager\n"
    assert not [f for f in check_source(source, "model.py") if f.error]
