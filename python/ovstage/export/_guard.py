"""The admission check every export call starts with: USD available, a live stage."""

from __future__ import annotations

from .._errors import ErrorCode, OvstageError
from ..population import _usd
from ..population._operation import set_last_error

__all__ = ["check_call"]


def check_call(stage: object, what: str) -> None:
    """NOT_SUPPORTED without usd-core (naming the extra); TypeError for a non-stage;
    INVALID_HANDLE for a destroyed stage."""
    set_last_error("")
    if not _usd.AVAILABLE:
        message = (
            f"population.{what}: USD export needs OpenUSD (usd-core), which cannot be "
            "imported; install it with: pip install 'ovstage-go[usd]'"
        )
        set_last_error(message)
        raise OvstageError(ErrorCode.NOT_SUPPORTED, message)
    from .._stage import Stage

    if not isinstance(stage, Stage):
        raise TypeError(f"{what}: stage must be an ovstage.Stage, got {type(stage).__name__}")
    if stage._destroyed:
        raise OvstageError(ErrorCode.INVALID_HANDLE, f"{what}: the stage was destroyed")
