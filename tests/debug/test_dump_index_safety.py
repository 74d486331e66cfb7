"""`npurun dump` reads only files inside the dump directory, and a damaged index is one paragraph
with exit status 1 (issue 27: an index record {"file": "/etc/hostname"} was loaded as given, and
`{}` or `[1]` lines were KeyError / TypeError tracebacks)."""
import json
import os

import numpy as np
import pytest

from npurun.cli import main
from npurun.debug.dump_files import DumpError, DumpWriter, open_dump

GOOD = {"kind": "tensor", "step": 0, "op": "a", "type": "T", "io": "output", "slot": 0, "tensor": "a:0",
        "shape": [2], "dtype": "float32", "stats": None, "order": 0}


def dump_with(tmp_path, *lines, name="d"):
    path = tmp_path / name
    (path / "step_0").mkdir(parents=True)
    np.save(path / "step_0" / "a.output.0.npy", np.array([1.0, 2.0], np.float32))
    (path / "index.jsonl").write_text("".join(line + "\n" for line in lines))
    return str(path)


def run(argv, capsys):
    status = main(argv)
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("file", ["/etc/hostname", "../outside.npy", "step_0/../../outside.npy", "", "a\0b"])
def test_record_files_outside_the_dump_are_refused(tmp_path, capsys, file):
    np.save(tmp_path / "outside.npy", np.zeros(2, np.float32))
    path = dump_with(tmp_path, json.dumps({**GOOD, "file": file}))
    with pytest.raises(DumpError, match="not a path inside the dump directory"):
        open_dump(path)
    for argv in (["dump", "ls", path], ["dump", "show", path], ["dump", "compare", path, path]):
        status, out, err = run(argv, capsys)
        assert status == 1 and "inside the dump directory" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1 and "hostname" not in out


def test_a_symbolic_link_out_of_the_dump_is_refused(tmp_path, capsys):
    path = dump_with(tmp_path, json.dumps({**GOOD, "file": "step_0/link.npy"}))
    np.save(tmp_path / "secret.npy", np.arange(3.0))
    os.symlink(tmp_path / "secret.npy", os.path.join(path, "step_0", "link.npy"))
    status, _, err = run(["dump", "compare", path, path], capsys)
    assert status == 1 and "leads outside the dump directory" in err


@pytest.mark.parametrize("line, problem", [
    ("{}", "has no 'op'"), ("[1]", "JSON array"), ("1", "JSON number"), ("null", "JSON null"),
    ('{"op": "a", "io": "output", "slot": "0"}', "'slot'"),
    ('{"op": 1, "io": "output", "slot": 0}', "'op'"),
    ('{"op": "a", "io": "output", "slot": true}', "'slot'"),
    ('{"op": "a", "io": "output", "slot": 0, "step": [1]}', "'step'"),
    ('{"op": "a", "io": "output", "slot": 0, "stats": {"nan": "x"}}', "'stats'"),
    ('{"op": "a", "io": "output", "slot": 0, "shape": "2"}', "'shape'"),
    ('{"op": "a", "io": "output", "slot": 0, "file": 5}', "'file'"),
    ("not json", "not JSON"), ("[" * 100000, "nested too deeply"),
])
def test_a_damaged_index_is_one_paragraph_with_exit_1(tmp_path, capsys, line, problem):
    path = dump_with(tmp_path, json.dumps({**GOOD, "file": "step_0/a.output.0.npy"}), line)
    for argv in (["dump", "ls", path], ["dump", "show", path], ["dump", "compare", path, path]):
        status, _, err = run(argv, capsys)
        assert status == 1, err
        assert problem in err and "line 2" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1


def test_a_non_utf8_index_or_a_broken_tensor_file_is_one_paragraph(tmp_path, capsys):
    path = dump_with(tmp_path)
    with open(os.path.join(path, "index.jsonl"), "wb") as handle:
        handle.write(b"\xff\xfe{}\n")
    status, _, err = run(["dump", "ls", path], capsys)
    assert status == 1 and "not UTF-8" in err
    other = dump_with(tmp_path, json.dumps({**GOOD, "file": "step_0/a.output.0.npy"}), name="e")
    with open(os.path.join(other, "step_0", "a.output.0.npy"), "wb") as handle:
        handle.write(b"not a npy file")
    status, _, err = run(["dump", "compare", other, other], capsys)
    assert status == 1 and "not a readable .npy" in err and len(err.strip().splitlines()) == 1


def test_a_dump_npurun_wrote_still_reads_and_compares(tmp_path, capsys):
    for name in ("a", "b"):
        writer = DumpWriter(str(tmp_path / name), "train")
        writer.write(kind="tensor", step=0, op="dense/MatMul", op_type="MatMul", io="output", slot=0,
                     tensor="dense/MatMul:0", value=np.ones((2, 2), np.float32))
        writer.close()
    status, out, _ = run(["dump", "compare", str(tmp_path / "a"), str(tmp_path / "b")], capsys)
    assert status == 0 and "OK: 1 tensor(s)" in out
