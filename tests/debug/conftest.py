"""Fixtures for the debug tests (helpers live in helpers.py)."""
import pytest


@pytest.fixture
def dump_path(tmp_path):
    path = tmp_path / "dump"
    path.mkdir()
    return str(path)


@pytest.fixture
def in_tmp_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path
