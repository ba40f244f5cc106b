"""``PathDictionary``, ``PathList`` and the per-stage bookkeeping behind them.

Every stage owns its path dictionary: its tokens, paths and lists are refused by every other
stage. A ``PathDictionary`` only borrows a stage's dictionary; path-list ownership is kept per
stage (shared by every wrapper over it) in the stage's :class:`PathListBook`.
"""

from __future__ import annotations

import array
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._errors import OVX_API_ERROR, OvxError
from ._guards import as_sequence, as_str, as_uint64, string_problem
from ._lib import call, check_not_forked, native
from ._warn import warn_finalized

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = ["PathDictionary", "PathList", "PathListBook", "StageDictionary"]

_STAGE_GONE = "PathDictionary backing Stage has been destroyed"


def _check_string(value: object, name: str, kind: str) -> str:
    """A str argument the dictionary can intern; OvxError naming ``name`` otherwise."""
    text = as_str(value, name)
    problem = string_problem(text, kind)
    if problem is not None:
        raise OvxError(OVX_API_ERROR, f"{name}: {problem}")
    return text


def _pack_ascii(items: list[object]) -> tuple[bytes, array.array[int]] | None:
    """The usual batch (non-empty ASCII ``str`` without NUL) packed in a few C-speed passes:
    the joined bytes and each item's length. None when some item needs the item-by-item
    check, which also names it in the error."""
    try:
        joined = "".join(items)  # type: ignore[arg-type]
    except TypeError:
        return None
    lengths = array.array("Q", map(len, items))  # type: ignore[arg-type]
    if not items or not joined.isascii() or "\x00" in joined or min(lengths) == 0:
        return None
    return joined.encode("ascii"), lengths


class StageDictionary:
    """What ``Stage.get_path_dictionary()`` returns: an opaque reference to the stage's
    dictionary, equal on every call for one stage and different across stages (this package
    does not run over the C library, so there is no C bundle pointer to hand out)."""

    __slots__ = ("number", "stage_id")

    def __init__(self, stage_id: int, number: int) -> None:
        self.stage_id = stage_id
        self.number = number

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StageDictionary):
            return NotImplemented
        return (self.stage_id, self.number) == (other.stage_id, other.number)

    def __hash__(self) -> int:
        return hash((self.stage_id, self.number))

    def __repr__(self) -> str:
        return f"StageDictionary(stage {self.stage_id}, dictionary {self.number})"


class PathListBook:
    """One stage's path-list ownership: the release state of each handle's owning PathList,
    and the references added through ``add_path_list_reference`` (which a release through a
    plain int consumes first). It holds the stage weakly."""

    def __init__(self, stage: Stage) -> None:
        self._stage = weakref.ref(stage)
        self.stage_id: int = stage._id
        self.lock = threading.Lock()
        self.owners: dict[int, dict[str, bool]] = {}
        self.added: dict[int, int] = {}

    def stage_gone(self) -> bool:
        """Whether the stage (and so its dictionary) is destroyed or collected."""
        stage = self._stage()
        return stage is None or stage._destroyed

    def live_id(self) -> int:
        """The stage id; OvxError once the stage is gone."""
        if self.stage_gone():
            raise OvxError(OVX_API_ERROR, _STAGE_GONE)
        check_not_forked()
        return self.stage_id

    def release_owner(self, handle: int, state: dict[str, bool]) -> None:
        """Release an owner's create reference (OvxError if it was already released). A list
        whose stage is gone went with its dictionary: nothing is left to release."""
        with self.lock:
            if state["released"]:
                raise OvxError(
                    OVX_API_ERROR, f"Path list handle was not found: {handle} (already released)"
                )
            state["released"] = True
            if self.owners.get(handle) is state:
                del self.owners[handle]
        if not self.stage_gone():
            call(native.ReleasePathListReference, self.stage_id, handle)


class PathList(int):
    """A path-list handle that owns its create reference (an ``int`` subclass).

    ``str``, hashing and JSON behave as the int; ``copy``/``deepcopy``/``pickle`` give a
    plain ``int`` (never a second owner). ``release()`` (or leaving a ``with`` block)
    releases the create reference; a dropped, unreleased list is released by its finalizer
    with a ``ResourceWarning`` (silently once its stage is destroyed: the list went with it).
    ``PathList(handle, dictionary, owner)`` is made by :class:`PathDictionary` only.
    """

    _state: dict[str, bool]
    _book: PathListBook
    _dictionary: PathDictionary

    def __new__(cls, handle: int, dictionary: PathDictionary, owner: PathListBook) -> PathList:
        self = super().__new__(cls, handle)
        self._state = {"released": False}
        self._book = owner
        self._dictionary = dictionary
        with owner.lock:
            owner.owners[int(handle)] = self._state
        return self

    @property
    def released(self) -> bool:
        """Whether the create reference was released."""
        return self._state["released"]

    def release(self) -> None:
        """Release the create reference (OvxError if already released)."""
        self._book.release_owner(int(self), self._state)

    def __del__(self) -> None:
        state = getattr(self, "_state", None)
        book = getattr(self, "_book", None)
        if state is None or book is None or state["released"]:
            return
        gone = book.stage_gone()
        try:
            book.release_owner(int(self), state)
        except Exception:
            return
        if not gone:
            warn_finalized("PathList", int(self))

    def __enter__(self) -> PathList:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._state["released"]:
            self.release()

    def __repr__(self) -> str:
        return f"PathList({int(self)}, {'released' if self.released else 'owned'})"

    def __str__(self) -> str:
        return str(int(self))

    def __format__(self, spec: str) -> str:
        return format(int(self), spec)

    def __copy__(self) -> int:
        return int(self)

    def __deepcopy__(self, memo: Any) -> int:
        return int(self)

    def __reduce__(self) -> tuple[type[int], tuple[int]]:
        return (int, (int(self),))


class PathDictionary:
    """Interns tokens and prim paths and manages path lists of one stage's dictionary.

    ``PathDictionary(stage)`` borrows ``stage``'s dictionary; it does not keep the stage alive.
    ``destroy()`` (or leaving a ``with`` block) only drops the borrow.
    """

    def __init__(self, stage: Stage) -> None:
        from ._stage import Stage

        if not isinstance(stage, Stage):
            raise TypeError(f"stage must be an ovstage.Stage, got {type(stage).__name__}")
        stage._require_live("PathDictionary")
        self._book: PathListBook | None = stage._path_lists

    def destroy(self) -> None:
        """Drop the borrow of the stage's dictionary (idempotent); later calls raise."""
        self._book = None

    def __enter__(self) -> PathDictionary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def _owner(self) -> PathListBook:
        """The stage's book; OvxError once this wrapper or the stage is destroyed."""
        book = self._book
        if book is None:
            raise OvxError(OVX_API_ERROR, "PathDictionary has been destroyed")
        return book

    def _sid(self) -> int:
        """The backing stage's id (see ``_owner``)."""
        return self._owner().live_id()

    def intern_token(self, string: str) -> int:
        """Intern a string; the same string always gives the same token."""
        sid = self._sid()
        return call(native.InternToken, sid, _check_string(string, "string", "Token"))

    def token_to_string(self, token: int) -> str:
        """The string of a token (``""`` for token 0, which is never a token)."""
        sid = self._sid()
        value = as_uint64(token, "token")
        return "" if value == 0 else call(native.TokenToString, sid, value)

    def intern_path(self, path: str) -> int:
        """Intern an absolute prim path ("/" is the root)."""
        sid = self._sid()
        try:
            return call(native.InternPath, sid, _check_string(path, "path", "Path"))
        except OvxError as exc:
            if exc.message.startswith("path: "):
                raise
            raise OvxError(exc.code, f"path: {exc.message}") from None

    def path_to_string(self, primpath: int) -> str:
        """Format a path handle as "/a/b" ("/" for the root)."""
        sid = self._sid()
        return call(native.PathToString, sid, as_uint64(primpath, "primpath"))

    def _path_strings(self, primpaths: Sequence[int]) -> list[str]:
        """``path_to_string`` of several handles, the stage checked once (USD export formats
        every prim path of a stage; not public API: the reference has no such call)."""
        sid = self._sid()
        try:
            values = array.array("Q", primpaths)
        except (TypeError, OverflowError):
            values = array.array("Q", [as_uint64(p, "primpaths") for p in primpaths])
        fn = native.PathToString
        return call(lambda: [fn(sid, p) for p in values])

    def create_path_list(self, primpaths: Sequence[int]) -> PathList:
        """A new list of path handles (refcount 1, owned by the returned PathList)."""
        book = self._owner()
        sid = book.live_id()
        items = as_sequence(primpaths, "primpaths", "path handles")
        ids = array.array("Q", (as_uint64(p, f"primpaths[{i}]") for i, p in enumerate(items)))
        addr = ids.buffer_info()[0] if ids else 0
        return PathList(call(native.CreatePathListFromPaths, sid, addr, len(ids)), self, book)

    def create_path_list_from_strings(self, paths: Sequence[str]) -> PathList:
        """Intern path strings and make a new list."""
        book = self._owner()
        sid = book.live_id()
        if isinstance(paths, str):
            raise TypeError("paths must be a sequence of str, not a single str")
        items = as_sequence(paths, "paths", "str")
        packed = _pack_ascii(items)
        if packed is None:
            encoded = [
                _check_string(p, f"paths[{i}]", "Path").encode("utf-8") for i, p in enumerate(items)
            ]
            packed = b"".join(encoded), array.array("Q", (len(e) for e in encoded))
        blob, lengths = packed
        buf = array.array("B", blob) if blob else array.array("B")
        blob_addr = buf.buffer_info()[0] if blob else 0
        lens_addr = lengths.buffer_info()[0] if lengths else 0
        handle = call(
            native.CreatePathListFromStrings, sid, blob_addr, len(blob), lens_addr, len(lengths)
        )
        return PathList(handle, self, book)

    def add_path_list_reference(self, path_list: int) -> None:
        """Add a reference; it is the caller's to release with ``destroy_path_list``."""
        book = self._owner()
        sid = book.live_id()
        handle = as_uint64(path_list, "path_list")
        call(native.AddPathListReference, sid, handle)
        if handle:
            with book.lock:
                book.added[handle] = book.added.get(handle, 0) + 1

    def destroy_path_list(self, path_list: int) -> None:
        """Release one reference: added references first, then the owner's."""
        book = self._owner()
        sid = book.live_id()
        handle = as_uint64(path_list, "path_list")
        with book.lock:
            added = book.added.get(handle, 0)
            if added:
                if added == 1:
                    del book.added[handle]
                else:
                    book.added[handle] = added - 1
            owner = None if added else book.owners.get(handle)
        if owner is not None:
            book.release_owner(handle, owner)
            return
        call(native.ReleasePathListReference, sid, handle)

    def path_list_count(self, path_list: int) -> int:
        """Number of paths in a list (OvxError for unknown lists)."""
        sid = self._sid()
        return call(native.PathListCount, sid, as_uint64(path_list, "path_list"))

    def get_paths(self, path_list: int) -> list[int]:
        """The list's path handles."""
        handle = as_uint64(path_list, "path_list")
        count = self.path_list_count(handle)
        out = array.array("Q", bytes(8 * count))
        if count:
            count = call(native.PathListCopy, self._sid(), handle, out.buffer_info()[0], count)
        return list(out[:count])

    def get_path_strings(self, path_list: int) -> list[str]:
        """The list's paths as strings."""
        return self._path_strings(self.get_paths(path_list))
