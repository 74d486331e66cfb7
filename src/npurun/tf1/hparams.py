"""Small TF 1 `tf.contrib` pieces with no maintained package: `training.HParams`, `data.batch_and_drop_remainder`."""
from __future__ import annotations

import json
import numbers


class HParams:
    """tf.contrib.training.HParams: named hyperparameters with a fixed type, overridable from a string.

    `HParams(lr=0.1, layers=[32, 16])`; `hp.lr`; `hp.parse("lr=0.01,layers=[8,8]")`;
    `hp.values()`; `hp.add_hparam`, `hp.set_hparam`, `hp.del_hparam`; `to_json` / `parse_json`;
    `override_from_dict`. A value keeps the type it was added with (an int may become a float).
    """

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        if hparam_def is not None:
            raise ValueError("HParams(hparam_def=...) (an HParamDef protocol buffer) is not supported by npurun; "
                             "pass the values as keyword arguments")
        self._model_structure = model_structure
        self._types = {}
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name, value):
        # As TF 1.15: a name is refused when it holds a value; one added with None may be added again
        # (tf/tpu models' `if getattr(hparams, name, None) is None: hparams.add_hparam(name, flag)`).
        if getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        if isinstance(value, (list, tuple)):
            self._types[name] = (type(value[0]) if value else str, True)
        else:
            self._types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name, value):
        kind, is_list = self._types[name]
        if is_list:
            setattr(self, name, [_cast(name, kind, v) for v in value])
        else:
            setattr(self, name, _cast(name, kind, value))

    def del_hparam(self, name):
        if name in self._types:
            delattr(self, name)
            del self._types[name]

    def parse(self, values: str):
        """Override from `"name=value,name2=[1,2]"`; unknown names raise ValueError."""
        for name, text in _split(values):
            if name not in self._types:
                raise ValueError(f"Unknown hyperparameter type for {name}")
            kind, is_list = self._types[name]
            if is_list:
                items = [item for item in text.strip("[]").split(",") if item.strip()]
                self.set_hparam(name, [_from_text(name, kind, item.strip()) for item in items])
            else:
                self.set_hparam(name, _from_text(name, kind, text))
        return self

    def override_from_dict(self, values_dict):
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def values(self) -> dict:
        return {name: getattr(self, name) for name in self._types}

    def to_json(self, indent=None, separators=None, sort_keys=False):
        return json.dumps(self.values(), indent=indent, separators=separators, sort_keys=sort_keys)

    def parse_json(self, values_json):
        return self.override_from_dict(json.loads(values_json))

    def get(self, key, default=None):
        return getattr(self, key) if key in self._types else default

    def get_model_structure(self):
        return self._model_structure

    def __contains__(self, key):
        return key in self._types

    def __str__(self):
        return str(sorted(self.values().items()))

    def __repr__(self):
        return f"HParams({self!s})"


def _split(values: str):
    """`a=1,b=[1,2],c=x` -> [(a, '1'), (b, '[1,2]'), (c, 'x')] (commas inside [] belong to the list)."""
    pairs, depth, start = [], 0, 0
    for index, char in enumerate(values + ","):
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            part = values[start:index].strip()
            start = index + 1
            if part:
                if "=" not in part:
                    raise ValueError(f"Could not parse hparam {part!r} in {values!r}")
                name, text = part.split("=", 1)
                pairs.append((name.strip(), text.strip()))
    return pairs


def _from_text(name, kind, text):
    if kind is bool:
        if text.lower() in ("true", "1"):
            return True
        if text.lower() in ("false", "0"):
            return False
        raise ValueError(f"Could not parse {text!r} as a bool for hparam {name}")
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"Could not parse {text!r} as {kind.__name__} for hparam {name}") from None


def _cast(name, kind, value):
    """TF 1.15's cast of a new value to the hparam's type: a hparam added as None takes anything; an int may
    become a float, never a float an int; no casts between bool, numbers and strings."""
    if type(value) is kind or kind is type(None):
        return value
    wrong = (issubclass(kind, (str, bytes)) and not isinstance(value, (str, bytes))
             or issubclass(kind, bool) != isinstance(value, bool)
             or issubclass(kind, numbers.Integral) and not isinstance(value, numbers.Integral)
             or issubclass(kind, numbers.Number) and not isinstance(value, numbers.Number))
    if wrong:
        raise ValueError(f"Could not cast hparam {name!r} of type {kind.__name__} from value {value!r}")
    return kind(value) if kind in (int, float, bool, str, bytes) else value


def batch_and_drop_remainder(batch_size):
    """tf.contrib.data.batch_and_drop_remainder: a transformation for `dataset.apply(...)`."""
    return lambda dataset: dataset.batch(batch_size, drop_remainder=True)
