"""Token and path ids of one stage's dictionary, cached for a population.

Population interns the same few strings (type names, schema names, token values) and every
prim path over and over; the cache makes each distinct string cost one native call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import ErrorCode, OvstageError, OvxError
from .._pathdict import PathDictionary

if TYPE_CHECKING:
    from .._stage import Stage

__all__ = ["StageInterner"]


class StageInterner:
    """Interns tokens and paths into ``stage``'s dictionary (see ``_mapping.Interner``)."""

    def __init__(self, stage: Stage) -> None:
        self._dictionary = PathDictionary(stage)
        self._tokens: dict[str, int] = {"": 0}
        self._paths: dict[str, int] = {}

    def token(self, text: str) -> int:
        """The id of a token or string (0 for the empty string)."""
        found = self._tokens.get(text)
        if found is None:
            try:
                found = self._dictionary.intern_token(text)
            except OvxError as exc:
                raise OvstageError(
                    ErrorCode.INVALID_ARGUMENT, f"token {text!r}: {exc.message}"
                ) from None
            self._tokens[text] = found
        return found

    def path(self, path: str) -> int:
        """The id of a prim or property path."""
        found = self._paths.get(path)
        if found is None:
            try:
                found = self._dictionary.intern_path(path)
            except OvxError as exc:
                raise OvstageError(
                    ErrorCode.INVALID_ARGUMENT, f"path {path!r}: {exc.message}"
                ) from None
            self._paths[path] = found
        return found

    @property
    def dictionary(self) -> PathDictionary:
        """The stage's dictionary (for path lists)."""
        return self._dictionary
