"""The TensorFlow API names `npurun check` reads statically match the installed TensorFlow."""
import importlib.util

from .conftest import REPO


def test_tf_api_names_match_the_installed_tensorflow():
    spec = importlib.util.spec_from_file_location("gen_tf_api_names", REPO / "scripts" / "gen_tf_api_names.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.OUT.read_text() == generator.render(), (
        "src/npurun/compat/tf_api_names.py is stale: run `.venv/bin/python scripts/gen_tf_api_names.py`")
