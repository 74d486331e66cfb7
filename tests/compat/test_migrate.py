"""npurun migrate: each rewrite on its own, the product document's example, idempotence, the CLI modes."""
import textwrap

import pytest

from npurun.tools.migrate import migrate_source

from .conftest import SCRIPTS, run_compat


def _migrate(source):
    return migrate_source(textwrap.dedent(source))


def _body(migration):
    """The migrated source without the import lines the migration added."""
    return "\n".join(line for line in migration.migrated.splitlines()
                     if not line.startswith(("from npurun", "import tensorflow")))


def test_seed_example_before_after():
    before = textwrap.dedent("""\
        import tensorflow as tf
        import horovod.tensorflow as hvd

        self._classifier=tf.estimator.Estimator(
          model_fn=cnn_model_fn,
          model_dir=self._model_dir,
          config=tf.estimator.RunConfig(
              save_checkpoints_steps=50 if hvd.rank() == 0 else None,
              keep_checkpoint_max=1))
        """)
    after = textwrap.dedent("""\
        import tensorflow as tf
        from npurun import NPUEstimator, NPURunConfig
        from npurun.distribute import get_rank_id

        self._classifier=NPUEstimator(
          model_fn=cnn_model_fn,
          model_dir=self._model_dir,
          config=NPURunConfig(
              save_checkpoints_steps=50 if get_rank_id() == 0 else 0,
              keep_checkpoint_max=1,
              save_summary_steps=100))
        """)
    migration = migrate_source(before)
    assert migration.migrated == after
    assert [n.line for n in migration.changes] == [4, 7, 7, 8, 8]
    assert migration.not_migrated == []
    again = migrate_source(migration.migrated)
    assert not again.changed and again.changes == []


def test_run_config_rename_in_every_import_form():
    for source, call in (("import tensorflow as tf\n", "tf.estimator.RunConfig"),
                         ("import tensorflow.compat.v1 as tf\n", "tf.estimator.RunConfig"),
                         ("import tensorflow as tf\n", "tf.compat.v1.estimator.RunConfig"),
                         ("from tensorflow import estimator as est\n", "est.RunConfig"),
                         ("from tensorflow.estimator import RunConfig\n", "RunConfig")):
        migration = migrate_source(f"{source}config = {call}(keep_checkpoint_max=1)\n")
        assert "config = NPURunConfig(keep_checkpoint_max=1, save_summary_steps=100)" in migration.migrated, source
        assert "from npurun import NPURunConfig" in migration.migrated
    direct = migrate_source("from tensorflow.estimator import RunConfig\nc = RunConfig()\n")
    assert "tensorflow.estimator" not in direct.migrated  # the now unused import is removed


def test_run_config_arguments_npurunconfig_does_not_accept_are_removed_with_a_note():
    migration = _migrate("""\
        import tensorflow as tf
        c = tf.estimator.RunConfig(model_dir="m", device_fn=None, protocol="grpc", experimental_distribute=None,
                                   session_creation_timeout_secs=10, keep_checkpoint_max=3)
        """)
    assert 'NPURunConfig(model_dir="m", keep_checkpoint_max=3, save_summary_steps=100)' in migration.migrated
    removed = [n.text for n in migration.changes if n.text.startswith("removed argument")]
    assert removed == ["removed argument device_fn=None (NPURunConfig does not accept device_fn)",
                       "removed argument protocol=\"grpc\" (NPURunConfig does not accept protocol)",
                       "removed argument experimental_distribute=None (NPURunConfig does not accept "
                       "experimental_distribute)",
                       "removed argument session_creation_timeout_secs=10 (NPURunConfig does not accept "
                       "session_creation_timeout_secs)"]


def test_run_config_positional_arguments_become_keywords_and_statuses_are_noted():
    migration = _migrate("""\
        import tensorflow as tf
        c = tf.estimator.RunConfig("/tmp/m", 42, train_distribute=None)
        """)
    assert ('NPURunConfig(model_dir="/tmp/m", tf_random_seed=42, train_distribute=None, save_summary_steps=100)'
            in migration.migrated)
    assert any("train_distribute: NPURunConfig accepts it; status here: not supported" in n.text
               for n in migration.notes)


def test_estimator_rename_and_fifth_positional_argument():
    migration = _migrate("""\
        import tensorflow as tf
        e = tf.estimator.Estimator(model_fn, "/tmp/m", config, params, "/tmp/warm")
        class MyEstimator(tf.estimator.Estimator):
            pass
        """)
    assert 'e = NPUEstimator(model_fn, "/tmp/m", config, params, warm_start_from="/tmp/warm")' in migration.migrated
    assert "class MyEstimator(NPUEstimator):" in migration.migrated


def test_specs_mode_keys_and_train_and_evaluate_come_from_npurun():
    migration = _migrate("""\
        import tensorflow as tf
        if mode == tf.estimator.ModeKeys.TRAIN:
            spec = tf.estimator.EstimatorSpec(mode, loss=loss, train_op=op)
        tf.estimator.train_and_evaluate(e, tf.estimator.TrainSpec(f, max_steps=1), tf.estimator.EvalSpec(g))
        """)
    assert "from npurun import EstimatorSpec, EvalSpec, ModeKeys, TrainSpec, train_and_evaluate" in migration.migrated
    assert "if mode == ModeKeys.TRAIN:" in migration.migrated
    assert "train_and_evaluate(e, TrainSpec(f, max_steps=1), EvalSpec(g))" in migration.migrated


def test_seed_spelling_tf_estimator_npurunconfig():
    migration = _migrate("""\
        import tensorflow as tf
        c = tf.estimator.NPURunConfig(save_checkpoints_steps=50 if get_rank_id() == 0 else None)
        """)
    assert "c = NPURunConfig(save_checkpoints_steps=50 if get_rank_id() == 0 else 0)" in migration.migrated


@pytest.mark.parametrize("expression, expected", [
    ("50 if hvd.rank() == 0 else None", "50 if get_rank_id() == 0 else 0"),
    ("50 if 0 == hvd.rank() else None", "50 if 0 == get_rank_id() else 0"),
    ("None if hvd.rank() != 0 else 50", "0 if get_rank_id() != 0 else 50"),
    ("50 if rank() == 0 else None", "50 if rank() == 0 else 0"),
    ("50 if hvd.rank() == 1 else None", "50 if get_rank_id() == 1 else None"),  # not the rank-0 pattern
])
def test_rank_zero_only_checkpoint_pattern(expression, expected):
    migration = _migrate(f"""\
        import tensorflow as tf
        import horovod.tensorflow as hvd
        c = tf.estimator.RunConfig(save_checkpoints_steps={expression})
        """)
    assert f"c = NPURunConfig(save_checkpoints_steps={expected}, save_summary_steps=100)" in migration.migrated


def test_rank_zero_pattern_in_an_existing_npurunconfig_is_fixed_too():
    migration = _migrate("""\
        from npurun import NPURunConfig
        c = NPURunConfig(save_checkpoints_steps=100 if get_rank_id() == 0 else None)
        """)
    assert "100 if get_rank_id() == 0 else 0" in migration.migrated


def test_save_checkpoints_secs_on_rank_zero_is_reported_not_rewritten():
    migration = _migrate("""\
        import tensorflow as tf
        c = tf.estimator.RunConfig(save_checkpoints_secs=60 if hvd.rank() == 0 else None, **extra)
        """)
    assert "save_checkpoints_secs=60 if" in migration.migrated
    texts = [n.text for n in migration.not_migrated]
    assert any("save_checkpoints_secs saved on rank 0 only" in t for t in texts)
    assert any("**extra" in t and "not checked" in t for t in texts)


def test_horovod_calls_and_import():
    migration = _migrate("""\
        import tensorflow as tf
        import horovod.tensorflow as hvd
        hvd.init()
        n = hvd.size() * hvd.local_size() + hvd.local_rank()
        opt = hvd.DistributedOptimizer(tf.compat.v1.train.AdamOptimizer(0.001 * hvd.size()))
        hooks = [hvd.BroadcastGlobalVariablesHook(0)]
        """)
    body = _body(migration)
    assert "hvd" not in migration.migrated and "horovod" not in migration.migrated
    assert "n = get_rank_size() * get_local_rank_size() + get_local_rank_id()" in body
    assert "opt = NPUDistributedOptimizer(tf.compat.v1.train.AdamOptimizer(0.001 * get_rank_size()))" in body
    assert "hooks = [NPUBroadcastGlobalVariablesHook(0, get_rank_id())]" in body
    assert ("from npurun.distribute import NPUBroadcastGlobalVariablesHook, NPUDistributedOptimizer, "
            "get_local_rank_id, get_local_rank_size, get_rank_id, get_rank_size") in migration.migrated
    assert any(n.text.startswith("removed hvd.init()") for n in migration.changes)


def test_horovod_calls_without_counterpart_are_reported_and_the_import_kept():
    migration = _migrate("""\
        import horovod.tensorflow as hvd
        x = hvd.allreduce(t)
        opt = hvd.DistributedOptimizer(opt, sparse_as_dense=True)
        """)
    assert "import horovod.tensorflow as hvd" in migration.migrated
    assert "hvd.DistributedOptimizer(opt, sparse_as_dense=True)" in migration.migrated
    texts = [n.text for n in migration.not_migrated]
    assert any(t.startswith("hvd.allreduce: no npurun counterpart") for t in texts)
    assert any("sparse_as_dense=True have no NPUDistributedOptimizer counterpart" in t for t in texts)


def test_other_tf_estimator_names_are_reported():
    migration = _migrate("""\
        import tensorflow as tf
        d = tf.estimator.BoostedTreesClassifier(feature_columns=[], n_batches_per_layer=1)
        h = tf.estimator.inputs.pandas_input_fn(frame)
        c = tf.estimator.DNNClassifier(hidden_units=[1])
        """)
    assert not migration.changed
    texts = [n.text for n in migration.not_migrated]
    assert texts[0].startswith("tf.estimator.BoostedTreesClassifier: no npurun counterpart (the boosted-trees")
    assert texts[1].startswith("tf.estimator.inputs: left as it is (npurun provides inputs.numpy_input_fn of it")
    assert texts[2].endswith("under `npurun run` the compat layer provides tf.estimator.DNNClassifier")
    assert "has no" not in " ".join(texts)


def test_run_config_without_summary_steps_keeps_tensorboard_summaries():
    migration = _migrate("""\
        import tensorflow as tf
        a = tf.estimator.RunConfig(model_dir="m")
        b = tf.estimator.RunConfig(model_dir="m", save_summary_steps=10)
        """)
    assert 'a = NPURunConfig(model_dir="m", save_summary_steps=100)' in migration.migrated
    assert 'b = NPURunConfig(model_dir="m", save_summary_steps=10)' in migration.migrated
    texts = [n.text for n in migration.changes if "save_summary_steps" in n.text]
    assert len(texts) == 1 and "NPURunConfig's default 0 writes none" in texts[0]


def test_inputs_export_and_layers_are_rewritten_to_names_that_run_under_plain_python():
    migration = _migrate("""\
        import tensorflow as tf
        net = tf.compat.v1.layers.dense(x, 64, activation=tf.nn.relu)
        flat = tf.layers.flatten(net)
        f = tf.compat.v1.estimator.inputs.numpy_input_fn(x, y, shuffle=True)
        g = tf.estimator.inputs.numpy_input_fn(x, y, shuffle=False)
        r = tf.estimator.export.build_raw_serving_input_receiver_fn({"x": t})
        s = tf.estimator.export.ServingInputReceiver(features, receivers)
        """)
    assert migration.not_migrated == []
    body = _body(migration)
    assert "net = npu_layers.dense(x, 64, activation=tf.nn.relu)" in body and "flat = npu_layers.flatten(net)" in body
    assert "f = numpy_input_fn(x, y, shuffle=True)" in body and "g = numpy_input_fn(x, y, shuffle=False)" in body
    assert 'r = build_raw_serving_input_receiver_fn({"x": t})' in body
    assert "s = ServingInputReceiver(features, receivers)" in body
    imports = migration.migrated
    assert imports.count("from npurun.tf1 import layers as npu_layers\n") == 1
    assert "from npurun.tf_estimator import numpy_input_fn" in imports
    assert "from npurun.estimator import ServingInputReceiver, build_raw_serving_input_receiver_fn" in imports
    # the names imported exist
    import npurun.tf1.layers as layers
    import npurun.tf_estimator as tf_estimator
    import npurun.estimator as estimator
    assert callable(layers.dense) and callable(layers.flatten) and callable(tf_estimator.numpy_input_fn)
    assert estimator.ServingInputReceiver and callable(estimator.build_raw_serving_input_receiver_fn)
    assert not migrate_source(migration.migrated).changed


def test_continuation_lines_aligned_with_the_parenthesis_move_with_the_renamed_call():
    migration = _migrate("""\
        import tensorflow as tf
        config = tf.estimator.RunConfig(model_dir="m",
                                        keep_checkpoint_max=1)
        est = tf.estimator.Estimator(model_fn=model_fn,
                                     config=config)
        """)
    body = _body(migration)
    assert 'config = NPURunConfig(model_dir="m",\n                      keep_checkpoint_max=1,' in body
    assert "est = NPUEstimator(model_fn=model_fn,\n                   config=config)" in body


def test_existing_npurun_imports_are_merged_and_second_run_is_a_no_op():
    source = textwrap.dedent("""\
        import tensorflow as tf
        from npurun import NPUEstimator
        e = NPUEstimator(model_fn, config=tf.estimator.RunConfig(keep_checkpoint_max=1))
        """)
    migration = migrate_source(source)
    assert migration.migrated.count("from npurun import") == 1
    assert "from npurun import NPURunConfig, NPUEstimator" in migration.migrated
    assert migrate_source(migration.migrated).migrated == migration.migrated


def test_cli_modes(tmp_path):
    script = tmp_path / "train.py"
    original = (SCRIPTS / "classic_estimator.py").read_text()
    script.write_text(original)

    printed = run_compat("migrate", script)
    assert printed.returncode == 0, printed.stderr
    assert "config = NPURunConfig(" in printed.stdout and script.read_text() == original
    assert "change(s)" in printed.stderr and "line 51: removed argument device_fn=None" in printed.stderr

    diff = run_compat("migrate", script, "--diff")
    assert diff.returncode == 0 and diff.stdout.startswith("--- a/") and script.read_text() == original
    assert "-    config = tf.estimator.RunConfig(\n+    config = NPURunConfig(\n" in diff.stdout

    in_place = run_compat("migrate", script, "--in-place")
    assert in_place.returncode == 0 and in_place.stdout == ""
    assert script.read_text() == printed.stdout

    again = run_compat("migrate", script, "--diff")
    assert again.returncode == 0 and again.stdout == "" and "0 change(s)" in again.stderr

    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    assert run_compat("migrate", broken).returncode == 2


def test_in_place_never_writes_through_a_link_and_keeps_the_mode(tmp_path, capsys):
    import argparse

    from npurun.tools.cli import cmd_migrate

    original = (SCRIPTS / "classic_estimator.py").read_text()
    target = tmp_path / "elsewhere.py"
    target.write_text(original)
    link = tmp_path / "train.py"
    link.symlink_to(target)
    args = argparse.Namespace(script=str(link), diff=False, in_place=True)
    assert cmd_migrate(args) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    assert link.is_symlink() and target.read_text() == original

    script = tmp_path / "run_me.py"
    script.write_text(original)
    script.chmod(0o750)
    assert cmd_migrate(argparse.Namespace(script=str(script), diff=False, in_place=True)) == 0
    assert "config = NPURunConfig(" in script.read_text() and (script.stat().st_mode & 0o777) == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.py", "run_me.py", "train.py"]


@pytest.mark.slow
def test_migrated_corpus_script_runs_under_plain_python(tmp_path):
    import subprocess
    import sys

    done = run_compat("migrate", SCRIPTS / "classic_estimator.py")
    assert done.returncode == 0 and "0 thing(s) not migrated" in done.stderr
    script = tmp_path / "train.py"
    script.write_text(done.stdout)
    ran = subprocess.run([sys.executable, str(script), "--model_dir", str(tmp_path / "m"), "--steps", "20"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.startswith("accuracy ")
