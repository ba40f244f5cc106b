"""ResourceWarning for handles released by a finalizer."""

from __future__ import annotations

import sys
import warnings

__all__ = ["warn_unreleased"]


def warn_unreleased(message: str) -> None:
    """Emit a ResourceWarning; print to stderr when warnings are escalated to errors
    (a finalizer must not raise)."""
    try:
        warnings.warn(message, ResourceWarning, stacklevel=3)
    except Exception:
        print(f"ResourceWarning: {message}", file=sys.stderr)
