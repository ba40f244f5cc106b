"""Building and running C programs against libovstage (not a test module).

Shared by the tests of the C library (test_c_api.py), of its pkg-config and CMake packages
(test_c_package.py) and of the C examples (test_c_examples.py). Every subprocess has a timeout.

Against a source checkout the prefix is the build tree (build/, made by `make libovstage`);
against an installed wheel (INSTALLED: the imported ovstage carries its C files) it is the
package directory, so these tests compile against the wheel's headers and link its library.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from ovstage import _c_files

REPO = Path(__file__).resolve().parents[2]
INSTALLED = _c_files.c_files_installed()
# The prefix of lib/libovstage.so and include/: the build tree, or the installed wheel's package.
BUILD = Path(_c_files.get_prefix()) if INSTALLED else REPO / "build"
LIB = BUILD / "lib" / "libovstage.so"
INCLUDE = BUILD / "include"
PKGCONFIG_DIR = BUILD / "lib" / "pkgconfig"
CC = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")


def require_tools(*tools: str) -> None:
    """Skips the test when a tool is not on PATH, except in CI (CI=true), where .ci/run
    installs every tool these tests use, so a missing one fails."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not missing:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{', '.join(missing)} not on PATH in CI (.ci/run installs them)")
    pytest.skip(f"needs {', '.join(missing)} on PATH")


def run(
    cmd: Sequence[str | Path],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Runs cmd to completion (never longer than timeout seconds); it must exit 0."""
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, (
        f"{' '.join(str(c) for c in cmd)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
    )
    return proc


def require_source_tree() -> None:
    """Skips a test of a source-tree target (`make install-c`) when the suite runs against an
    installed wheel (CI runs it against the source tree too)."""
    if INSTALLED:
        pytest.skip("tests a target of the source tree; this run tests the installed wheel")


@functools.cache
def make_libovstage() -> Path:
    """`make libovstage`, once per test session: the library, headers and package files of
    build/, up to date with this checkout (the installed wheel's files, when INSTALLED)."""
    if INSTALLED:
        assert LIB.is_file() and (INCLUDE / "ovstage" / "ovstage.h").is_file()
        return LIB
    require_tools("make")
    env = {"GO": os.environ.get("GO") or shutil.which("go") or "go"}
    run([shutil.which("make") or "make", "-s", "libovstage"], cwd=REPO, env=env, timeout=600)
    assert LIB.is_file() and (INCLUDE / "ovstage" / "ovstage.h").is_file()
    return LIB
