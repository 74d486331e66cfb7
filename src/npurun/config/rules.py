"""Rules between options, checked at construction after each option is valid on its own.

Each rule reads the validated values and either raises `OptionConflictError` naming the options
involved, or returns warnings (strings) for combinations that work but not as a user might think.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from .cluster import ClusterInfo
from .errors import OptionConflictError
from .options import MIXED_PRECISION_MODES

Values = Mapping[str, Any]
Rule = Callable[[Values, ClusterInfo], list]

ASCEND_MEMORY_SUM_LIMIT = 31 * 1024 ** 3  # Ascend 910 hardware limit: a warning here, not an error
DEFAULT_GRAPH_MEMORY = 26 * 1024 ** 3
DEFAULT_VARIABLE_MEMORY = 5 * 1024 ** 3
CACHEABLE_DEBUG_LEVELS = (0, 3)


def checkpoint_schedule(values: Values, cluster: ClusterInfo) -> list:
    if values["save_checkpoints_steps"] is not None and values["save_checkpoints_secs"] is not None:
        raise OptionConflictError(("save_checkpoints_steps", "save_checkpoints_secs"),
                                  f"set one, not both (got {values['save_checkpoints_steps']!r} and "
                                  f"{values['save_checkpoints_secs']!r})")
    loop = values["iterations_per_loop"]
    steps = values["save_checkpoints_steps"]
    if loop > 1 and steps and steps % loop:
        return [f"save_checkpoints_steps={steps} is not a multiple of iterations_per_loop={loop}: checkpoints "
                f"are saved at the first loop boundary at or after each multiple of {steps}"]
    return []


def loop_sinking(values: Values, cluster: ClusterInfo) -> list:
    loop = values["iterations_per_loop"]
    if loop > 1 and values["mix_compile_mode"]:
        raise OptionConflictError(("iterations_per_loop", "mix_compile_mode"),
                                  f"mix_compile_mode=True needs iterations_per_loop=1 (got {loop})")
    if loop > 1 and not values["enable_data_pre_proc"]:
        raise OptionConflictError(("iterations_per_loop", "enable_data_pre_proc"),
                                  f"enable_data_pre_proc=False needs iterations_per_loop=1 (got {loop}): "
                                  "the device loop needs the input inside it")
    if loop > 1 and values["dynamic_graph_execute_mode"] == "lazy_recompile":
        raise OptionConflictError(("iterations_per_loop", "dynamic_graph_execute_mode"),
                                  f"dynamic_graph_execute_mode='lazy_recompile' needs iterations_per_loop=1 "
                                  f"(got {loop})")
    timeout = values["hccl_timeout"]
    if timeout is not None and values["op_wait_timeout"] is None and timeout * loop * 1000 > 2 ** 63 - 1:
        # The run deadline of a collective rank is hccl_timeout x iterations_per_loop, in int64 milliseconds.
        raise OptionConflictError(("hccl_timeout", "iterations_per_loop"),
                                  f"hccl_timeout x iterations_per_loop seconds ({timeout} x {loop}) is the run deadline "
                                  f"of a collective rank; in milliseconds it must fit an int64 "
                                  f"(at most {(2 ** 63 - 1) // 1000} seconds)")
    warnings = []
    for name in ("save_summary_steps", "log_step_count_steps"):
        every = values[name]
        if loop > 1 and every and every % loop:
            warnings.append(f"{name}={every} is not a multiple of iterations_per_loop={loop}: it fires at the "
                            f"first loop boundary at or after each multiple of {every}")
    return warnings


def precision_lists(values: Values, cluster: ClusterInfo) -> list:
    mode = values["precision_mode"]
    if values["modify_mixlist"] is not None and mode not in MIXED_PRECISION_MODES:
        raise OptionConflictError(("modify_mixlist", "precision_mode"),
                                  f"modify_mixlist needs a mixed precision mode "
                                  f"({', '.join(MIXED_PRECISION_MODES)}); precision_mode is {mode!r}")
    if values["optypelist_for_implmode"] is not None and values["op_select_implmode"] is None:
        raise OptionConflictError(("optypelist_for_implmode", "op_select_implmode"),
                                  "optypelist_for_implmode needs op_select_implmode "
                                  "('high_precision' or 'high_performance')")
    if values["op_precision_mode"] is not None and (values["op_select_implmode"] is not None
                                                    or values["optypelist_for_implmode"] is not None):
        return ["op_precision_mode is set: it takes precedence, op_select_implmode and "
                "optypelist_for_implmode are ignored"]
    return []


def compile_cache(values: Values, cluster: ClusterInfo) -> list:
    mode, level = values["op_compiler_cache_mode"], values["op_debug_level"]
    if mode != "disable" and level not in CACHEABLE_DEBUG_LEVELS:
        return [f"op_compiler_cache_mode={mode!r} has no effect with op_debug_level={level}: the compilation "
                f"cache works only with op_debug_level 0 or 3"]
    return []


def memory_sizes(values: Values, cluster: ClusterInfo) -> list:
    graph = values["graph_memory_max_size"]
    variable = values["variable_memory_max_size"]
    if graph is None and variable is None:
        return []
    total = (DEFAULT_GRAPH_MEMORY if graph is None else graph) + (
        DEFAULT_VARIABLE_MEMORY if variable is None else variable)
    if total > ASCEND_MEMORY_SUM_LIMIT:
        return [f"graph_memory_max_size + variable_memory_max_size = {total} bytes exceeds the 31 GB an Ascend "
                f"910 supports; accepted here"]
    return []


def dynamic_inputs(values: Values, cluster: ClusterInfo) -> list:
    """Ranges and the execute mode act only with dynamic_input=True (the product document's rule)."""
    if values["dynamic_input"]:
        return []
    notes = []
    if values["dynamic_inputs_shape_range"] is not None:
        notes.append("dynamic_inputs_shape_range is set but dynamic_input is False: the ranges are not applied")
    if values["dynamic_graph_execute_mode"] != "dynamic_execute":
        notes.append(f"dynamic_graph_execute_mode={values['dynamic_graph_execute_mode']!r} is set but dynamic_input "
                     f"is False: the execute mode applies only to dynamic inputs and is ignored")
    return notes


def local_ranks(values: Values, cluster: ClusterInfo) -> list:
    if values["local_device_list"] is not None and values["local_rank_id"] is None:
        raise OptionConflictError(("local_device_list", "local_rank_id"),
                                  "local_device_list is used together with local_rank_id; set local_rank_id")
    return []


def parameter_servers(values: Values, cluster: ClusterInfo) -> list:
    has_strategy = values["distribute"] is not None
    if has_strategy and not cluster.cluster:
        raise OptionConflictError(("distribute",), "a ParameterServerStrategy needs a cluster in the TF_CONFIG "
                                  "environment variable (none is set)")
    check_ps_tasks_have_strategy(values, cluster)
    return []


def check_ps_tasks_have_strategy(values: Values, cluster: ClusterInfo) -> None:
    if values["distribute"] is None and cluster.num_ps_replicas:
        raise OptionConflictError(("distribute",), "TF_CONFIG describes a cluster with 'ps' tasks: pass "
                                  "distribute=<a ParameterServerStrategy>")


def parameter_servers_when_training(values: Values, cluster: ClusterInfo) -> list:
    """`parameter_servers` without the 'ps' tasks check, which `check_ps_tasks_have_strategy` makes at training:
    tf.estimator.RunConfig describes any TF_CONFIG cluster (tools read its task and cluster properties)."""
    if values["distribute"] is not None and not cluster.cluster:
        return parameter_servers(values, cluster)
    return []


RULES: tuple[Rule, ...] = (checkpoint_schedule, loop_sinking, precision_lists, compile_cache, memory_sizes,
                           dynamic_inputs, local_ranks, parameter_servers)
