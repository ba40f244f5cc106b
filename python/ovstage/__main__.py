"""``python -m ovstage``: what a bug report needs to say about this install, one line each.

Versions (package, API, build), the Python and numpy in use, whether a GPU is usable (and
why not), whether USD population can be used (and why not), and where the extension, the C
library and its headers are. Creates no Stage.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable
from pathlib import Path

import numpy

import ovstage

from ._c_files import get_include, get_library_dir
from ._lib import native
from .population import _usd

__all__ = ["main", "report"]

#: The ``git_hash`` of a build that did not know its commit (the 0.3.0 binaries' default).
UNKNOWN_HASH = "unknown"


def _located(find: Callable[[], str]) -> str:
    """The path a ``get_*`` function returns, or why this install has none."""
    try:
        return find()
    except FileNotFoundError as exc:
        return f"none ({exc})"


def _git_line(info: ovstage.BuildInfo) -> str:
    """Branch and commit the build came from; an unknown commit says why it is unknown."""
    line = f"{info.git_branch} {info.git_hash}"
    if info.git_hash == UNKNOWN_HASH:
        line += " (built outside git: neither a checkout nor an sdist stamped with its commit)"
    return line


def report() -> list[tuple[str, str]]:
    """The report as ``(field, value)`` pairs, in the order ``python -m ovstage`` prints."""
    info = ovstage.get_build_info()
    cuda = ovstage.cuda_status()
    if cuda.available:
        cuda_line = f"available: {cuda.device_count} device(s), driver {cuda.driver_version}"
    else:
        cuda_line = f"unavailable: {cuda.reason}"
    usd = "available" if _usd.AVAILABLE else f"unavailable: {_usd.REASON}"
    return [
        ("ovstage-go", ovstage.__version__),
        ("API version", ".".join(str(part) for part in ovstage.library_version())),
        ("build", info.build_string),
        ("git", _git_line(info)),
        ("Python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("Python executable", sys.executable),
        ("platform", platform.platform()),
        ("numpy", numpy.__version__),
        ("CUDA", cuda_line),
        ("USD population", usd),
        ("package", str(Path(ovstage.__file__).parent)),
        ("extension", str(native._native.__file__)),
        ("C library", _located(get_library_dir)),
        ("C headers", _located(get_include)),
    ]


def main() -> int:
    """Print the report; exit status 0."""
    rows = report()
    width = max(len(field) for field, _ in rows)
    for field, value in rows:
        print(f"{field + ':':<{width + 1}} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
