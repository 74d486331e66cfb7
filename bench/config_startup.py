"""Start-up cost of the configuration layer: building an NPURunConfig and running `npurun explain`,
each in a fresh interpreter, against `import tensorflow` measured the same way in the same run.

Target (issue 2): each well under a second, and a small fraction of TensorFlow's import.
"""
import statistics
import subprocess
import sys
import time

RUNS = 5
CASES = {
    "python -c pass (interpreter floor)": "pass",
    "import npurun; NPURunConfig(...)": "import npurun\nnpurun.NPURunConfig(iterations_per_loop=10, "
                                        "precision_mode='allow_mix_precision', save_checkpoints_steps=20)",
    "npurun explain": "import contextlib, io\nfrom npurun.cli import main\n"
                      "with contextlib.redirect_stdout(io.StringIO()):\n    main(['explain'])",
    "import tensorflow (peer)": "import tensorflow",
}


def measure(code: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    results = {name: measure(code) for name, code in CASES.items()}
    tf_time = results["import tensorflow (peer)"]
    print(f"{'case':<40} {'median s':>9} {'vs import tensorflow':>21}")
    for name, seconds in results.items():
        print(f"{name:<40} {seconds:>9.3f} {seconds / tf_time:>20.2f}x")
    for name in ("import npurun; NPURunConfig(...)", "npurun explain"):
        verdict = "ok" if results[name] < 1.0 else "TOO SLOW"
        print(f"target < 1 s: {name}: {verdict}")


if __name__ == "__main__":
    main()
