"""Argument guards run before any native call (spec §5.3).

Integers are normalized with :func:`operator.index`: floats, strings and bytes are
rejected even when integral; ``bool``, ``IntEnum`` members, numpy integers and 0-d
integer arrays are accepted. A non-integer raises ``TypeError`` naming the argument; a
negative or too wide value raises ``ValueError`` naming the argument and the value.

This module is pure Python and does not need the native extension.
"""

from __future__ import annotations

import ctypes
import enum
import operator
from typing import TypeVar

__all__ = [
    "as_attribute",
    "as_bool_flag",
    "as_enum",
    "as_int32",
    "as_size_t",
    "as_str",
    "as_timeout",
    "as_uint",
    "as_uint32",
    "as_uint64",
]

E = TypeVar("E", bound=enum.Enum)

_SIZE_T_BITS = ctypes.sizeof(ctypes.c_size_t) * 8


def _as_int(value: object, name: str) -> int:
    """Return ``operator.index(value)`` or raise ``TypeError`` naming the argument."""
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


def as_uint(value: object, name: str, bits: int = 64) -> int:
    """Validate an unsigned integer that must fit in ``bits`` bits."""
    result = _as_int(value, name)
    if result < 0:
        raise ValueError(f"{name} must be non-negative, got {result}")
    if result >= 1 << bits:
        raise ValueError(f"{name} must fit in uint{bits}, got {result}")
    return result


def as_uint32(value: object, name: str) -> int:
    """Validate a ``uint32`` argument (``count``, ``index_map`` entries)."""
    return as_uint(value, name, 32)


def as_uint64(value: object, name: str) -> int:
    """Validate a ``uint64`` argument (ordinals, tokens, handles, op ids, masks)."""
    return as_uint(value, name, 64)


def as_size_t(value: object, name: str) -> int:
    """Validate a ``size_t`` argument (``element_sizes``)."""
    return as_uint(value, name, _SIZE_T_BITS)


def as_int32(value: object, name: str) -> int:
    """Validate a signed ``int32`` (``semantic``, hierarchy ``model``/``relation``).

    Only the range is checked, so values newer than this package's enums pass.
    """
    result = _as_int(value, name)
    if not -(1 << 31) <= result < 1 << 31:
        raise ValueError(f"{name} must fit in int32, got {result}")
    return result


def as_enum(value: object, enum_cls: type[E], name: str) -> E:
    """Validate a closed enum argument: it must be the value of a declared member."""
    result = _as_int(value, name)
    allowed = {member.value for member in enum_cls.__members__.values()}
    if result not in allowed:
        members = ", ".join(
            f"{member_name}={member.value}" for member_name, member in enum_cls.__members__.items()
        )
        raise ValueError(f"{name} must be one of {members}; got {result}")
    return enum_cls(result)


def as_bool_flag(value: object, name: str) -> bool:
    """Validate a flag that must be a real ``bool`` (e.g. ``is_array``)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def as_attribute(value: object, name: str = "attribute") -> int | str:
    """Validate an attribute: an ``int`` token (numpy ints too) or a ``str`` name."""
    if isinstance(value, str):
        return value
    try:
        token = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{name} must be an int token or a str name, got {type(value).__name__}"
        ) from None
    return as_uint64(token, name)


def as_timeout(value: object) -> int:
    """Validate a timeout in nanoseconds (``uint64``; 2**64-1 waits forever)."""
    return as_uint64(value, "timeout")


def as_str(value: object, name: str) -> str:
    """Validate a ``str`` argument (path-dictionary inputs)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value
