"""`tensorflow_estimator.python.estimator.canned.parsing_utils`: parse specs for the premade estimators."""
from ...estimator.parsing import classifier_parse_example_spec, regressor_parse_example_spec

__all__ = ["classifier_parse_example_spec", "regressor_parse_example_spec"]
