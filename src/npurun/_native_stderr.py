"""Which of TensorFlow's native log lines reach the user, and a filter process applying that to a stream.

Standard library only, and runnable by path (`python -I _native_stderr.py MIN_LEVEL HAS_GPU`) without
importing the npurun package: `npurun run` starts it as the reader of its own file descriptor 2, so
lines TensorFlow's C++ code prints at any point of a user's script are filtered, not only those printed
while npurun holds the descriptor (`logs._native_stderr_filtered`). As a separate process it outlives
a crash of the script and still passes on everything the script printed before it.
"""
import errno
import os
import re
import signal
import sys

# glog/absl line header: severity letter, MMDD, time, thread id, file:line]
NATIVE_LINE = re.compile(r"^([IWEF])\d{4} [\d:.]+\s+\d+ (\S+):\d+\] ")
BANNER_LINES = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "To enable the following instructions:",  # continuation of cpu_feature_guard's INFO line
)
# WARNING-level native lines that report normal operation, not a problem.
ROUTINE_WARNINGS = (
    # a rank's collective executor tears its rendezvous down with this status when the session closes
    "Local rendezvous is aborting with status: ABORTED: Cleanup",
    # a TF 1 input queue closed with its pending enqueues cancelled: what `coord.request_stop()` and the
    # session's end do to the queue runners of every `tf.train.start_queue_runners` script (60 ModelZoo
    # folders; deeplabv2's slice_input_producer and batch), whose threads end silently on it
    "Local rendezvous is aborting with status: CANCELLED: Enqueue operation was cancelled",
    # tf-keras in graph mode sets attributes on its ops after a session ran them, at every fit of every
    # Keras-on-session script (TF 1.15 had no such check); TensorFlow's own Keras code, not the user's
    "was changed by setting attribute after it was run by a session",
    # tf.data's default graph rewrites skip the input of contrib.data's prefetch_to_device / copy_to_device,
    # which is a GeneratorDataset (TensorFlow's own; 8 ModelZoo folders: UGATIT_ID0722): once per such input
    "Input of GeneratorDatasetOp::Dataset will not be optimized because the dataset does not implement",
)
# WARNING-level native lines that open a block of lines without headers, and the line after which the
# block ends (the blank line that follows it). TensorFlow's colocation warning: a script that asks for
# `/gpu:0` (NVIDIA-derived ModelZoo code) and runs with soft placement where there is no GPU gets some
# 25 lines per resource placed on the CPU, which is what soft placement is for.
ROUTINE_BLOCKS = {
    "Failed to place the graph without changing the devices of some resources":
        "Colocation members, user-requested devices, and framework assigned devices, if any:",
}
# WARNING-level native lines that open a block ending at its first blank line. Grappler checks the nodes an
# optimizer of its own rewrote and logs those with no kernel on their device: its remapper fuses a float16
# FusedBatchNormV3 + Relu into `_FusedBatchNormEx`, which has a float16 kernel on GPUs only, in a float16 model
# on the CPU (official models' `--dtype=fp16`), one block of 9 lines per batch norm at each graph optimisation
# (134 blocks in a 2-step ResNet-101 run). The op names of such rewrites begin with an underscore, names no script writes;
# the model runs as before, and a real failure has lines of its own.
ROUTINE_BLOCK_LINES = (
    re.compile(r"\] No registered '_\w+' OpKernel for \w+ devices compatible with node "),
)
SEVERITY = {"I": 0, "W": 1, "E": 2, "F": 3}
# The `tensorflow` build (which tf-keras requires) looks for a GPU when it first lists devices and logs
# its failure as an ERROR. On a machine with no NVIDIA device node that is no problem at all; where a
# node exists, the line may explain a missing GPU and is kept.
NO_GPU_LINE = "failed call to cuInit"
# TensorFlow's line under an op's error or abort naming the node (`\t [[{{node NAME}}]]`): part of the
# native line above it, dropped with it.
NODE_LINE = "[[{{node "
# The start of a line that may still turn out to be a native or banner line: held back until its end.
_MAYBE_NATIVE = re.compile(r"^[IWEF](\d{0,4}|\d{4} .*)$", re.S)


def keep_native_line(line: str, min_level: int, has_nvidia_device: bool) -> bool:
    """Whether a line TensorFlow's native code printed should reach the user at `min_level`."""
    if min_level <= 0:
        return True
    if any(line.startswith(banner) for banner in BANNER_LINES):
        return False
    match = NATIVE_LINE.match(line)
    if match is None:
        return True
    if match.group(2).endswith(".py"):
        # absl's handler (after `app.run`) prints Python log records with the same header: a script's own
        # `absl.logging.info(...)` lines, whose level its Python logger has decided already (TF 1.15's
        # TF_CPP_MIN_LOG_LEVEL never hid them)
        return True
    if any(routine in line for routine in (*ROUTINE_WARNINGS, *ROUTINE_BLOCKS)):
        return False
    if match.group(1) == "W" and any(pattern.search(line) for pattern in ROUTINE_BLOCK_LINES):
        return False
    if NO_GPU_LINE in line and not has_nvidia_device:
        return False
    return SEVERITY[match.group(1)] >= min_level


def _undecided(start: str) -> bool:
    """Whether the start of a line (no newline yet) may be a line to drop, so it must wait for its end."""
    return bool(_MAYBE_NATIVE.match(start)) or any(
        banner.startswith(start) or start.startswith(banner) for banner in BANNER_LINES)


def _is_node_line(line: bytes) -> bool:
    return line.decode("utf-8", "replace").lstrip().startswith(NODE_LINE)


def _maybe_node_line(start: bytes) -> bool:
    """Whether the start of a line (no newline yet) may be a node line."""
    text = start.decode("utf-8", "replace").lstrip()
    return text.startswith(NODE_LINE) or NODE_LINE.startswith(text)


class LineFilter:
    """Incremental: `feed(bytes)` returns the bytes to pass on now. A line that cannot be one to drop is
    passed on as it arrives (progress bars redraw with carriage returns and never end a line), the others
    once their newline has come."""

    def __init__(self, min_level: int, has_nvidia_device: bool):
        self.min_level, self.has_nvidia_device = min_level, has_nvidia_device
        self.held = b""  # the start of a line not yet decided
        self.passing = False  # the current line's start was passed on: the rest of it follows
        self.block_end = None  # inside a dropped block: the line after which it ends (then a blank line)
        self.block_lines = 0
        self.dropped = False  # the last whole line was dropped: a node line right under it goes with it

    def feed(self, data: bytes) -> bytes:
        out, data = [], self.held + data
        self.held = b""
        while data:
            end = data.find(b"\n")
            if self.passing:
                if end < 0:
                    out.append(data)
                    break
                out.append(data[:end + 1])
                data, self.passing = data[end + 1:], False
            elif end >= 0:
                line, data = data[:end + 1], data[end + 1:]
                if self.block_end is not None and self._in_block(line):
                    continue
                if self.dropped and _is_node_line(line):
                    continue
                self.dropped = not self._keep(line)
                if not self.dropped:
                    out.append(line)
                else:
                    self._open_block(line)
            elif self.block_end is not None:
                self.held = data  # a block's lines are judged whole
                break
            elif _undecided(data.decode("utf-8", "replace")) or (self.dropped and _maybe_node_line(data)):
                self.held = data
                break
            else:
                out.append(data)
                self.passing, self.dropped = True, False
                break
        return b"".join(out)

    def close(self) -> bytes:
        held, self.held = self.held, b""
        if self.dropped and _is_node_line(held):
            return b""
        return held if held and self._keep(held) else b""

    def _open_block(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace")
        for opening, last in ROUTINE_BLOCKS.items():
            if opening in text and self.min_level > 0:
                self.block_end, self.block_lines = last, 0
        if self.min_level > 0 and text.startswith("W") and any(
                pattern.search(text) for pattern in ROUTINE_BLOCK_LINES):
            self.block_end, self.block_lines = "", 0  # past its heading already: it ends at its blank line

    def _in_block(self, line: bytes) -> bool:
        """Whether `line` belongs to the dropped block (which it closes at its end); a new native line
        or an overlong block ends it."""
        text = line.decode("utf-8", "replace")
        self.block_lines += 1
        if NATIVE_LINE.match(text) or self.block_lines > 500:
            self.block_end = None
            return False
        if self.block_end == "":  # past the last heading: the block ends at its blank line
            if not text.strip():
                self.block_end = None
            return True
        if text.startswith(self.block_end):
            self.block_end = ""
        return True

    def _keep(self, line: bytes) -> bool:
        return keep_native_line(line.decode("utf-8", "replace"), self.min_level, self.has_nvidia_device)


def main(argv) -> int:
    # Ctrl-C and `timeout` signal the whole process group: this reader stays until the script's side
    # of the pipe closes (the script exited or died), so the script's last lines (a traceback) get out.
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    lines = LineFilter(int(argv[1]), argv[2] == "1")
    while True:
        try:
            data = os.read(0, 65536)
        except InterruptedError:
            continue
        except OSError as error:  # a pseudo-terminal whose other side closed
            if error.errno != errno.EIO:
                raise
            data = b""
        passed = lines.feed(data) if data else lines.close()
        try:
            while passed:
                passed = passed[os.write(1, passed):]
        except BrokenPipeError:  # the reader of the real stderr went away: keep draining
            pass
        if not data:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
