"""``BuildInfo`` / ``get_build_info``: the build identity the native library reports.

The extension hands out the same ``ovstage_build_info_t`` the C library's
``ovstage_get_build_info`` returns (``abi.BuildInfo``); reading it creates no Stage and starts
no process lifetime.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

from ._abi import BuildInfoRaw, OvxString
from ._lib import call, native

__all__ = ["BuildInfo", "get_build_info", "library_version"]

#: The size of the 0.3.0 ``ovstage_build_info_t``; a later library may append fields.
_BUILD_INFO_SIZE = 72


@dataclass(frozen=True)
class BuildInfo:
    """The library's build identity (Python-owned copies of its strings).

    ``build_string`` is ``<major>.<minor>.<patch>+<git_branch>.<build_number>.<git_hash>.
    <build_location>``; its semver part equals :func:`library_version`.
    """

    struct_size: int
    build_number: int
    build_string: str
    git_branch: str
    git_hash: str
    build_location: str


def library_version() -> tuple[int, int, int]:
    """The API version ``(major, minor, patch)`` the library implements (its headers'
    ``OVSTAGE_VERSION_*``, what the C library's ``get_version`` reports)."""
    major, minor, patch = call(native.LibraryVersion).split(".")
    return int(major), int(minor), int(patch)


def _text(s: OvxString, name: str) -> str:
    if not s.length:
        return ""
    addr = ctypes.c_void_p.from_buffer(s).value
    if not addr:
        raise RuntimeError(f"ovstage build information: {name} is NULL with length {s.length}")
    try:
        return ctypes.string_at(addr, s.length).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuntimeError(f"ovstage build information: {name} is not valid UTF-8") from exc


def build_info_from_c(addr: int) -> BuildInfo:
    """Copy and check the ``ovstage_build_info_t`` at ``addr`` (``RuntimeError`` when it is
    NULL, smaller than 0.3.0's, malformed, or its version disagrees with the library's)."""
    if not addr:
        raise RuntimeError("ovstage build information: the library returned NULL")
    raw = BuildInfoRaw.from_address(addr)
    if raw.struct_size < _BUILD_INFO_SIZE:
        raise RuntimeError(
            f"ovstage build information: struct_size {raw.struct_size} is smaller than "
            f"{_BUILD_INFO_SIZE}"
        )
    info = BuildInfo(
        struct_size=int(raw.struct_size),
        build_number=int(raw.build_number),
        build_string=_text(raw.build_string, "build_string"),
        git_branch=_text(raw.git_branch, "git_branch"),
        git_hash=_text(raw.git_hash, "git_hash"),
        build_location=_text(raw.build_location, "build_location"),
    )
    version = ".".join(str(part) for part in library_version())
    semver = info.build_string.partition("+")[0]
    if semver != version:
        raise RuntimeError(
            f"ovstage build information mismatch: build_string {info.build_string!r} says "
            f"{semver!r}, the library's get_version says {version!r}"
        )
    return info


@functools.cache
def get_build_info() -> BuildInfo:
    """The build identity of the native library (cached; creates no Stage)."""
    return build_info_from_c(int(call(native.BuildInfo)))
