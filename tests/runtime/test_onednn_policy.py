"""config/onednn.py decides, without TensorFlow, what TensorFlow itself decides in a fresh process."""
import os
import subprocess
import sys

from npurun.config import onednn

ASK_TENSORFLOW = ("from tensorflow.python.util import _pywrap_util_port as port; "
                  "print('ONEDNN', bool(port.IsMklEnabled()))")


def test_the_machine_default_is_tensorflows():
    env = {k: v for k, v in os.environ.items() if k != onednn.ENV}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    out = subprocess.run([sys.executable, "-c", ASK_TENSORFLOW], env=env, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    tensorflow_says = out.split("ONEDNN")[-1].strip() == "True"
    decided = onednn.decide(env)
    assert decided.enabled is tensorflow_says, decided.reason


def test_the_forced_settings_are_tensorflows(both_onednn):
    # the probe process ran with TF_ENABLE_ONEDNN_OPTS forced and reported TensorFlow's own answer
    setting = "1" if both_onednn.setting == "onednn-on" else "0"
    assert onednn.decide({onednn.ENV: setting}).enabled is both_onednn.onednn
