"""Building npurun's wheel prints no setuptools deprecation, and the wheel carries the example's data."""
import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_builds_without_deprecation_warnings_and_holds_the_digits(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "deprecated" not in output.lower() or "SetuptoolsDeprecationWarning" not in output
    assert "TOML table is deprecated" not in output
    (wheel,) = tmp_path.glob("npurun-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "npurun/example/data/digits.csv.gz" in names
    assert "License-Expression: Apache-2.0" in metadata
