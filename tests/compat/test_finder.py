"""The import hook: adapter names resolve only while active, map to npurun, and fail loudly otherwise."""
import importlib
import subprocess
import sys
import warnings

import pytest

import npurun.compat as compat
from npurun.adapter import tables as aliases
from npurun.adapter import finder as finder_module
from npurun.adapter.tables import AdapterAPIError


def _adapter_modules_loaded():
    return sorted(name for name in sys.modules if name.split(".")[0] in aliases.ROOTS)


def test_names_resolve_only_while_active():
    with pytest.raises(ModuleNotFoundError):
        import npu_bridge  # noqa: F401
    meta_path = list(sys.meta_path)

    compat.activate()
    from npu_bridge.estimator.npu.npu_config import NPURunConfig, ProfilingConfig
    import npurun

    assert NPURunConfig is npurun.NPURunConfig and ProfilingConfig is npurun.ProfilingConfig
    import npu_bridge.npu_init as npu_init
    assert npu_init.DumpConfig is npurun.DumpConfig
    assert "npu_bridge.npu_init" in sys.modules

    compat.deactivate()
    assert sys.meta_path == meta_path
    assert _adapter_modules_loaded() == []
    with pytest.raises(ModuleNotFoundError):
        import npu_bridge.npu_init  # noqa: F401,F811
    with pytest.raises(ModuleNotFoundError):
        import hccl.manage.api  # noqa: F401


def test_activate_is_idempotent_and_active_context_restores():
    meta_path = list(sys.meta_path)
    with compat.active():
        compat.activate()
        assert sum(type(f).__name__ == "CompatFinder" for f in sys.meta_path) == 1
        assert compat.is_active()
    assert not compat.is_active() and sys.meta_path == meta_path


def test_every_module_of_the_table_imports(active):
    for name in aliases.MODULES:
        module = importlib.import_module(name)
        assert module.__name__ == name
        assert set(aliases.MODULES[name].names) <= set(dir(module))


def test_submodule_forms_of_import(active):
    from npu_bridge.estimator.npu import util
    import npu_bridge.estimator.npu.util as util2
    from npu_bridge.estimator import npu_ops
    import npu_bridge

    assert util is util2 is npu_bridge.estimator.npu.util
    assert npu_ops.dropout is npu_bridge.npu_init.npu_ops.dropout


def test_unsupported_name_raises_naming_itself_on_every_use(active):
    from npu_bridge.estimator import npu_ops

    lars = npu_ops.LARS  # importing / reading the name itself works (star imports must not fail)
    for use in (lambda: lars(1.0, 2.0, 0.1), lambda: lars.some_attribute, lambda: isinstance(1, lars)):
        with pytest.raises(AdapterAPIError, match=r"npu_bridge\.estimator\.npu_ops\.LARS is not supported by "
                                                   r"npurun: a fused Ascend kernel"):
            use()
    with pytest.raises(AdapterAPIError, match="LARS"):
        class Subclass(lars):  # noqa: F841
            pass
    assert isinstance(AdapterAPIError("x"), NotImplementedError) and isinstance(AdapterAPIError("x"), ImportError)


def test_unsupported_and_unknown_modules_raise_on_import(active):
    with pytest.raises(AdapterAPIError, match=r"npu_bridge\.estimator\.npu\.keras_to_npu is not supported by "
                                               r"npurun: TF 2\.21 ships Keras 3"):
        import npu_bridge.estimator.npu.keras_to_npu  # noqa: F401
    with pytest.raises(ImportError, match=r"npu_bridge\.estimator\.npu\.npu_callbacks is not provided by npurun's "
                                          r"compatibility layer"):
        import npu_bridge.estimator.npu.npu_callbacks  # noqa: F401
    import npu_bridge.estimator.npu as npu
    with pytest.raises(AdapterAPIError, match="keras_to_npu"):
        npu.keras_to_npu.model_to_npu_estimator  # the attribute of the package is a placeholder


def test_unknown_attribute_is_an_attribute_error_naming_it(active):
    import npu_bridge.estimator.npu_ops as npu_ops
    with pytest.raises(AttributeError, match=r"'npu_bridge\.estimator\.npu_ops' has no attribute 'no_such_op'"):
        npu_ops.no_such_op
    assert not hasattr(npu_ops, "no_such_op")


def test_missing_npurun_target_raises_naming_adapter_name_and_target(active, monkeypatch):
    table = aliases.MODULES["hccl.manage.api"]
    monkeypatch.setitem(table.names, "get_rank_id", aliases.Mapped("npurun.not_built_yet:get_rank_id"))
    monkeypatch.setitem(table.names, "get_rank_size", aliases.Mapped("npurun.config:no_such_function"))
    import hccl.manage.api as api

    with pytest.raises(AdapterAPIError, match=r"hccl\.manage\.api\.get_rank_id maps to "
                                               r"npurun\.not_built_yet\.get_rank_id, which this installation of "
                                               r"npurun does not provide yet \(no module 'npurun\.not_built_yet'\)"):
        api.get_rank_id()
    with pytest.raises(AdapterAPIError, match=r"npurun\.config has no 'no_such_function'"):
        api.get_rank_size()


def test_a_broken_target_is_not_reported_as_missing(active, monkeypatch, tmp_path):
    (tmp_path / "broken_target_pkg.py").write_text("import a_module_that_does_not_exist\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(aliases.MODULES["hccl.manage.api"].names, "get_rank_id",
                        aliases.Mapped("broken_target_pkg:get_rank_id"))
    import hccl.manage.api as api
    with pytest.raises(ModuleNotFoundError, match="a_module_that_does_not_exist"):
        api.get_rank_id()


def test_star_import_binds_every_name_without_raising(active):
    namespace = {}
    exec("from npu_bridge.npu_init import *", namespace)
    assert set(aliases.NPU_INIT) <= set(namespace)
    # npu_init re-exports the modules it imports: `os`, and `tf` with TensorFlow 1's API (as on Ascend,
    # so a script's `import tensorflow.compat.v1 as tf` before the star import keeps working).
    import os
    assert namespace["os"] is os
    assert callable(namespace["tf"].placeholder) and callable(namespace["tf"].Session)
    for name in ("npu_tf_optimizer", "npu_distributed_optimizer_wrapper", "npu_keras_optimizer", "NpuEmptyHook",
                 "npu_hooks_append", "npu_run_config_init", "npu_session_config_init", "npu_config_proto",
                 "get_npu_local_rank_size", "experimental_options", "npu_unary_ops", "session_run_hook",
                 "npu_callbacks_append", "NPUBroadcastGlobalVariablesCallback"):
        assert not finder_module.is_placeholder(namespace[name]), name
    with pytest.raises(AdapterAPIError, match="scoped_graph_manager is not supported"):
        namespace["scoped_graph_manager"]()


def test_no_effect_names_work_and_warn_once(active):
    from hccl.split.api import set_split_strategy_by_idx

    with pytest.warns(UserWarning, match=r"hccl\.split\.api\.set_split_strategy_by_idx: accepted, no effect here"):
        set_split_strategy_by_idx([20, 100, 159])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        set_split_strategy_by_idx([20, 100, 159])
    with pytest.raises(ValueError, match="set_split_strategy_by_idx"):
        set_split_strategy_by_idx("20,100")


def test_every_mapped_name_resolves_in_this_installation():
    """Fails, naming them, while adapter names map to npurun modules that are not built yet."""
    missing = []
    with compat.active():
        for module in aliases.MODULES.values():
            for name, entry in module.names.items():
                if isinstance(entry, aliases.Unsupported) or aliases.is_adapter_module(entry):
                    continue
                try:
                    aliases.resolve(entry, f"{module.name}.{name}")
                except AdapterAPIError as error:
                    missing.append(str(error))
    assert missing == [], "adapter names whose npurun target is missing:\n" + "\n".join(missing)


def test_activation_does_not_import_tensorflow():
    code = ("import sys, npurun.compat as c; c.activate(); import npu_bridge.npu_init, hccl.manage.api; "
            "from npu_bridge.estimator.npu.npu_config import NPURunConfig; print('tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
