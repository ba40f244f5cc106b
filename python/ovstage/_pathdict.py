"""``PathDictionary`` and ``PathList`` (spec §5.10).

The dictionary is process-wide (shared by every stage), so tokens, paths and lists minted
through one stage are valid with any other.
"""

from __future__ import annotations

import array
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._errors import OVX_API_ERROR, OvxError
from ._guards import as_sequence, as_str, as_uint64, string_problem
from ._lib import call, native
from ._warn import warn_finalized

if TYPE_CHECKING:
    from ._stage import Stage

__all__ = ["PathDictionary", "PathList"]

# Ownership of path lists, process-wide like the dictionary: the release state of each
# handle's owning PathList, and references added through add_path_list_reference (which a
# release through a plain int consumes first).
_lock = threading.Lock()
_owner_states: dict[int, dict[str, bool]] = {}
_added_refs: dict[int, int] = {}


def _check_string(value: object, name: str, kind: str) -> str:
    """A str argument the dictionary can intern; OvxError naming ``name`` otherwise."""
    text = as_str(value, name)
    problem = string_problem(text, kind)
    if problem is not None:
        raise OvxError(OVX_API_ERROR, f"{name}: {problem}")
    return text


def _release_owner(handle: int, state: dict[str, bool]) -> None:
    """Release an owner's create reference (OvxError if it was already released)."""
    with _lock:
        if state["released"]:
            raise OvxError(
                OVX_API_ERROR, f"Path list handle was not found: {handle} (already released)"
            )
        state["released"] = True
        if _owner_states.get(handle) is state:
            del _owner_states[handle]
    call(native.ReleasePathListReference, handle)


class PathList(int):
    """A path-list handle that owns its create reference (an ``int`` subclass).

    ``str``, hashing and JSON behave as the int; ``copy``/``deepcopy``/``pickle`` give a
    plain ``int`` (never a second owner). ``release()`` (or leaving a ``with`` block)
    releases the create reference; a dropped, unreleased list is released by its finalizer
    with a ``ResourceWarning``.
    """

    _state: dict[str, bool]

    def __new__(cls, handle: int) -> PathList:
        self = super().__new__(cls, handle)
        self._state = {"released": False}
        with _lock:
            _owner_states[int(handle)] = self._state
        return self

    @property
    def released(self) -> bool:
        """Whether the create reference was released."""
        return self._state["released"]

    def release(self) -> None:
        """Release the create reference (OvxError if already released)."""
        _release_owner(int(self), self._state)

    def __del__(self) -> None:
        state = getattr(self, "_state", None)
        if state is None or state["released"]:
            return
        try:
            _release_owner(int(self), state)
        except Exception:
            return
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
    """Interns tokens and prim paths and manages path lists.

    ``PathDictionary(stage)`` borrows the stage's dictionary; ``PathDictionary()`` creates a
    private ``Stage`` named ``"ovstage-path-dictionary"`` that ``destroy()`` destroys.
    """

    def __init__(self, stage: Stage | None = None) -> None:
        from ._stage import Stage

        self._owned_stage: Stage | None = None
        if stage is None:
            stage = Stage("ovstage-path-dictionary")
            self._owned_stage = stage
        elif not isinstance(stage, Stage):
            raise TypeError(f"stage must be a Stage or None, got {type(stage).__name__}")
        stage._require_live("PathDictionary")
        self._stage = stage

    def destroy(self) -> None:
        """Destroy the private stage, if this dictionary created one."""
        if self._owned_stage is not None:
            self._owned_stage.destroy()
            self._owned_stage = None

    def __enter__(self) -> PathDictionary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def _live(self, what: str) -> None:
        self._stage._require_live(f"PathDictionary.{what}")

    def intern_token(self, s: str) -> int:
        """Intern a string; the same string always gives the same token."""
        self._live("intern_token")
        return call(native.InternToken, _check_string(s, "s", "Token"))

    def token_to_string(self, token: int) -> str:
        """The string of a token (``""`` for token 0, which is never a token)."""
        self._live("token_to_string")
        value = as_uint64(token, "token")
        return "" if value == 0 else call(native.TokenToString, value)

    def intern_path(self, s: str) -> int:
        """Intern an absolute prim path ("/" is the root)."""
        self._live("intern_path")
        try:
            return call(native.InternPath, _check_string(s, "s", "Path"))
        except OvxError as exc:
            if exc.message.startswith("s: "):
                raise
            raise OvxError(exc.code, f"s: {exc.message}") from None

    def path_to_string(self, path: int) -> str:
        """Format a path handle as "/a/b" ("/" for the root)."""
        self._live("path_to_string")
        return call(native.PathToString, as_uint64(path, "path"))

    def create_path_list(self, paths: Sequence[int]) -> PathList:
        """A new list of path handles (refcount 1, owned by the returned PathList)."""
        self._live("create_path_list")
        items = as_sequence(paths, "paths", "path handles")
        ids = array.array("Q", (as_uint64(p, f"paths[{i}]") for i, p in enumerate(items)))
        addr = ids.buffer_info()[0] if ids else 0
        return PathList(call(native.CreatePathListFromPaths, addr, len(ids)))

    def create_path_list_from_strings(self, paths: Sequence[str]) -> PathList:
        """Intern path strings and make a new list."""
        self._live("create_path_list_from_strings")
        if isinstance(paths, str):
            raise TypeError("paths must be a sequence of str, not a single str")
        items = as_sequence(paths, "paths", "str")
        encoded = [
            _check_string(p, f"paths[{i}]", "Path").encode("utf-8") for i, p in enumerate(items)
        ]
        blob = b"".join(encoded)
        lengths = array.array("Q", (len(e) for e in encoded))
        buf = array.array("B", blob) if blob else array.array("B")
        blob_addr = buf.buffer_info()[0] if blob else 0
        lens_addr = lengths.buffer_info()[0] if lengths else 0
        handle = call(
            native.CreatePathListFromStrings, blob_addr, len(blob), lens_addr, len(encoded)
        )
        return PathList(handle)

    def add_path_list_reference(self, path_list: int) -> None:
        """Add a reference; it is the caller's to release with ``destroy_path_list``."""
        self._live("add_path_list_reference")
        handle = as_uint64(path_list, "path_list")
        call(native.AddPathListReference, handle)
        if handle:
            with _lock:
                _added_refs[handle] = _added_refs.get(handle, 0) + 1

    def destroy_path_list(self, path_list: int) -> None:
        """Release one reference: added references first, then the owner's."""
        self._live("destroy_path_list")
        if isinstance(path_list, PathList):
            path_list.release()
            return
        handle = as_uint64(path_list, "path_list")
        with _lock:
            added = _added_refs.get(handle, 0)
            if added:
                if added == 1:
                    del _added_refs[handle]
                else:
                    _added_refs[handle] = added - 1
            owner = None if added else _owner_states.get(handle)
        if owner is not None:
            _release_owner(handle, owner)
            return
        call(native.ReleasePathListReference, handle)

    def path_list_count(self, path_list: int) -> int:
        """Number of paths in a list (OvxError for unknown lists)."""
        self._live("path_list_count")
        return call(native.PathListCount, as_uint64(path_list, "path_list"))

    def get_paths(self, path_list: int) -> list[int]:
        """The list's path handles."""
        handle = as_uint64(path_list, "path_list")
        count = self.path_list_count(handle)
        out = array.array("Q", bytes(8 * count))
        if count:
            count = call(native.PathListCopy, handle, out.buffer_info()[0], count)
        return list(out[:count])

    def get_path_strings(self, path_list: int) -> list[str]:
        """The list's paths as strings."""
        return [self.path_to_string(p) for p in self.get_paths(path_list)]
