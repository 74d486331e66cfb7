"""check on issue 23's seed-2028 sample, part B: what its scripts import that npurun's TF1 world provides."""
import textwrap

from npurun.tools.check import check_source

# kernetNet_ID0305's kernelNet_ml1m.py: tensorflow-determinism's patch() before the graph is built.
DETERMINISM = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    from npu_bridge.npu_init import *

    from tfdeterminism import patch
    import random

    seed = 1627543871
    patch()
    random.seed(seed)
    np.random.seed(seed)
    tf.set_random_seed(seed)
    """)


def test_an_import_npurun_run_provides_is_no_false_alarm():
    raising = [f for f in check_source(DETERMINISM) if f.error]
    assert not raising, raising


def test_an_import_nothing_provides_is_still_reported():
    findings = check_source(DETERMINISM.replace("tfdeterminism", "tfdeterminism_not_a_module"))
    assert any(f.error and f.name == "tfdeterminism_not_a_module" for f in findings), findings
