"""The session plan: everything the options ask of TensorFlow for one session (the types only).

`npurun.runtime.contributors.build_plan` starts from the user's `session_config`
(`base_config_proto`) and lets each contributor add what its options need; this module does not
know the contributors, so each of them imports it without a circle. Contributors are small functions `contribute(options, mode, plan)`; each owns a
group of options, so no option is mapped in two places.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Optional

import tensorflow as tf

from ..config import param_map

Options = Mapping[str, Any]


@dataclass
class SessionPlan:
    """What a session needs from the options.

    Attributes:
      config_proto: the ConfigProto the session is created with.
      env: environment variables TensorFlow reads; set for the session's lifetime and restored.
      graph_transforms: functions `(graph, mode) -> None` applied after `model_fn` built the graph
        and before it is finalised.
      hooks: SessionRunHooks added to the run (dump, profiling, ...).
      feed_checks: objects with `check(graph, feed_dict)` that a session made from the plan (NPUSession)
        calls before each run with the caller's feeds (dynamic_inputs.FeedCheck: the `data` ranges of
        a session created before its graph was built).
      device: the device string model ops are placed on ('' lets TensorFlow choose).
      run_timeout_ms: per-run timeout (RunOptions.timeout_in_ms), 0 for none.
      target: the session target: '' for an in-process session, else the gRPC target of this
        process's TensorFlow server (a distributed run: several ranks or parameter servers, set by
        the distribute contributor whether the cluster comes from TF_CONFIG, RANK_TABLE_FILE or
        RANK_ID / RANK_SIZE). The session must be created on it: collectives and parameter
        servers are reached only through the server.
      wait_for_initialization: None, or a function `(session) -> None` for a session whose global
        variables another task initialises (a non-chief parameter-server worker). Then the
        session's creator must not initialise or restore global variables: it runs the input
        initialiser, calls `wait_for_initialization(session)` (returns once they are initialised,
        raises `InitializationTimeoutError` after a bounded wait), then runs only the local
        initialisers (local variables and tables).
      stop_flag: None, or a function `() -> StopFlag or None` that builds, in the training graph,
        how the ranks of a distributed run agree to stop after a SIGTERM / SIGINT
        (distribute/stop_flag.py); None: this process stops on its own signal.
    """

    config_proto: Any
    env: dict = field(default_factory=dict)
    graph_transforms: list = field(default_factory=list)
    hooks: list = field(default_factory=list)
    feed_checks: list = field(default_factory=list)
    device: str = ""
    run_timeout_ms: int = 0
    target: str = ""
    wait_for_initialization: Optional[Callable[[Any], None]] = None
    stop_flag: Optional[Callable[[], Any]] = None

    @contextlib.contextmanager
    def environment(self) -> Iterator[None]:
        """Set `env` for the duration of the block, then restore what was there before."""
        saved = {key: os.environ.get(key) for key in self.env}
        os.environ.update(self.env)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


Contributor = Callable[[Options, str, SessionPlan], None]


def base_config_proto(options: Options):
    """The user's session_config (copied, NpuOptimizer entries removed) or a fresh ConfigProto."""
    proto = tf.compat.v1.ConfigProto()
    if options.get("session_config") is not None:
        proto.CopyFrom(options["session_config"])
        param_map.strip_npu_optimizer(proto)
    else:
        # As tf.estimator did: ops without a kernel on the chosen device fall back to the CPU.
        proto.allow_soft_placement = True
    return proto
