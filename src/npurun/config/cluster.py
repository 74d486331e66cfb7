"""Where this process sits in a cluster, read from `TF_CONFIG`, the Ascend `RANK_ID` variables and a
cluster manager's rank (srun, torchrun, mpirun: see `managers`).

Plain Python (no TensorFlow): the same rules as tf.estimator.RunConfig's derived properties.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Mapping, Optional

from . import managers


@dataclass(frozen=True)
class ClusterInfo:
    """The cluster and this process's task in it.

    `cluster` maps job names ("chief", "worker", "ps", "evaluator") to task addresses; it is
    empty for a single process.
    """

    cluster: Mapping[str, tuple] = field(default_factory=dict)
    task_type: str = "worker"
    task_id: int = 0
    rank_id: Optional[int] = None  # from RANK_ID, when set

    @property
    def is_chief(self) -> bool:
        """The process that writes checkpoints and summaries."""
        if self.rank_id is not None and not self.cluster:
            return self.rank_id == 0
        if not self.cluster:
            return True
        if "chief" in self.cluster or "master" in self.cluster:
            return self.task_type in ("chief", "master")
        return self.task_type == "worker" and self.task_id == 0

    @property
    def num_worker_replicas(self) -> int:
        if not self.cluster:
            return 1
        return sum(len(self.cluster.get(job, ())) for job in ("chief", "master", "worker"))

    @property
    def num_ps_replicas(self) -> int:
        return len(self.cluster.get("ps", ()))

    @property
    def master(self) -> str:
        """The gRPC target of this task's server, or '' for an in-process session."""
        if not self.cluster or self.task_type not in self.cluster:
            return ""
        return "grpc://" + self.cluster[self.task_type][self.task_id]

    @property
    def global_id_in_cluster(self) -> int:
        """0 for the chief, then the other jobs' tasks in tf.estimator's order: the jobs other than
        chief/master and ps sorted by name, ps last."""
        if not self.cluster:
            return self.rank_id or 0
        leaders = [job for job in ("chief", "master") if job in self.cluster]
        others = sorted(job for job in self.cluster if job not in ("chief", "master", "ps", "evaluator"))
        order = leaders + (others or ["worker"]) + ["ps"]
        offset = 0
        for job in order:
            if job == self.task_type:
                return offset + self.task_id
            offset += len(self.cluster.get(job, ()))
        return offset + self.task_id


def read_cluster(environ: Mapping[str, str] = os.environ) -> ClusterInfo:
    """The cluster described by `TF_CONFIG` and `RANK_ID`; errors name the variable and the problem."""
    rank_id = managers.env_int(environ, "RANK_ID")  # ASCII digits only: "²" and "٣" are refused
    if rank_id is None and not environ.get("TF_CONFIG", "").strip() and not environ.get("RANK_SIZE", "").strip():
        manager = managers.read_manager(environ)  # srun / torchrun / mpirun: the chief is their rank 0
        if manager is not None:
            rank_id = manager.rank_id
    raw = environ.get("TF_CONFIG", "").strip()
    if not raw:
        return ClusterInfo(rank_id=rank_id)
    tf_config = _decode_tf_config(raw)
    cluster = {job: tuple(addresses) for job, addresses in (tf_config.get("cluster") or {}).items()}
    task = tf_config.get("task") or {}
    task_type = task.get("type", "worker" if not cluster else None)
    task_id = task.get("index", 0)
    if cluster:
        # tf.estimator.RunConfig's sentences are kept inside these messages: code matches on them.
        if task_type is None:
            raise ValueError("environment variable TF_CONFIG: If \"cluster\" is set in TF_CONFIG, task type must "
                             "be set (a 'cluster' needs a 'task' with 'type' and 'index')")
        if isinstance(task_id, int) and task_id < 0:
            raise ValueError(f"environment variable TF_CONFIG: Task index must be non-negative number. "
                             f"(got {task_id} for job {task_type!r})")
        if task_type != "evaluator" and task_type not in cluster:
            raise ValueError(f"environment variable TF_CONFIG: {task_type} is not a valid task_type in the "
                             f"cluster_spec: it is not a job of the cluster ({', '.join(sorted(cluster))})")
        if not isinstance(task_id, int) or (task_type in cluster and task_id >= len(cluster[task_type])):
            raise ValueError(f"environment variable TF_CONFIG: {task_id} is not a valid task_id for task_type "
                             f"{task_type} in the cluster_spec (out of range for job {task_type!r})")
    return ClusterInfo(cluster=cluster, task_type=task_type, task_id=task_id, rank_id=rank_id)


TF_CONFIG_LIMIT = 1 << 20  # characters: a cluster of thousands of tasks is well under this


def _decode_tf_config(raw: str) -> dict:
    """TF_CONFIG's JSON with the shape read_cluster relies on, else one ValueError naming the variable:
    an object whose 'cluster' maps job names to lists of address strings and whose 'task' is an object
    with a string 'type' and an int 'index' (each optional)."""
    from .errors import bounded_repr

    where = "environment variable TF_CONFIG"
    if len(raw) > TF_CONFIG_LIMIT:
        raise ValueError(f"{where}: {len(raw)} characters; at most {TF_CONFIG_LIMIT}")
    try:
        tf_config = json.loads(raw)
    except RecursionError:
        raise ValueError(f"{where} is nested too deeply to be a cluster description") from None
    except ValueError as err:
        raise ValueError(f"{where} is not valid JSON: {err}") from None
    if not isinstance(tf_config, dict):
        raise ValueError(f"{where}: expected a JSON object with 'cluster' and 'task'")
    cluster = tf_config.get("cluster")
    cluster = {} if cluster is None else cluster
    if not isinstance(cluster, dict) or not all(
            isinstance(v, list) and all(isinstance(a, str) for a in v) for v in cluster.values()):
        raise ValueError(f"{where}: 'cluster' must map job names to lists of addresses (strings)")
    task = tf_config.get("task")
    task = {} if task is None else task
    if not isinstance(task, dict):
        raise ValueError(f"{where}: 'task' must be an object with 'type' and 'index', got {bounded_repr(task)}")
    if "type" in task and not isinstance(task["type"], str):
        raise ValueError(f"{where}: the task 'type' must be a job name (a string), got {bounded_repr(task['type'])}")
    if "index" in task:
        task["index"] = tf_config_task_index(task["index"], where)
    return tf_config


def tf_config_task_index(index, where: str = "environment variable TF_CONFIG") -> int:
    """The task 'index' of TF_CONFIG as an int, read as TensorFlow reads it (its cluster resolver and
    distribute coordinator call int() on it, so "1" and 1.0 are task 1); anything int() would not read
    exactly (True, 1.5, "one", "²") is one ValueError naming the variable."""
    from .errors import bounded_repr

    if isinstance(index, int) and not isinstance(index, bool):
        return index
    if isinstance(index, float) and index.is_integer():
        return int(index)
    if isinstance(index, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", index, flags=re.ASCII) and len(index) < 30:
        return int(index)
    raise ValueError(f"{where}: the task 'index' must be an int (or a string of digits), got {bounded_repr(index)}")
