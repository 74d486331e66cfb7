"""`tf.estimator.RunConfig` as an NPURunConfig, with tf.estimator's signature, defaults and rules.

Rules (tf.estimator's, kept here so code written for it behaves the same):
  - with neither `save_checkpoints_steps` nor `save_checkpoints_secs` given, a checkpoint every
    600 seconds; both given as None disables checkpoints; both set is an error;
  - `replace(save_checkpoints_steps=N)` drops the other interval (and the reverse), so replacing
    one does not conflict with the 600 s default;
  - `TF_CONFIG` may also hold `model_dir` (the default model_dir; a different one given to the
    constructor is an error), `session_master` (the `master`) and `service` (a dict, `service`);
  - `cluster_spec` is a `tf.train.ClusterSpec`;
  - `device_fn(op) -> device` places the model's ops (exactly one argument, `op`);
  - `train_distribute` / `eval_distribute`: a strategy over one device trains as without one (on
    that device); TF 1's ParameterServerStrategy is npurun's `distribute`; a strategy over several
    devices or workers is an error naming them and `npurun launch -n <devices> script.py`
    (NPURunConfig itself only stores them, for migration tooling, as the product document says).
Arguments NPURunConfig has no use for (`protocol`, `experimental_distribute`, ...) are kept as
attributes and give a warning when not at their default. NPURunConfig's own options are
accepted as keywords too.
"""
from __future__ import annotations

import copy
import inspect
import json
import os
import warnings

from ..config import NPURunConfig, rules
from ..config.cluster import tf_config_task_index

# tf.estimator.RunConfig's parameters, in order (positional use maps by this order), with its defaults.
_DEFAULT = object()  # "not given": distinguishes the 600 s default from an explicit None
TF_RUN_CONFIG_PARAMETERS = (
    ("model_dir", None), ("tf_random_seed", None), ("save_summary_steps", 100),
    ("save_checkpoints_steps", _DEFAULT), ("save_checkpoints_secs", _DEFAULT), ("session_config", None),
    ("keep_checkpoint_max", 5), ("keep_checkpoint_every_n_hours", 10000), ("log_step_count_steps", 100),
    ("train_distribute", None), ("device_fn", None), ("protocol", None), ("eval_distribute", None),
    ("experimental_distribute", None), ("experimental_max_worker_delay_secs", None),
    ("session_creation_timeout_secs", 7200), ("checkpoint_save_graph_def", True),
)
TF_DEFAULT_CHECKPOINT_SECS = 600  # tf.estimator.RunConfig saves every 600 s when no interval is given
_KEPT = {"device_fn", "protocol", "experimental_distribute", "experimental_max_worker_delay_secs",
         "session_creation_timeout_secs", "checkpoint_save_graph_def"}
_HONOURED = {"device_fn"}
SAVE_CKPT_ERR = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."


class TaskType:
    """tf.estimator's task types (`run_config.TaskType`): the job names of a TF_CONFIG cluster, which
    TPU-derived code compares `config.task_type` with (`from tensorflow.python.estimator.run_config import
    TaskType`)."""
    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


class _RunConfigMeta(type):
    # Any NPURunConfig is a RunConfig, as the adapter's NPURunConfig subclasses tf.estimator.RunConfig.
    def __instancecheck__(cls, instance):
        return isinstance(instance, NPURunConfig)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, NPURunConfig)


def _tf_config() -> dict:
    raw = os.environ.get("TF_CONFIG", "").strip()
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return {}  # NPURunConfig reports a malformed TF_CONFIG, naming the problem
    if not isinstance(parsed, dict):
        return {}
    task = parsed.get("task")
    if isinstance(task, dict) and "index" in task:
        try:
            task["index"] = tf_config_task_index(task["index"])
        except ValueError:
            pass  # NPURunConfig reports it, naming the problem
    return parsed


def _is_int(value) -> bool:
    import numbers

    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


# tf.estimator.RunConfig's own checks, with its wording (NPURunConfig's checks follow, naming what is allowed).
_TF_CHECKS = (
    ("model_dir", lambda v: bool(v), "model_dir should be non-empty"),
    ("save_summary_steps", lambda v: not _is_int(v) or v >= 0, "save_summary_steps should be >= 0"),
    ("save_checkpoints_steps", lambda v: not _is_int(v) or v >= 0, "save_checkpoints_steps should be >= 0"),
    ("save_checkpoints_secs", lambda v: not isinstance(v, (int, float)) or v >= 0,
     "save_checkpoints_secs should be >= 0"),
    ("keep_checkpoint_max", lambda v: not _is_int(v) or v >= 0, "keep_checkpoint_max should be >= 0"),
    ("keep_checkpoint_every_n_hours", lambda v: not isinstance(v, (int, float)) or v > 0,
     "keep_checkpoint_every_n_hours should be > 0"),
    ("log_step_count_steps", lambda v: not _is_int(v) or v > 0, "log_step_count_steps should be > 0"),
    ("tf_random_seed", _is_int, "tf_random_seed must be integer."),
)


# Options tf.estimator.RunConfig accepts as None, and the value that None means for npurun.
_NONE_MEANS = {"save_summary_steps": 0, "keep_checkpoint_every_n_hours": 10000}


def _tf_checks(options):
    for name, accepted, message in _TF_CHECKS:
        value = options.get(name)
        if value is not None and value is not _DEFAULT and not accepted(value):
            raise ValueError(f"RunConfig: {message} (got {name}={value!r})")
    config = options.get("session_config")
    if config is not None and type(config).__name__ != "ConfigProto":
        raise ValueError(f"RunConfig: session_config must be instance of ConfigProto (got {config!r})")


def _check_tf_cluster(tf_config):
    """tf.estimator.RunConfig's rules for a TF_CONFIG cluster, beyond what any NPURunConfig checks: one chief
    (or one legacy 'master', then no chief and no evaluator), an explicit task index, and without a cluster
    only worker 0."""
    cluster, task = tf_config.get("cluster") or {}, tf_config.get("task") or {}
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        return  # NPURunConfig reports a malformed TF_CONFIG
    if not cluster:
        if task.get("type", "worker") != "worker":
            raise ValueError('environment variable TF_CONFIG: If "cluster" is not set in TF_CONFIG, task type '
                             f'must be WORKER (got {task["type"]!r})')
        if task.get("index", 0) != 0:
            raise ValueError('environment variable TF_CONFIG: If "cluster" is not set in TF_CONFIG, task index '
                             f'must be 0 (got {task["index"]!r})')
        return
    chief = "master" if "master" in cluster else "chief"
    if chief == "master" and "chief" in cluster:
        raise ValueError("environment variable TF_CONFIG: If `master` node exists in `cluster`, job `chief` is "
                         "not supported.")
    if chief not in cluster:
        raise ValueError(f'environment variable TF_CONFIG: If "cluster" is set in TF_CONFIG, it must have one '
                         f'"{chief}" node.')
    if len(cluster[chief]) > 1:
        raise ValueError(f'environment variable TF_CONFIG: The "cluster" in TF_CONFIG must have only one '
                         f'"{chief}" node.')
    if task.get("type") and task.get("index") is None:
        raise ValueError('environment variable TF_CONFIG: If "cluster" is set in TF_CONFIG, task index must be '
                         'set.')
    if chief == "master" and task.get("type") == "evaluator":
        raise ValueError("environment variable TF_CONFIG: If `master` node exists in `cluster`, task_type "
                         "`evaluator` is not supported.")


def _check_kept(kept):
    """tf.estimator's checks of the arguments npurun keeps without using them, in its words."""
    delay = kept.get("experimental_max_worker_delay_secs")
    if delay is not None and not _is_int(delay):
        raise ValueError(f"RunConfig: experimental_max_worker_delay_secs must be an integer if set (got {delay!r})")
    timeout = kept.get("session_creation_timeout_secs", 7200)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"RunConfig: session_creation_timeout_secs should be > 0 (got {timeout!r})")


def _strategy_devices(strategy):
    """The devices a tf.distribute strategy replicates over (None when it does not say: the default strategy)."""
    try:
        return tuple(strategy.extended.worker_devices)
    except Exception:  # the default strategy raises RuntimeError; others may not implement it
        return None


def _strategy_workers(strategy) -> int:
    resolver = getattr(strategy, "cluster_resolver", None)
    try:
        spec = resolver.cluster_spec().as_dict() if resolver is not None else {}
    except Exception:  # a resolver that cannot read its cluster: one worker as far as we can tell
        spec = {}
    return max(1, sum(len(spec.get(job) or ()) for job in ("chief", "worker", "master")))


def _default_device() -> str:
    """Where TensorFlow places a model without a strategy: the first GPU, or the CPU."""
    import tensorflow as tf

    return "GPU:0" if tf.config.list_physical_devices("GPU") else "CPU:0"


def _short(device: str) -> str:
    import tensorflow as tf

    spec = tf.DeviceSpec.from_string(device)
    return f"{spec.device_type}:{spec.device_index or 0}" if spec.device_type else device


_LAUNCH = ("npurun runs an Estimator on several devices as one process per device: `npurun launch -n {n} "
           "script.py` (the model_fn wraps its optimizer in npurun.distribute.NPUDistributedOptimizer and the "
           "input_fn shards its dataset by get_rank_id()/get_rank_size(); see docs/distributed.md), without "
           "{name}")


def _map_strategies(options):
    """`train_distribute` / `eval_distribute` holding a tf.distribute strategy, as npurun runs it.

    A TF 2 ParameterServerStrategy cannot drive an Estimator (tf.estimator's rule); TF 1's is npurun's
    `distribute` option (parameter-server training). A strategy over one device (OneDeviceStrategy,
    the default strategy, MirroredStrategy or MultiWorkerMirroredStrategy over one device of one
    worker) trains as without a strategy, on that device; it is not passed on (NPURunConfig would
    warn that it is stored only). A strategy over several devices or workers is refused, naming them
    and the command that trains on them: npurun never trains on one device of several silently.
    Returns the device a one-device strategy names when it is not where TensorFlow places the model
    anyway, else None.
    """
    import tensorflow as tf

    placement = None
    for name in ("train_distribute", "eval_distribute"):
        strategy = options.get(name)
        if strategy is None or not isinstance(strategy, (tf.distribute.Strategy, tf.compat.v1.distribute.Strategy)):
            continue  # anything else: NPURunConfig stores it for migration tooling, with its warning
        kind = type(strategy).__name__
        if type(strategy).__module__.endswith("parameter_server_strategy_v2"):
            raise ValueError(f"RunConfig: Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` "
                             f"for parameter server strategy with estimator (got {name}={kind})")
        if "ParameterServerStrategy" in kind:
            if options.get("distribute") not in (None, strategy):
                raise ValueError(f"RunConfig: {name}={kind} and distribute={options['distribute']!r} disagree; "
                                 f"give one parameter-server strategy")
            options["distribute"] = options.pop(name)
            continue
        devices = _strategy_devices(strategy)
        workers = _strategy_workers(strategy)
        replicas = strategy.num_replicas_in_sync
        if replicas <= 1 and workers <= 1 and (devices is None or len(devices) <= 1):
            del options[name]
            if devices and _short(devices[0]) != _default_device():
                placement = devices[0]
            continue
        listed = ", ".join(devices or ()) or "unknown devices"
        where = f"{replicas} replicas on {workers} workers" if workers > 1 else f"{replicas} devices ({listed})"
        hosts = " on each host with --hosts" if workers > 1 else ""
        raise ValueError(f"RunConfig: {name}={kind} over {where} is not run by npurun's Estimator (training on "
                         f"one of them would silently leave the others idle). "
                         + _LAUNCH.format(n=replicas, name=name) + hosts)
    return placement


def _local_master_if_single_node(cluster: dict, master: str) -> str:
    """tf.estimator runs a cluster of one task in process (master ''), not through its gRPC server."""
    tasks = [address for addresses in cluster.values() for address in addresses]
    return "" if len(cluster) == 1 and len(tasks) == 1 else master


_DEVICE_FILTERS = {"master": ["/job:ps", "/job:master"], "chief": ["/job:ps", "/job:chief"],
                   "ps": ["/job:ps", "/job:worker", "/job:chief", "/job:master"]}


def _default_distributed_session_config(task_type, task_id):
    """tf.estimator's session_config for a task of a between-graph cluster: each task talks to the ps
    tasks only (device filters), one meta-optimizer pass; None for an evaluator."""
    filters = _DEVICE_FILTERS.get(task_type)
    if task_type == "worker":
        filters = ["/job:ps", f"/job:worker/task:{task_id}"]
    if filters is None:
        return None
    import tensorflow as tf
    from tensorflow.core.protobuf import rewriter_config_pb2

    rewrite = rewriter_config_pb2.RewriterConfig(meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE)
    return tf.compat.v1.ConfigProto(allow_soft_placement=True, device_filters=filters,
                                    graph_options=tf.compat.v1.GraphOptions(rewrite_options=rewrite))


def _check_device_fn(device_fn):
    if device_fn is None:
        return
    try:
        names = [p.name for p in inspect.signature(device_fn).parameters.values()]
    except (TypeError, ValueError):
        names = None
    if not callable(device_fn) or names != ["op"]:
        raise ValueError(f'RunConfig: device_fn must be callable with exactly one argument "op"; got {device_fn!r}')


class RunConfig(NPURunConfig, metaclass=_RunConfigMeta):
    """`tf.estimator.RunConfig(model_dir, tf_random_seed, ...)` as an NPURunConfig (see the module doc)."""

    # A TF_CONFIG cluster with 'ps' tasks and no strategy is described (task_type, cluster_spec, ...);
    # training in it is the error (NPUEstimator.train), not making the config.
    RULES = tuple(rules.parameter_servers_when_training if rule is rules.parameter_servers else rule
                  for rule in NPURunConfig.RULES)

    def __init__(self, *args, **kwargs):
        names = [name for name, _ in TF_RUN_CONFIG_PARAMETERS]
        if len(args) > len(names):
            raise TypeError(f"RunConfig() takes at most {len(names)} positional arguments ({len(args)} given)")
        for name, value in zip(names, args):
            if name in kwargs:
                raise TypeError(f"RunConfig() got multiple values for argument {name!r}")
            kwargs[name] = value
        defaults = dict(TF_RUN_CONFIG_PARAMETERS)
        tf_config = _tf_config()
        given = dict(kwargs)
        options, kept = {}, {}
        for name, value in kwargs.items():
            if name in _KEPT:
                kept[name] = value
                if name not in _HONOURED and value is not defaults[name] and value != defaults[name]:
                    warnings.warn(f"tf.estimator.RunConfig: argument {name}={value!r} has no effect with npurun",
                                  UserWarning, stacklevel=2)
            elif name in NPURunConfig.OPTIONS:
                options[name] = value
            else:
                raise TypeError(f"RunConfig() got an unexpected keyword argument {name!r}")
        _check_device_fn(kept.get("device_fn"))
        _check_kept(kept)
        strategy_device = _map_strategies(options)
        _tf_checks(options)
        _check_tf_cluster(tf_config)
        if "model_dir" in tf_config:
            if tf_config["model_dir"] == "":
                raise ValueError("RunConfig: model_dir in TF_CONFIG should be non-empty.")
            if options.get("model_dir") is not None and os.fspath(options["model_dir"]) != tf_config["model_dir"]:
                raise ValueError(f"RunConfig: `model_dir` provided in RunConfig construct, if set, must have the "
                                 f"same value as the model_dir in TF_CONFIG. (model_dir are set both in constructor "
                                 f"and TF_CONFIG, but with different values: {options['model_dir']!r} and "
                                 f"{tf_config['model_dir']!r})")
            options["model_dir"] = tf_config["model_dir"]
        service = tf_config.get("service")
        if service is not None and not isinstance(service, dict):
            raise TypeError(f'If "service" is set in TF_CONFIG, it must be a dict. Given {type(service)}')
        options.setdefault("save_summary_steps", defaults["save_summary_steps"])
        # tf.estimator takes None for these (no summaries; Saver's default) and reports None back.
        given_none = {name for name in _NONE_MEANS if name in options and options[name] is None}
        for name in given_none:
            options[name] = _NONE_MEANS[name]
        steps = options.get("save_checkpoints_steps", _DEFAULT)
        secs = options.get("save_checkpoints_secs", _DEFAULT)
        self_disabled = False
        if steps is _DEFAULT and secs is _DEFAULT:
            options.pop("save_checkpoints_steps", None)
            options["save_checkpoints_secs"] = TF_DEFAULT_CHECKPOINT_SECS
        elif steps is not _DEFAULT and secs is not _DEFAULT and steps is not None and secs is not None:
            raise ValueError(f"RunConfig: {SAVE_CKPT_ERR} (got save_checkpoints_steps={steps!r}, "
                             f"save_checkpoints_secs={secs!r}); set one of them")
        elif steps in (None, _DEFAULT) and secs in (None, _DEFAULT):
            # One or both given as None, none set: tf.estimator then saves no checkpoints.
            options.pop("save_checkpoints_secs", None)
            options["save_checkpoints_steps"] = 0
            self_disabled = True
        else:
            for name in ("save_checkpoints_steps", "save_checkpoints_secs"):
                if options.get(name, _DEFAULT) in (None, _DEFAULT):
                    options.pop(name, None)
        super().__init__(**options)
        self._tf_given = given
        self._kept = {name: kept.get(name, defaults[name]) for name in _KEPT}
        self._strategies = {name: given.get(name) for name in ("train_distribute", "eval_distribute")}
        # A one-device strategy's device, when TensorFlow would place the model elsewhere (device_fn wins).
        self._strategy_device = strategy_device
        self._checkpoints_disabled = self_disabled
        self._given_none = given_none
        self._session_master = tf_config.get("session_master")
        self._service = service
        # Read now, as tf.estimator does: TF_CONFIG may change after the config is made.
        cluster = tf_config.get("cluster") or {}
        evaluator_or_local = not cluster or (tf_config.get("task") or {}).get("type") == "evaluator"
        self._evaluation_master = tf_config.get("eval_session_master", "") if evaluator_or_local else ""

    def __setattr__(self, name, value):
        # tf.estimator's RunConfig settings are read-only, but code may hang attributes of its own on it
        # (model_fn(config=...) then reads them back).
        if not name.startswith("_") and name not in self.OPTIONS and not hasattr(type(self), name):
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    def replace(self, **changes) -> "RunConfig":
        """A new RunConfig with `changes`; replacing one checkpoint interval drops the other."""
        known = {name for name, _ in TF_RUN_CONFIG_PARAMETERS} | set(NPURunConfig.OPTIONS)
        for name in changes:
            if name not in known:
                raise ValueError(f"Replacing {name} is not supported: RunConfig has no argument {name!r}")
        arguments = {**self._tf_given, **changes}
        if "save_checkpoints_steps" in changes and "save_checkpoints_secs" not in changes \
                and changes["save_checkpoints_steps"] is not None:
            arguments["save_checkpoints_secs"] = None
        elif "save_checkpoints_secs" in changes and "save_checkpoints_steps" not in changes \
                and changes["save_checkpoints_secs"] is not None:
            arguments["save_checkpoints_steps"] = None
        if "model_dir" in changes and "model_dir" in _tf_config():
            arguments.pop("model_dir")  # TF_CONFIG's model_dir, re-read; a different one is an error
            if changes["model_dir"] is not None:
                arguments["model_dir"] = changes["model_dir"]
        # Built through RunConfig's own signature, then carried into a copy of this object: a subclass
        # with another __init__ (tf.estimator code subclasses RunConfig to override is_chief, ...) keeps
        # its type and its own attributes, as tf.estimator's copy-based replace does.
        rebuilt = RunConfig(**arguments)
        result = copy.copy(self)
        result.__dict__.update(rebuilt.__dict__)
        return result

    # ---- what tf.estimator.RunConfig exposes beyond NPURunConfig -----------------------------------
    @property
    def save_checkpoints_steps(self):
        return None if self._checkpoints_disabled else self.options["save_checkpoints_steps"]

    @property
    def save_checkpoints_secs(self):
        return None if self._checkpoints_disabled else self.options["save_checkpoints_secs"]

    @property
    def save_summary_steps(self):
        return None if "save_summary_steps" in self._given_none else self.options["save_summary_steps"]

    @property
    def keep_checkpoint_every_n_hours(self):
        return None if "keep_checkpoint_every_n_hours" in self._given_none \
            else self.options["keep_checkpoint_every_n_hours"]

    # An evaluator task is not part of the training cluster (tf.estimator's rule).
    def _is_evaluator(self) -> bool:
        return self.task_type == "evaluator"

    @property
    def cluster_spec(self):
        import tensorflow as tf

        return tf.train.ClusterSpec({} if self._is_evaluator() else super().cluster_spec)

    @property
    def num_worker_replicas(self) -> int:
        return 0 if self._is_evaluator() else super().num_worker_replicas

    @property
    def num_ps_replicas(self) -> int:
        return 0 if self._is_evaluator() else super().num_ps_replicas

    @property
    def global_id_in_cluster(self):
        return None if self._is_evaluator() else super().global_id_in_cluster

    @property
    def master(self) -> str:
        if self._session_master is not None:
            return self._session_master
        return "" if self._is_evaluator() else _local_master_if_single_node(super().cluster_spec, super().master)

    @property
    def evaluation_master(self) -> str:
        return self._evaluation_master

    @property
    def session_config(self):
        """The session_config given, or for a task of a cluster tf.estimator's default (device filters
        so that each task talks to the ps tasks only); None otherwise."""
        given = self.options["session_config"]
        if given is not None or not super().cluster_spec:
            return given
        return _default_distributed_session_config(self.task_type, self.task_id)

    @property
    def service(self):
        """TF_CONFIG's `service` dict, or None."""
        return self._service

    @property
    def device_fn(self):
        return self._kept["device_fn"]

    @property
    def train_distribute(self):
        """The strategy given (a one-device one trains as without it; see `_map_strategies`)."""
        return self._strategies["train_distribute"]

    @property
    def eval_distribute(self):
        return self._strategies["eval_distribute"]

    @property
    def protocol(self):
        return self._kept["protocol"]

    @property
    def experimental_max_worker_delay_secs(self):
        return self._kept["experimental_max_worker_delay_secs"]

    @property
    def session_creation_timeout_secs(self):
        return self._kept["session_creation_timeout_secs"]

    @property
    def checkpoint_save_graph_def(self):
        return self._kept["checkpoint_save_graph_def"]


RunConfig.__init__.__signature__ = inspect.Signature(
    [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    + [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                         default=None if default is _DEFAULT else default)
       for name, default in TF_RUN_CONFIG_PARAMETERS])
