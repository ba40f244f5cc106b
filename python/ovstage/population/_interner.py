"""Token and path ids of one stage's dictionary, cached for a population.

Population interns the same few strings (type names, schema names, token values) and every
prim path over and over; the cache (``_mapping.DictionaryInterner``) makes each distinct string
cost one native call. A string the dictionary refuses fails the population op with an
OvstageError naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import ErrorCode, OvstageError, OvxError
from .._pathdict import PathDictionary
from ._mapping import DictionaryInterner

if TYPE_CHECKING:
    from .._stage import Stage

__all__ = ["StageInterner"]


class StageInterner(DictionaryInterner):
    """Interns tokens and paths into ``stage``'s dictionary (see ``_mapping.Interner``)."""

    def __init__(self, stage: Stage) -> None:
        self.dictionary = PathDictionary(stage)
        super().__init__(self.dictionary)

    def token(self, text: str) -> int:
        """The id of a token or string (0 for the empty string)."""
        try:
            return super().token(text)
        except OvxError as exc:
            raise OvstageError(
                ErrorCode.INVALID_ARGUMENT, f"token {text!r}: {exc.message}"
            ) from None

    def path(self, path: str) -> int:
        """The id of a prim or property path."""
        try:
            return super().path(path)
        except OvxError as exc:
            raise OvstageError(
                ErrorCode.INVALID_ARGUMENT, f"path {path!r}: {exc.message}"
            ) from None
