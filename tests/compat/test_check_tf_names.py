"""The TensorFlow API names `npurun check` reads statically match the installed TensorFlow."""
from npurun.tf1.api_names import generate


def test_tf_api_names_match_the_installed_tensorflow():
    assert generate.OUT.read_text() == generate.render(), (
        "src/npurun/tf1/api_names/generated.py is stale: run `.venv/bin/python -m npurun.tf1.api_names.generate`")
