"""The shape of the option table: what one option declares.

`options.py` holds the table itself; this module holds the record types and the parameter-map
encodings, so that the table reads as data.
"""
from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from .errors import OptionTypeError, OptionValueError, bounded_repr
from .validators import Reject, Validator

# A parameter map in plain Python: key -> (AttrValue field, value), field one of "b", "i", "s", "f".
# The same content as `custom_op.parameter_map` of an `NpuOptimizer` entry in a ConfigProto.
ParamMap = dict


class Kind(enum.Enum):
    """What an option does on this machine: exactly one of three."""

    EFFECT = "effect"
    NO_EFFECT = "accepted, no effect here"
    NOT_SUPPORTED = "not supported"


@dataclass(frozen=True)
class Scalar:
    """Encodes one option as one parameter-map entry."""

    key: str
    field: str  # "b", "i" or "s"
    to_raw: Callable[[Any], Any] = lambda v: v
    from_raw: Callable[[Any], Any] = lambda v: v
    # another field the Ascend adapter gives this key a different meaning in -> why it has no effect here
    # (a script's `jit_compile .b = True`, the adapter's online-operator-compilation switch): accepted with
    # that warning instead of refused
    other_meaning: tuple = ()

    def encode(self, value: Any) -> ParamMap:
        if value is None:
            return {}
        return {self.key: (self.field, self.to_raw(value))}

    def keys(self) -> tuple[str, ...]:
        return (self.key,)

    def decode(self, entries: Mapping[str, tuple[str, Any]]) -> Any:
        field_, raw = entries[self.key]
        return self.from_raw(raw)


_MISSING = object()


@dataclass(frozen=True)
class OneDnnDependence:
    """How an option's effect differs with TensorFlow's oneDNN on or off (measured; whether it is on
    in a process started here is decided by `config/onednn.py`).

    on / off: what `npurun explain` adds to the mechanism in that case ("" for nothing).
    no_effect_on / no_effect_off: values that do nothing in that case (their kind there is
    "accepted, no effect here").
    """

    on: str = ""
    off: str = ""
    no_effect_on: tuple = ()
    no_effect_off: tuple = ()


@dataclass(frozen=True)
class Option:
    """One constructor option of NPURunConfig.

    Attributes:
      name: the keyword, as in the product document.
      default: the value when the keyword is not given.
      validate: checks a non-None value (None is accepted when `nullable`).
      none_is_default: None means "not set" and gives the default, as the adapter's own code
        does for this option (it writes the option only `if value is not None`).
      kind: effect / accepted-no-effect / not-supported on this machine.
      rule: what values are allowed, in words (docs and `npurun explain`).
      mechanism: what the option does here, naming the TensorFlow / XLA mechanism.
      doc: one sentence saying what the option is for.
      codec: how it is written in the NpuOptimizer parameter map (None: not in the map).
      gpu_only: the mechanism exists only on GPUs; on a CPU the option warns that it has no effect.
      pending: the mechanism is not implemented yet; a non-default value warns instead of acting.
      inherited: the option comes from tf.estimator.RunConfig.
      onednn: how the effect differs with TensorFlow's oneDNN on or off (None: it does not).
    """

    name: str
    default: Any
    validate: Validator
    kind: Kind
    rule: str
    mechanism: str
    doc: str
    codec: Optional[Any] = None
    nullable: bool = True
    none_is_default: bool = False
    gpu_only: bool = False
    pending: bool = False
    inherited: bool = False
    aliases: tuple = field(default=())
    onednn: Optional[OneDnnDependence] = None

    def check(self, value: Any, owner: str = "NPURunConfig") -> Any:
        """The normalised value, or an error naming this option, the value and the rule."""
        if value is None:
            if self.none_is_default:
                return self.default
            if self.nullable:
                return None
            raise OptionTypeError(self.name, value, self.rule, owner)
        try:
            return self.validate(value)
        except Reject as reject:
            error = OptionTypeError if reject.wrong_type else OptionValueError
            raise error(self.name, value, reject.allowed, owner) from None

    @property
    def status(self) -> str:
        """The kind as shown to users, honest about what this version implements."""
        if self.kind is Kind.EFFECT and self.pending:
            return "not implemented yet"
        if self.kind is Kind.EFFECT and self.gpu_only:
            return "effect (GPU only)"
        return self.kind.value

    def status_here(self, value: Any, onednn: bool) -> str:
        """The kind for `value` on a machine where TensorFlow's oneDNN is on (True) or off."""
        if self.onednn is not None and self.kind is Kind.EFFECT:
            if value in (self.onednn.no_effect_on if onednn else self.onednn.no_effect_off):
                return Kind.NO_EFFECT.value
        return self.status

    def mechanism_here(self, onednn: bool) -> str:
        """The mechanism, with what differs when oneDNN is on (True) or off here."""
        if self.onednn is None:
            return self.mechanism
        note = self.onednn.on if onednn else self.onednn.off
        return f"{self.mechanism}. Here oneDNN is {'on' if onednn else 'off'}: {note}" if note else self.mechanism

    def is_default(self, value: Any) -> bool:
        return value is self.default or (type(value) is type(self.default) and value == self.default)


@dataclass(frozen=True)
class Nested:
    """Encodes a sub-configuration (ProfilingConfig, DumpConfig) as the entries of its own options.

    A map holding none of those entries decodes to None (the option was not set).
    """

    cls: Any  # a class with an `OPTIONS` table of its own and keyword constructor arguments

    def keys(self) -> tuple[str, ...]:
        return tuple(k for o in self.cls.OPTIONS.values() for k in o.codec.keys())

    def encode(self, value: Any) -> ParamMap:
        if value is None:
            return {}
        entries: ParamMap = {}
        for option in self.cls.OPTIONS.values():
            entries.update(option.codec.encode(getattr(value, option.name)))
        return entries

    def decode(self, entries: Mapping[str, tuple[str, Any]]) -> Any:
        kwargs = {o.name: o.codec.decode(entries) for o in self.cls.OPTIONS.values()
                  if any(k in entries for k in o.codec.keys())}
        return self.cls(**kwargs)


def _with_suggestion(name: str, known) -> str:
    """'name' (did you mean 'closest'?) when an accepted name is close to it."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.7) if len(name) <= 100 else []
    return f"{bounded_repr(name)} (did you mean {close[0]!r}?)" if close else bounded_repr(name)


class Configurable:
    """Base of the option-table-driven configuration classes (NPURunConfig and its sub-configs).

    Subclasses set `OPTIONS` (name -> Option) and `OWNER` (used in error messages); values are
    validated at construction and exposed as read-only attributes named like the options.
    """

    OPTIONS: Mapping[str, Option] = {}
    OWNER = ""

    def _validate_arguments(self, arguments: Mapping[str, Any]) -> dict:
        unknown = sorted(set(arguments) - set(self.OPTIONS))
        if unknown:
            raise TypeError(f"{self.OWNER}() got unexpected keyword argument(s) "
                            f"{', '.join(_with_suggestion(name, self.OPTIONS) for name in unknown)}; "
                            f"see `npurun explain` for the accepted options")
        values = {}
        for name, option in self.OPTIONS.items():
            values[name] = option.check(arguments[name], self.OWNER) if name in arguments else option.default
        return values

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: options are stored in `_values`.
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            raise AttributeError(f"{self.OWNER} is immutable; use replace({name}=...) to change '{name}'")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.OPTIONS))

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._comparable() == other._comparable()

    def __hash__(self):
        return hash((type(self), tuple(sorted(self._arguments))))

    def _comparable(self):
        # ConfigProtos compare by content, not identity.
        return {k: (v.SerializeToString(deterministic=True) if hasattr(v, "SerializeToString") else v)
                for k, v in self._arguments.items()}

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={bounded_repr(v, limit=500)}" for k, v in self._arguments.items())
        return f"{type(self).__name__}({given})"
