"""`tf.contrib.tpu`'s estimator API with `use_tpu=False`, as TensorFlow 1 ran it on CPUs and GPUs.

Many ModelZoo scripts descend from Google's TPU reference code (BERT, ...) and build a
`tf.contrib.tpu.TPUEstimator(use_tpu=False, ...)` with a `tf.contrib.tpu.RunConfig`. Without a TPU,
TensorFlow 1 ran that as a plain Estimator: `params["batch_size"]` is the mode's batch size (the
`train_batch_size` / `eval_batch_size` / `predict_batch_size` given), a `TPUEstimatorSpec` becomes an
EstimatorSpec (`eval_metrics=(metric_fn, tensors)` -> `metric_fn(*tensors)`, `scaffold_fn()` ->
scaffold), and `tpu_config` is unused. Here the Estimator is `tf.estimator.Estimator` (an
NPUEstimator). `use_tpu=True` raises AdapterAPIError: there is no TPU.
"""
from __future__ import annotations

import inspect

from ...names.coverage import AdapterAPIError

_NO_TPU = ("tf.contrib.tpu.TPUEstimator(use_tpu=True) is not supported by npurun: there is no TPU here; pass "
           "use_tpu=False (the scripts' --use_tpu=False) to run it as an Estimator")


class InputPipelineConfig:
    PER_SHARD_V1, PER_HOST_V1, PER_HOST_V2, BROADCAST, SLICED = 1, 2, 3, 4, 5


class TPUConfig:
    """Kept as given; nothing reads it without a TPU."""

    def __init__(self, iterations_per_loop=2, num_shards=None, num_cores_per_replica=None,
                 per_host_input_for_training=True, tpu_job_name=None, initial_infeed_sleep_secs=None,
                 input_partition_dims=None, eval_training_input_configuration=None, **kwargs):
        self.iterations_per_loop = iterations_per_loop
        self.num_shards = num_shards
        self.per_host_input_for_training = per_host_input_for_training


def RunConfig(tpu_config=None, evaluation_master=None, master=None, cluster=None, **kwargs):  # noqa: N802
    """tf.contrib.tpu.RunConfig: tf.estimator.RunConfig(**kwargs); the TPU arguments are unused without a TPU."""
    import tensorflow as tf

    return tf.compat.v1.estimator.RunConfig(**kwargs)


class TPUEstimatorSpec:
    """The TPU form of an EstimatorSpec; `as_estimator_spec()` gives the plain one."""

    def __init__(self, mode, predictions=None, loss=None, train_op=None, eval_metrics=None, export_outputs=None,
                 scaffold_fn=None, host_call=None, training_hooks=None, evaluation_hooks=None,
                 prediction_hooks=None):
        self.mode, self.predictions, self.loss, self.train_op = mode, predictions, loss, train_op
        self.eval_metrics, self.export_outputs, self.scaffold_fn = eval_metrics, export_outputs, scaffold_fn
        self.host_call = host_call
        self.training_hooks, self.evaluation_hooks, self.prediction_hooks = (
            training_hooks, evaluation_hooks, prediction_hooks)

    def as_estimator_spec(self):
        import tensorflow as tf

        eval_metric_ops = None
        if self.eval_metrics is not None:
            metric_fn, tensors = self.eval_metrics
            eval_metric_ops = metric_fn(**tensors) if isinstance(tensors, dict) else metric_fn(*tensors)
        hooks = list(self.training_hooks or [])
        if self.host_call is not None:
            raise AdapterAPIError("TPUEstimatorSpec(host_call=...) is not supported by npurun without a TPU; "
                                  "write the summaries in model_fn, or use NPUEstimatorSpec(host_call=...)")
        return tf.compat.v1.estimator.EstimatorSpec(
            mode=self.mode, predictions=self.predictions, loss=self.loss, train_op=self.train_op,
            eval_metric_ops=eval_metric_ops, export_outputs=self.export_outputs,
            scaffold=self.scaffold_fn() if self.scaffold_fn is not None else None, training_hooks=hooks,
            evaluation_hooks=self.evaluation_hooks, prediction_hooks=self.prediction_hooks)


def _call(fn, available):
    accepted = inspect.signature(fn).parameters
    return fn(**{name: value for name, value in available.items() if name in accepted})


def _make_tpu_estimator():
    import tensorflow as tf

    base = tf.compat.v1.estimator.Estimator

    class TPUEstimator(base):
        """tf.contrib.tpu.TPUEstimator with use_tpu=False: an Estimator giving model_fn/input_fn params["batch_size"]."""

        def __init__(self, model_fn=None, model_dir=None, config=None, params=None, use_tpu=True,
                     train_batch_size=None, eval_batch_size=None, predict_batch_size=None, batch_axis=None,
                     eval_on_tpu=True, export_to_tpu=True, export_to_cpu=True, warm_start_from=None, **kwargs):
            if use_tpu:
                raise AdapterAPIError(_NO_TPU, name="tf.contrib.tpu.TPUEstimator")
            self._batch_sizes = {"train": train_batch_size, "eval": eval_batch_size, "infer": predict_batch_size}
            user_params = dict(params or {})

            def plain_model_fn(features, labels, mode, params, config):
                params = {**params, "batch_size": self._batch_sizes.get(mode), "use_tpu": False}
                spec = _call(model_fn, {"features": features, "labels": labels, "mode": mode, "params": params,
                                        "config": config})
                return spec.as_estimator_spec() if isinstance(spec, TPUEstimatorSpec) else spec

            super().__init__(model_fn=plain_model_fn, model_dir=model_dir, config=config, params=user_params,
                             warm_start_from=warm_start_from)

        def _with_batch_size(self, input_fn, mode):
            def plain_input_fn(params):
                return _call(input_fn, {"params": {**params, "batch_size": self._batch_sizes.get(mode)}})
            return plain_input_fn

        def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
            return super().train(self._with_batch_size(input_fn, "train"), hooks=hooks, steps=steps,
                                 max_steps=max_steps, saving_listeners=saving_listeners)

        def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
            return super().evaluate(self._with_batch_size(input_fn, "eval"), steps=steps, hooks=hooks,
                                    checkpoint_path=checkpoint_path, name=name)

        def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None, yield_single_examples=True):
            return super().predict(self._with_batch_size(input_fn, "infer"), predict_keys=predict_keys, hooks=hooks,
                                   checkpoint_path=checkpoint_path, yield_single_examples=yield_single_examples)

    return TPUEstimator


class TpuContext:
    """`tpu_function.get_tpu_context()` outside a TPU computation: no shards (TensorFlow 1 gave None, so the
    scripts' `num_shards = get_tpu_context().number_of_shards or 1` and `if num_shards > 1` take the
    single-device path)."""

    number_of_shards = None


def get_tpu_context():
    return TpuContext()


def __getattr__(name):
    if name == "TPUEstimator":
        value = _make_tpu_estimator()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
