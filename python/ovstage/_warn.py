"""ResourceWarning for handles released by a finalizer."""

from __future__ import annotations

import sys
import warnings

__all__ = ["unreleased_message", "warn_finalized", "warn_unreleased"]


def unreleased_message(kind: str, handle: int) -> str:
    """The text every finalizer warns with, e.g. ``"Query 12 was garbage-collected
    unreleased; released by its finalizer"``."""
    return f"{kind} {handle} was garbage-collected unreleased; released by its finalizer"


def warn_unreleased(message: str) -> None:
    """Emit a ResourceWarning; print to stderr when warnings are escalated to errors
    (a finalizer must not raise)."""
    try:
        warnings.warn(message, ResourceWarning, stacklevel=3)
    except Exception:
        print(f"ResourceWarning: {message}", file=sys.stderr)


def warn_finalized(kind: str, handle: int) -> None:
    """Warn that a finalizer released ``kind`` ``handle`` (call it after the release)."""
    warn_unreleased(unreleased_message(kind, handle))
