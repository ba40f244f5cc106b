"""Status codes, exception types and native error mapping.

This module is pure Python and does not need the native extension.
"""

from __future__ import annotations

import enum
import operator
import re

__all__ = [
    "OVSTAGE_TIMEOUT_INFINITE",
    "OVX_API_ERROR",
    "OVX_API_SUCCESS",
    "TIMEOUT_INFINITE",
    "ErrorCode",
    "OvstageError",
    "OvxError",
    "error_from_native",
]

#: Path-dictionary status: success.
OVX_API_SUCCESS: int = 0
#: Path-dictionary status: failure.
OVX_API_ERROR: int = 1
#: Timeout value meaning "wait forever" (``0xFFFFFFFFFFFFFFFF``).
OVSTAGE_TIMEOUT_INFINITE: int = 2**64 - 1
#: Alias of :data:`OVSTAGE_TIMEOUT_INFINITE`.
TIMEOUT_INFINITE: int = OVSTAGE_TIMEOUT_INFINITE


class ErrorCode(enum.IntEnum):
    """``ovstage_api_status_t`` values (stable ABI: the numbers are the C header's)."""

    OK = 0
    INVALID_ARGUMENT = 1
    INVALID_HANDLE = 2
    NOT_FOUND = 3
    PRIM_NOT_FOUND = 4
    WRITE_FLOOR_VIOLATION = 5
    NOT_SUPPORTED = 6
    QUEUE_FULL = 7
    END_OF_ITERATION = 8
    OUT_OF_MEMORY = 9
    LAYOUT_CHANGED = 10
    TIMEOUT = 11
    OP_FAILED = 12
    OUT_OF_RANGE = 13
    INTERNAL = 99


def _code_name(code: int) -> str:
    """Return the ``ErrorCode`` member name for ``code``, or ``ERROR_<n>``."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"ERROR_{code}"


def _as_code(code: object) -> int:
    """Normalize a status code with ``operator.index`` (``TypeError`` otherwise)."""
    try:
        return operator.index(code)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"error code must be an integer, got {type(code).__name__}") from None


class _CodedError(RuntimeError):
    """A RuntimeError carrying an integer ``code`` and a ``message`` ("" when none)."""

    code: int
    message: str

    def __init__(self, code: int, message: str = "") -> None:
        normalized = _as_code(code)
        text = "" if message is None else str(message)
        super().__init__(normalized, text)
        self.code = normalized
        self.message = text


class OvstageError(_CodedError):
    """An ovstage status other than ``OK``.

    Attributes:
        code: the raw status code (an ``int``; compare with :class:`ErrorCode`).
        message: the error text, ``""`` when there is none.
    """

    def __str__(self) -> str:
        name = _code_name(self.code)
        return f"{name}: {self.message}" if self.message else name


class OvxError(_CodedError):
    """A path-dictionary failure (``OVX_API_ERROR``).

    Attributes:
        code: the raw ovx status code.
        message: the error text, ``""`` when there is none.
    """

    def __str__(self) -> str:
        if self.message:
            return f"ovx error {self.code}: {self.message}"
        return f"ovx error {self.code}"


# The facade's code for a malformed request (pybind/API.md).
_MALFORMED = "-2"

_NATIVE_ERROR = re.compile(r"\A\[(ovstage|ovx):(-?\d+)\] ?(.*)\Z", re.DOTALL)


def error_from_native(exc: RuntimeError) -> Exception:
    """Translate a ``RuntimeError`` raised by the native facade into our exceptions.

    ``"[ovstage:<code>] text"`` becomes ``OvstageError(code, text)``,
    ``"[ovx:<code>] text"`` becomes ``OvxError(code, text)``, ``"[ovstage:-2] text"`` (a
    request whose arguments contradict each other, found by the engine's rules before anything
    is queued) ``ValueError(text)``, like the package's own argument checks; any other text becomes
    ``OvstageError(ErrorCode.INTERNAL, str(exc))``. The exception is returned, not
    raised.
    """
    text = str(exc)
    match = _NATIVE_ERROR.match(text)
    if match is None:
        return OvstageError(ErrorCode.INTERNAL, text)
    kind, code, message = match.groups()
    if kind == "ovx":
        return OvxError(int(code), message)
    if code == _MALFORMED:
        return ValueError(message)
    return OvstageError(int(code), message)
