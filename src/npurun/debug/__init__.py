"""Debugging and profiling: tensor dumps, overflow detection, exception dumps, traces.

Modules (each states its own rules):
  contribute      the plan contributor: adds hooks only for options that ask for them
  dump            TensorDumpHook: selected ops' tensors at selected steps (`DumpConfig`)
  overflow        OverflowHook: the ops whose outputs hold inf/NaN, in execution order
  profiling       ProfilingHook: training trace, Chrome trace, TensorBoard run metadata
  exception_dump  `exception_dump(...)`: dump a failing op's inputs, re-raise with the path
  dump_files      the on-disk dump format (writer and reader), no TensorFlow
  compare, stats  comparing dumps and tensor statistics, no TensorFlow
  cli             `npurun dump ls|show|compare`

Nothing here is imported by `import npurun`; the hook modules import TensorFlow.

Imports: `npurun.config` only (`cli` may import `npurun.cli.help`: it is the CLI layer).
"""
