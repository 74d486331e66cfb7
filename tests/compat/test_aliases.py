"""The coverage table: complete for the names scripts use, well-formed, and published as docs/compat.md."""
from npurun.adapter import tables as aliases
from npurun.tools.compat_docs import render_markdown

from .conftest import REPO

# The rooms that answer for other packages' names (they were npurun.compat before the split).
COMPAT_ROOMS = ("npurun.adapter.", "npurun.tf1.", "npurun.tf_estimator.")

# The adapter's public names that training scripts use (issue 9), by module.
REQUIRED = {
    "npu_bridge.npu_init": ["NPURunConfig", "NPUEstimator", "NPUEstimatorSpec", "ProfilingConfig", "DumpConfig",
                            "NPUOptimizer", "NPULossScaleOptimizer", "FixedLossScaleManager",
                            "ExponentialUpdateLossScaleManager", "NPUDistributedOptimizer",
                            "NPUBroadcastGlobalVariablesHook", "RewriterConfig", "npu_ops", "util", "hccl_ops",
                            "get_rank_id", "get_rank_size", "get_local_rank_id", "get_local_rank_size",
                            "npu_config_proto", "npu_session_config_init", "npu_run_config_init"],
    "npu_bridge.estimator.npu.npu_optimizer": ["NPUOptimizer", "NPUDistributedOptimizer",
                                               "npu_distributed_optimizer_wrapper"],
    "npu_bridge.estimator.npu.npu_loss_scale_optimizer": ["NPULossScaleOptimizer", "FixedLossScaleManager"],
    "npu_bridge.estimator.npu.npu_loss_scale_manager": ["FixedLossScaleManager", "ExponentialUpdateLossScaleManager"],
    "npu_bridge.estimator.npu.npu_config": ["NPURunConfig", "ProfilingConfig", "DumpConfig"],
    "npu_bridge.estimator.npu.npu_estimator": ["NPUEstimator", "NPUEstimatorSpec"],
    "npu_bridge.estimator.npu.util": ["set_iteration_per_loop", "IterationPerLoop"],
    "npu_bridge.estimator.npu_ops": ["dropout"],
    "npu_bridge.hccl.hccl_ops": ["allreduce", "broadcast", "allgather", "reduce_scatter"],
    "hccl.manage.api": ["get_rank_id", "get_rank_size", "get_local_rank_id", "get_local_rank_size"],
}


def test_required_names_are_in_the_table():
    for module, names in REQUIRED.items():
        assert module in aliases.MODULES, module
        missing = set(names) - set(aliases.MODULES[module].names)
        assert not missing, f"{module}: {sorted(missing)}"


def test_every_entry_is_well_formed():
    for table in [*aliases.MODULES.values(), *aliases.TF_NAMESPACES.values()]:
        for name, entry in table.names.items():
            where = f"{table.name}.{name}"
            assert isinstance(entry, (aliases.Mapped, aliases.NoEffect, aliases.Unsupported)), where
            if isinstance(entry, aliases.Unsupported):
                assert len(entry.why) > 20, where
            else:
                module, _ = aliases.split_target(entry.target)
                assert module.split(".")[0] in ("npurun", "tensorflow", "tf_keras", "os", *aliases.ROOTS), where
                if isinstance(entry, aliases.NoEffect):
                    assert entry.target.startswith(COMPAT_ROOMS) and len(entry.why) > 20, where
    for table in aliases.MODULES.values():
        if table.package:
            for name, entry in table.names.items():
                child = f"{table.name}.{name}"
                if isinstance(entry, aliases.Unsupported) or aliases.is_adapter_module(entry):
                    assert child in aliases.MODULES or aliases.unsupported_module(child), child
                else:  # a package's own function or class (npu_device.open): an attribute target
                    assert ":" in entry.target, child


def test_mapped_and_no_effect_targets_inside_compat_exist():
    # the compatibility rooms' own targets exist now; other packages' targets are checked by
    # test_finder.test_every_mapped_name_resolves_in_this_installation.
    for table in [*aliases.MODULES.values(), *aliases.TF_NAMESPACES.values()]:
        for name, entry in table.names.items():
            if not isinstance(entry, aliases.Unsupported) and entry.target.startswith(COMPAT_ROOMS):
                aliases.resolve(entry, f"{table.name}.{name}")


def test_published_table_is_current():
    published = (REPO / "docs" / "compat.md").read_text()
    assert published == render_markdown(), (
        "docs/compat.md is stale: regenerate it with `python -m npurun.compat docs > docs/compat.md`")


def test_published_table_lists_every_name_with_its_status():
    text = render_markdown()
    for table in aliases.MODULES.values():
        section = text.split(f"### `{table.name}`", 1)[1].split("\n### ", 1)[0]
        for name, entry in table.names.items():
            assert f"| `{name}` | {entry.status} |" in section, f"{table.name}.{name}"
