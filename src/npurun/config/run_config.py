"""NPURunConfig: the run configuration, validated against the option table at construction."""
from __future__ import annotations

import inspect
import warnings
from types import MappingProxyType
from typing import Any, Mapping

from . import param_map
from .cluster import ClusterInfo, read_cluster
from .errors import bounded_repr
from .options import OPTIONS
from .rules import RULES
from .table import Configurable, Kind

DEFAULT_CHECKPOINT_STEPS = 100  # when neither save_checkpoints_steps nor save_checkpoints_secs is set


class NPURunConfig(Configurable):
    """Run configuration for `NPUEstimator`, with every option of the Ascend product document.

    Every option is a keyword argument with the documented name and default, validated here:
    a bad value raises `ValueError` (or `TypeError` for a wrong type) naming the option, the value
    and what is allowed; an unknown keyword is a `TypeError`. Rules between options are checked
    too (for example `save_checkpoints_steps` with `save_checkpoints_secs`). Options are
    read-only attributes; `replace(**changes)` returns a new, re-validated config.

    An `NpuOptimizer` custom-optimizer entry in `session_config` (the way sess.run-mode scripts
    pass NPU options) is read as options; keyword arguments win over it, with a warning.

    Options that have no effect on this machine, or that the product document marks as not
    supported, are accepted and give a `UserWarning` when set to a non-default value.
    `npurun explain` prints every option with its value, kind and mechanism.
    """

    OPTIONS = OPTIONS
    OWNER = "NPURunConfig"
    RULES = RULES  # a subclass may defer a rule to where it matters (tf.estimator.RunConfig: the 'ps' one)

    def __init__(self, **options: Any):
        arguments = dict(options)
        values = self._validate_arguments(arguments)
        notes = []
        from_proto = param_map.options_from_config_proto(values["session_config"])
        for name, value in from_proto.items():
            if name not in arguments:
                values[name] = value
            elif not OPTIONS[name].is_default(value) and value != values[name]:
                notes.append(f"{name}: keyword argument {bounded_repr(values[name])} wins over {bounded_repr(value)} from the "
                             f"session_config's NpuOptimizer entry")
        cluster = read_cluster()
        for rule in self.RULES:
            notes.extend(rule(values, cluster))
        notes.extend(_kind_notes(values))
        if values["save_checkpoints_steps"] is None and values["save_checkpoints_secs"] is None:
            values["save_checkpoints_steps"] = DEFAULT_CHECKPOINT_STEPS
        self._arguments = arguments
        self._values = values
        self._cluster = cluster
        for note in notes:
            warnings.warn(f"NPURunConfig: {note}", UserWarning, stacklevel=2)

    def replace(self, **changes: Any) -> "NPURunConfig":
        """A new config with `changes` applied to the arguments this one was built from, re-validated."""
        return type(self)(**{**self._arguments, **changes})

    # ---- views of the options ---------------------------------------------------------------------
    @property
    def options(self) -> Mapping[str, Any]:
        """Every option's effective value, by name."""
        return MappingProxyType(self._values)

    @property
    def given(self) -> Mapping[str, Any]:
        """The keyword arguments this config was constructed with."""
        return MappingProxyType(self._arguments)

    def to_parameter_map(self) -> dict:
        """The options as an NpuOptimizer parameter map: key -> (AttrValue field, value)."""
        return param_map.encode(self._values)

    # ---- RunConfig-style cluster properties (from TF_CONFIG / RANK_ID) ------------------------------
    @property
    def cluster(self) -> ClusterInfo:
        return self._cluster

    @property
    def cluster_spec(self) -> dict:
        """Job name -> list of task addresses ({} for a single process)."""
        return {job: list(addresses) for job, addresses in self._cluster.cluster.items()}

    @property
    def is_chief(self) -> bool:
        """Whether this process writes checkpoints and summaries."""
        return self._cluster.is_chief

    @property
    def task_type(self) -> str:
        return self._cluster.task_type

    @property
    def task_id(self) -> int:
        return self._cluster.task_id

    @property
    def num_worker_replicas(self) -> int:
        return self._cluster.num_worker_replicas

    @property
    def num_ps_replicas(self) -> int:
        return self._cluster.num_ps_replicas

    @property
    def master(self) -> str:
        """The session target: this task's gRPC server, or '' in process."""
        return self._cluster.master

    @property
    def global_id_in_cluster(self) -> int:
        return self._cluster.global_id_in_cluster


def _kind_notes(values: Mapping[str, Any]) -> list:
    """One warning per option set to a non-default value that will not act on this machine."""
    notes = []
    for name, option in OPTIONS.items():
        value = values[name]
        if option.is_default(value):
            continue
        if option.kind is Kind.NOT_SUPPORTED:
            why = "" if option.mechanism == "none" else f" ({option.mechanism})"
            notes.append(f"option '{name}' is not supported in the current version (product document); "
                         f"{bounded_repr(value)} is accepted and ignored{why}")
        elif option.kind is Kind.NO_EFFECT:
            notes.append(f"option '{name}' has no effect on this machine: {option.mechanism}")
        elif option.pending:
            notes.append(f"option '{name}' is accepted, but npurun does not implement its effect yet "
                         f"({option.mechanism}); {bounded_repr(value)} is ignored")
    return notes


def _signature() -> inspect.Signature:
    # Shown by help() and IDEs: the table's options as keyword-only parameters with their defaults.
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option.default)
                   for name, option in OPTIONS.items()]
    return inspect.Signature(parameters)


def _options_doc() -> str:
    lines = ["", "Options (name = default: rule):", ""]
    lines += [f"    {name} = {option.default!r}: {option.rule}. {option.doc}" for name, option in OPTIONS.items()]
    return "\n".join(lines)


NPURunConfig.__init__.__signature__ = _signature()
NPURunConfig.__doc__ += _options_doc()
