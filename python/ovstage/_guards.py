"""Argument guards run before any native call.

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
    "as_index",
    "as_int32",
    "as_native_str",
    "as_sequence",
    "as_size_t",
    "as_str",
    "as_timeout",
    "as_uint",
    "as_uint32",
    "as_uint64",
    "attribute_problem",
    "shown",
    "string_problem",
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


def as_index(value: object, name: str) -> int:
    """Validate an index argument: an integer (range checks are the caller's)."""
    return _as_int(value, name)


def as_sequence(value: object, name: str, items: str) -> list[object]:
    """Validate a sequence argument (not a single ``str``/``bytes``, not ``None``) and return
    its items as a list; ``items`` says what it should hold (for the ``TypeError``)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence of {items}, got {type(value).__name__}")
    return list(value)


_SHOWN_MAX = 80


def shown(text: str) -> str:
    """``repr(text)``, shortened for messages (lone surrogates come out as ``\\udcff``)."""
    if len(text) <= _SHOWN_MAX:
        return repr(text)
    return repr(text[:_SHOWN_MAX]) + f"... ({len(text)} characters)"


def string_problem(text: str, kind: str, *, empty_ok: bool = False) -> str | None:
    """Why ``text`` cannot be handed to the engine (which takes NUL-free UTF-8), or None.

    ``kind`` names the string in the message (``"Token"``, ``"Path"``, ...): "<kind> string
    must be non-empty", "... contains embedded NUL at index 3: 'ab\\x00'", "... is not valid
    UTF-8 (lone surrogate '\\udcff' at index 2): 'ab\\udcff'". Callers prefix the argument.
    """
    if not text:
        return None if empty_ok else f"{kind} string must be non-empty"
    nul = text.find("\x00")
    if nul >= 0:
        return f"{kind} string contains embedded NUL at index {nul}: {shown(text)}"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = text[exc.start]
            return (
                f"{kind} string is not valid UTF-8 (lone surrogate {bad!r} at index "
                f"{exc.start}): {shown(text)}"
            )
    return None


def as_native_str(value: object, name: str, kind: str, *, empty_ok: bool = False) -> str:
    """Validate a ``str`` argument the engine will receive: ``TypeError`` if it is not a str,
    ``ValueError`` naming the argument if :func:`string_problem` finds one."""
    text = as_str(value, name)
    problem = string_problem(text, kind, empty_ok=empty_ok)
    if problem is not None:
        raise ValueError(f"{name}: {problem}")
    return text


def attribute_problem(attribute: int | str) -> str | None:
    """Why a validated attribute (see :func:`as_attribute`) names no attribute, or None:
    token 0, or a name :func:`string_problem` rejects."""
    if isinstance(attribute, str):
        return string_problem(attribute, "Token")
    return "token 0 is not a valid token" if attribute == 0 else None
