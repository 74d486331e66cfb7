"""npu_device (the adapter's TF 2 package): global_options() on npurun's option table, the coverage
table, `npurun check` and `npurun run`'s choice of TensorFlow for such scripts. No training here
(tests/compat/test_npu_device_scripts.py runs the scripts)."""
import textwrap

import pytest

from npurun.adapter.npu_device import configs
from npurun.adapter import tables as aliases
from npurun.tools.check import check_file
from npurun.tools.run import script_tf_api
from npurun.config import DumpConfig, NPURunConfig, ProfilingConfig
from npurun.distribute.launch import uses_adapter


def _error(call):
    with pytest.raises((ValueError, TypeError)) as caught:
        call()
    return caught.value


@pytest.mark.parametrize("name, value, build", [
    ("precision_mode", "fp16_please", lambda v: NPURunConfig(precision_mode=v)),
    ("hcom_parallel", 1, lambda v: NPURunConfig(hcom_parallel=v)),
    ("graph_memory_max_size", "lots", lambda v: NPURunConfig(graph_memory_max_size=v)),
    ("auto_tune_mode", "XX", lambda v: NPURunConfig(auto_tune_mode=v)),
    ("op_compiler_cache_mode", "on", lambda v: NPURunConfig(op_compiler_cache_mode=v)),
    ("fusion_switch_file", "/no/such/fusion.json", lambda v: NPURunConfig(fusion_switch_file=v)),
    ("dump_config.dump_mode", "everything", lambda v: DumpConfig(dump_mode=v)),
    ("dump_config.dump_step", "5|2", lambda v: DumpConfig(dump_step=v)),
    ("profiling_config.enable_profiling", "yes", lambda v: ProfilingConfig(enable_profiling=v)),
])
def test_a_bad_value_gives_npurunconfigs_error_naming_npu_device(name, value, build):
    options = configs.new_config()
    *groups, leaf = name.split(".")
    target = options
    for group in groups:
        target = getattr(target, group)
    ours = _error(lambda: setattr(target, leaf, value))
    theirs = _error(lambda: build(value))
    assert type(ours) is type(theirs)
    assert str(ours).startswith(f"{configs.OWNER} option '{leaf}'")
    assert str(ours).split(" option ", 1)[1] == str(theirs).split(" option ", 1)[1]
    assert getattr(target, leaf) == dict((n, v) for n, _o, v, _s in configs.new_config().items())[name]


def test_good_values_are_kept_and_reported_as_set():
    options = configs.new_config()
    options.precision_mode = "allow_mix_precision"
    options.dump_config.dump_step = "0|5-7"
    options.experimental.multi_branches_config.dynamic_dims = "1;2"
    options.graph_memory_max_size = str(8 * 1024 ** 3)
    assert options.precision_mode == "allow_mix_precision" and options.dump_config.dump_step == "0|5-7"
    assert options.graph_memory_max_size == 8 * 1024 ** 3  # NPURunConfig's validator converts it
    assert options.as_dict() == {"precision_mode": "allow_mix_precision", "graph_memory_max_size": 8 * 1024 ** 3,
                                 "dump_config.dump_step": "0|5-7",
                                 "experimental.multi_branches_config.dynamic_dims": "1;2"}


def test_unknown_option_is_the_adapters_value_error_with_a_suggestion():
    options = configs.new_config()
    message = str(_error(lambda: setattr(options, "precison_mode", "force_fp16")))
    assert message.startswith("NpuConfig has no option precison_mode (did you mean 'precision_mode'?)")
    assert "dump_config" in message
    assert "DumpConfig" in str(_error(lambda: setattr(options.dump_config, "path", "/tmp")))
    assert "group of options" in str(_error(lambda: setattr(options, "dump_config", None)))


def test_every_option_has_one_kind_and_table_rows_keep_npurunconfigs():
    kinds = {}
    for name, option, _value, _set in configs.new_config().items():
        status, why = configs.kind_here(name, option)
        assert status in ("effect", "effect (GPU only)", "accepted, no effect here", "not supported") and why
        kinds[name] = status
        leaf = name.rpartition(".")[2]
        if NPURunConfig.OPTIONS.get(leaf) is option and leaf not in configs.TF2_NO_EFFECT:
            assert status == option.status
    assert kinds["precision_mode"] == "effect" and kinds["dump_config.dump_step"] == "effect"
    assert kinds["hcom_parallel"] == "accepted, no effect here"  # TF 2 cannot honour it (warns why)
    assert kinds["aoe_config.aoe_mode"] == "not supported"
    assert kinds["experimental.multi_branches_config.input_shape"] == "accepted, no effect here"


def test_open_checks_rules_between_options_with_npurunconfigs_message(monkeypatch):
    from npurun.adapter.npu_device import runtime

    options = configs.new_config()
    options.dump_config.enable_dump = True  # no dump_path: DumpConfig's conflict error
    message = str(_error(lambda: runtime.validated(options)))
    assert "dump_path" in message and "NPURunConfig" not in message
    options = configs.new_config()
    options.hcom_parallel = False  # (the TF 2 adapter's default is True)
    options.deterministic = 1
    with pytest.warns(UserWarning) as caught:
        runtime.validated(options)
    text = " ".join(str(w.message) for w in caught)
    assert "'hcom_parallel' is accepted and has no effect here" in text
    assert "'deterministic' is accepted and has no effect here" in text


def test_the_coverage_table_has_the_npu_device_modules_modelzoo_uses():
    assert "npu_device" in aliases.ROOTS
    for module, names in {
        "npu_device": ("open", "global_options", "gen_npu_ops", "ops", "distribute", "train", "compat"),
        "npu_device.gen_npu_ops": ("fast_gelu", "fast_gelu_grad", "fused_layer_norm", "drop_out_do_mask"),
        "npu_device.ops": ("gelu",),
        "npu_device.distribute": ("all_reduce", "broadcast", "npu_distributed_keras_optimizer_wrapper",
                                  "shard_and_rebatch_dataset"),
        "npu_device.train.optimizer": ("NpuLossScaleOptimizer",),
        "npu_device.compat": ("enable_v1",),
        "npu_device.compat.v1.npu_init": ("NPURunConfig", "npu_config_proto", "RewriterConfig"),
    }.items():
        table = aliases.MODULES[module]
        for name in names:
            assert aliases.availability(table.names[name]) in ("available", "unsupported"), (module, name)
    assert aliases.MODULES["npu_device.gen_npu_ops"].names["lars_v2"].status == "unsupported"


def test_the_published_table_lists_npu_device(tmp_path):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "compat.md").read_text()
    assert "### `npu_device.distribute`" in text and "NpuLossScaleOptimizer" in text


NPU_DEVICE_SCRIPT = """\
    import tensorflow as tf
    import npu_device as npu
    npu.global_options().precision_mode = "allow_mix_precision"
    npu.global_options().dump_config.dump_mode = "everything"
    npu.global_options().no_such_option = 1
    npu.open().as_default()
    sess = tf.compat.v1.Session()  # a TF 2 script may use tf.compat.v1
    y = npu.gen_npu_ops.lars_v2
    """


def test_check_reports_global_options_assignments_and_names(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(NPU_DEVICE_SCRIPT))
    findings = {f.name: f for f in check_file(str(script))}
    assert findings["global_options().precision_mode='allow_mix_precision'"].status == "effect"
    assert findings["global_options().dump_config.dump_mode='everything'"].error
    assert findings["global_options().no_such_option"].error
    assert findings["npu_device.open"].status == "mapped"
    assert findings["npu_device.gen_npu_ops.lars_v2"].error


def test_npu_device_scripts_keep_tensorflow_2_also_through_a_local_module(tmp_path, monkeypatch):
    monkeypatch.delenv("NPURUN_TF_API", raising=False)
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(NPU_DEVICE_SCRIPT))
    assert script_tf_api(str(script)) == 2
    (tmp_path / "helpers.py").write_text("import npu_device\n")
    main = tmp_path / "main.py"
    main.write_text("import tensorflow as tf\nimport helpers\nsess = tf.Session()\n")
    assert script_tf_api(str(main)) == 2
    bridge = tmp_path / "bridge.py"
    bridge.write_text("import tensorflow as tf\nfrom npu_bridge.npu_init import *\n")
    assert script_tf_api(str(bridge)) == 1
    assert uses_adapter(str(script)) and uses_adapter(str(bridge)) and not uses_adapter(str(main))


def test_memory_sizes_as_tf2_modelzoo_scripts_write_them():
    options = configs.new_config()
    options.graph_memory_max_size = str("21*1024*1024*1024")  # 5 TensorFlow2 ModelZoo scripts write it so
    options.variable_memory_max_size = 4 * 1024 * 1024 * 1024
    assert options.graph_memory_max_size == 21 * 1024 ** 3 == NPURunConfig(
        graph_memory_max_size="21 * 1024 * 1024 * 1024").graph_memory_max_size
    assert "memory size factor" in str(_error(lambda: setattr(options, "graph_memory_max_size", "2**3")))


def test_open_caps_gpu_memory_with_one_logical_device_per_gpu_before_the_runtime_starts(monkeypatch):
    # FM_ID2631 and 4 other TensorFlow2 scripts set graph/variable_memory_max_size; on a GPU machine
    # npu_device.open() gives each GPU one logical device of that size, as NPURunConfig's sessions get one
    # virtual device (tested here on the calls made: this machine may have no GPU)
    import tensorflow as tf

    from npurun.adapter.npu_device import runtime

    gpus = [tf.config.PhysicalDevice(name=f"/physical_device:GPU:{i}", device_type="GPU") for i in range(2)]
    calls = []
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: gpus if kind == "GPU" else [])
    monkeypatch.setattr(tf.config, "set_logical_device_configuration",
                        lambda device, logical: calls.append((device.name, [c.memory_limit for c in logical])))
    options = configs.new_config()
    options.graph_memory_max_size = str("3*1024*1024*1024")
    options.variable_memory_max_size = 1024 ** 3
    runtime.apply(runtime.validated(options))
    assert calls == [(gpu.name, [4096]) for gpu in gpus]  # MiB, graph + variable

    calls.clear()
    options = configs.new_config()
    options.variable_memory_max_size = 1024 ** 3  # graph_memory_max_size then takes its Ascend default, 26 GB
    runtime.apply(runtime.validated(options))
    assert calls == [(gpu.name, [27 * 1024]) for gpu in gpus]

    def started(device, logical):
        raise RuntimeError("Virtual devices cannot be modified after being initialized")

    monkeypatch.setattr(tf.config, "set_logical_device_configuration", started)
    with pytest.warns(UserWarning, match="runtime had started before npu_device.open()"):
        runtime.apply(runtime.validated(options))


def test_defaults_are_the_tf2_adapters_where_they_differ_from_npurunconfigs():
    # tf_adapter_2.x's NpuConfig: op_compiler_cache_mode 'enable', hcom_parallel True, enable_exception_dump 2
    from npurun.adapter.npu_device import runtime

    options = configs.new_config()
    assert (options.op_compiler_cache_mode, options.hcom_parallel, options.enable_exception_dump) == ("enable", True, 2)
    assert NPURunConfig().op_compiler_cache_mode == "disable" and NPURunConfig().hcom_parallel is False
    assert options.as_dict() == {}  # defaults, not set by the script
    run_config = runtime.validated(options)  # open() applies them as the adapter does
    assert (run_config.op_compiler_cache_mode, run_config.hcom_parallel, run_config.enable_exception_dump) == (
        "enable", True, 2)
    options.op_compiler_cache_mode = "disable"
    assert runtime.validated(options).op_compiler_cache_mode == "disable"
    message = str(_error(lambda: setattr(options, "op_compiler_cache_mode", "on")))  # NPURunConfig's rule still
    assert message.startswith(f"{configs.OWNER} option 'op_compiler_cache_mode'") and "one of 'enable', 'disable', 'force'" in message
