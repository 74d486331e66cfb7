"""check accuracy on issue 23's seed-2028 sample, part G: a use on a branch taken only under a flag says
"only if", and an option check NPURunConfig would refuse names the same rule as the error."""
import textwrap

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
