"""Issue 23's seed-2028 sample, part A: gaps its real scripts hit, each in the style of the script that hit it."""
import numpy as np
import pytest

from npurun.tf1.hparams import HParams  # what a script's tf.contrib.training.HParams is under npurun run


def _set_or_add_hparam(hparams, name, value):
    # AmoebaNet-D_ID2073's amoeba_net.py (tf/tpu models' idiom): a flag given on the command line replaces the
    # model's default, and a default of None is replaced by adding the name again
    if getattr(hparams, name, None) is None:
        hparams.add_hparam(name, value)
    else:
        hparams.set_hparam(name, value)


def test_a_hparam_added_as_none_may_be_added_again_with_a_flag_value():
    hparams = HParams(num_cells=6, lr=0.1, num_shards=None, distributed_group_size=1, use_tpu=False)
    for name, value in (("num_cells", 2), ("lr", 2), ("num_shards", 1), ("use_tpu", False), ("image_size", 64)):
        _set_or_add_hparam(hparams, name, value)
    assert hparams.values() == {"num_cells": 2, "lr": 2.0, "num_shards": 1, "distributed_group_size": 1,
                                "use_tpu": False, "image_size": 64}
    assert isinstance(hparams.lr, float)
    hparams.set_hparam("num_shards", 8)  # now an int, as the flag's value was
    assert hparams.num_shards == 8
    with pytest.raises(ValueError, match="num_shards"):
        hparams.set_hparam("num_shards", "8")
    with pytest.raises(ValueError, match="reserved: num_cells"):
        hparams.add_hparam("num_cells", 3)  # a name holding a value is still refused
    with pytest.raises(ValueError, match="reserved: values"):
        hparams.add_hparam("values", 1)


def test_set_hparam_casts_as_tf_1_15_did():
    hparams = HParams(train_batch_size=64, lr=2.56, use_aux_head=True, cell_name="amoeba_net_d", extra=None)
    hparams.set_hparam("train_batch_size", np.int64(2))  # absl's integer flags may hold NumPy integers
    hparams.set_hparam("lr", np.float32(0.5))
    hparams.set_hparam("extra", [1, 2])  # a hparam added as None takes any value
    assert type(hparams.train_batch_size) is int and type(hparams.lr) is float and hparams.extra == [1, 2]
    for name, value in (("train_batch_size", 2.5), ("use_aux_head", 1), ("lr", True), ("cell_name", 3)):
        with pytest.raises(ValueError, match=name):
            hparams.set_hparam(name, value)
