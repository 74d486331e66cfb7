"""The script tools: `run` (a script unmodified under npurun's compatibility layer), `check` (what a
script's NPU options and adapter APIs do here, without running it), `migrate` (a classic
tf.estimator script rewritten into NPU form), and `compat_docs` (the generator of docs/compat.md,
with its prose in `compat_prose`). `cli` registers their `npurun` subcommands.

The top of the library: tools may import every room below (adapter, tf1, tf_estimator, config);
nothing in the library imports them.
"""
