"""check accuracy on issue 23's seed-2028 sample, part G: a use on a branch taken only under a flag says
"only if" (options too), an option value NPURunConfig refuses is named with the error it raises, and a name
read where nothing binds it is a NameError (SVD_ID2019, Deep_Speech)."""
import textwrap

import pytest

from npurun.config import NPURunConfig
from npurun.tools.check import check_source

# SVD_ID2019's main_point_cloud_boostPerf.py: a prediction entry taken only with --predict_all_test, whose
# NPURunConfig passes None for the summary interval; the flag of the same name is read as FLAGS.predict_all_test
# (in model_fn and in main) before the call.
SVD_STYLE = textwrap.dedent("""\
    import tensorflow as tf
    from npu_bridge.estimator.npu.npu_config import NPURunConfig
    from npu_bridge.estimator.npu.npu_estimator import NPUEstimator

    flags = tf.app.flags
    FLAGS = flags.FLAGS
    flags.DEFINE_boolean('predict_all_test', False, 'Predict on the whole test set.')
    flags.DEFINE_string('checkpoint_dir', '/tmp/ckpt', 'Where checkpoints go.')


    def model_fn(features, labels, mode, params):
        if FLAGS.predict_all_test:
            return None
        return None


    def predict_all_test():
        config = NPURunConfig(save_summary_steps=None, keep_checkpoint_max=None)
        estimator = NPUEstimator(model_fn=model_fn, model_dir=FLAGS.checkpoint_dir, config=config)
        return estimator


    def train_and_eval():
        config = NPURunConfig(save_summary_steps=2)
        return NPUEstimator(model_fn=model_fn, model_dir=FLAGS.checkpoint_dir, config=config)


    def main(argv=None):
        if FLAGS.predict_all_test:
            predict_all_test()
        else:
            train_and_eval()


    if __name__ == '__main__':
        tf.app.run()
    """)


def _summary_none(findings):
    return [f for f in findings if f.section == "option" and f.name == "save_summary_steps=None"]


def test_an_option_in_a_function_called_only_under_a_flag_says_only_if():
    found = _summary_none(check_source(SVD_STYLE, "main_point_cloud_boostPerf.py"))
    assert len(found) == 1 and not found[0].error, found
    assert "only if" in found[0].status and "--predict_all_test default False" in found[0].status, found[0]


def test_with_the_flag_given_the_option_is_counted():
    found = _summary_none(check_source(SVD_STYLE, "main_point_cloud_boostPerf.py", argv=["--predict_all_test"]))
    assert len(found) == 1 and found[0].error, found


def test_check_names_the_error_npurunconfig_raises_for_a_none_summary_interval():
    # options.md: save_summary_steps is "int >= 0; 0 disables" (the rows that take None say "or None"), so
    # None is refused at construction, and check says so in the same words
    with pytest.raises(TypeError) as raised:
        NPURunConfig(save_summary_steps=None)
    assert "save_summary_steps" in str(raised.value) and "0 disables" in str(raised.value)
    found = _summary_none(check_source(SVD_STYLE, "main_point_cloud_boostPerf.py", argv=["--predict_all_test"]))
    assert str(raised.value) in found[0].detail and "invalid value (TypeError)" in found[0].detail, found[0].detail


def test_an_option_written_under_a_flag_if_says_only_if():
    # the NPURunConfig call itself on the flag's branch (not in a function of its own)
    source = SVD_STYLE.replace("    if FLAGS.predict_all_test:\n        predict_all_test()\n",
                               "    if FLAGS.predict_all_test:\n        config = NPURunConfig(save_summary_steps=None)\n")
    assert source != SVD_STYLE
    line = source.splitlines().index("        config = NPURunConfig(save_summary_steps=None)") + 1
    found = [f for f in _summary_none(check_source(source, "main_point_cloud_boostPerf.py")) if f.line == line]
    assert len(found) == 1 and not found[0].error, found
    assert "only if `FLAGS.predict_all_test` (--predict_all_test default False)" in found[0].status, found[0]


def test_a_flag_read_does_not_call_the_function_of_its_name():
    # FLAGS.predict_all_test read unconditionally does not make predict_all_test() run
    source = SVD_STYLE.replace("def main(argv=None):\n", "def main(argv=None):\n    print(FLAGS.predict_all_test)\n")
    assert source != SVD_STYLE
    found = _summary_none(check_source(source, "main_point_cloud_boostPerf.py"))
    assert len(found) == 1 and not found[0].error, found


def test_the_function_called_unconditionally_is_still_counted():
    source = SVD_STYLE.replace("    if FLAGS.predict_all_test:\n        predict_all_test()\n    else:\n"
                               "        train_and_eval()", "    predict_all_test()")
    assert source != SVD_STYLE
    found = _summary_none(check_source(source, "main_point_cloud_boostPerf.py"))
    assert len(found) == 1 and found[0].error, found


# Deep_Speech's deep_speech.py: run_deep_speech reads num_gpus, whose assignment line is commented out; another
# function has a parameter of that name, so "bound somewhere in the module" is not enough.
DEEP_SPEECH_STYLE = textwrap.dedent("""\
    import tensorflow as tf
    from absl import app as absl_app
    from absl import flags
    from npu_bridge.estimator.npu.npu_config import NPURunConfig

    flags.DEFINE_integer('batch_size', 128, 'Batch size.')
    flags.DEFINE_boolean('use_logger', False, 'Log benchmark results.')
    FLAGS = flags.FLAGS


    def per_device_batch_size(batch_size, num_gpus):
        if num_gpus <= 1:
            return batch_size
        return int(batch_size / num_gpus)


    class Model(object):
        KINDS = ('lstm', 'gru')
        CELLS = [kind.upper() for kind in KINDS]

        def cell(self):
            try:
                return unicode(self.CELLS[0])
            except NameError:
                return str(self.CELLS[0])


    def run_deep_speech(flags_obj):
        global step_count
        step_count = 0
        config = NPURunConfig(precision_mode='allow_fp32_to_fp16')
        #num_gpus = flags_core.get_num_gpus(flags_obj)
        per_replica_batch_size = per_device_batch_size(flags_obj.batch_size, num_gpus)
        sizes = [size * 2 for size in (per_replica_batch_size, step_count)]
        if flags_obj.use_logger:
            benchmark_logger.log_evaluation_result({})
        if sizes[0] > 1000:
            compression = Compression.fp16
        return config, sizes


    def main(_):
        run_deep_speech(FLAGS)


    if __name__ == '__main__':
        absl_app.run(main)
    """)


def _names(findings):
    return {f.name: f for f in findings if f.section == "names"}


def test_a_name_read_where_nothing_binds_it_is_a_name_error():
    names = _names(check_source(DEEP_SPEECH_STYLE, "deep_speech.py"))
    assert names["num_gpus"].error and "NameError" in names["num_gpus"].detail, names
    line = DEEP_SPEECH_STYLE.splitlines().index(
        "    per_replica_batch_size = per_device_batch_size(flags_obj.batch_size, num_gpus)") + 1
    assert names["num_gpus"].line == line and "run_deep_speech" in names["num_gpus"].detail


def test_an_undefined_name_on_a_flag_branch_or_a_value_test_says_only_if():
    names = _names(check_source(DEEP_SPEECH_STYLE, "deep_speech.py"))
    assert not names["benchmark_logger"].error and "--use_logger default False" in names["benchmark_logger"].status
    assert not names["Compression"].error and "only if `sizes[0] > 1000`" in names["Compression"].status
    with_flag = _names(check_source(DEEP_SPEECH_STYLE, "deep_speech.py", argv=["--use_logger"]))
    assert with_flag["benchmark_logger"].error, with_flag


def test_names_python_binds_are_no_false_alarm():
    # parameters, a global declared and set in a function, a class attribute read in the class body's first
    # iterable, builtins, and a read guarded by `except NameError`
    names = _names(check_source(DEEP_SPEECH_STYLE, "deep_speech.py"))
    assert set(names) == {"num_gpus", "benchmark_logger", "Compression"}, names


def test_a_method_does_not_see_its_class_body_names():
    source = DEEP_SPEECH_STYLE.replace("    def cell(self):\n", "    def first(self):\n        return CELLS[0]\n\n"
                                       "    def cell(self):\n").replace("    step_count = 0\n",
                                                                     "    step_count = Model().first()\n")
    assert source.count("CELLS[0]") == 3 and "Model().first()" in source
    assert _names(check_source(source, "deep_speech.py"))["CELLS"].error


def test_a_module_that_may_bind_names_unseen_is_not_judged():
    for extra in ("from some_unknown_module import *\n", "exec('num_gpus = 1')\n",
                  "globals()['num_gpus'] = 1\n"):
        names = _names(check_source(extra + DEEP_SPEECH_STYLE, "deep_speech.py"))
        assert not names, (extra, names)
