"""Building and running C programs against libovstage (not a test module).

Shared by the tests of the C library (test_c_api.py), of its pkg-config and CMake packages
(test_c_package.py) and of the C examples (test_c_examples.py). Every subprocess has a timeout.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"  # the build tree: the prefix of build/lib and build/include
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


@functools.cache
def make_libovstage() -> Path:
    """`make libovstage`, once per test session: the library, headers and package files of
    build/, up to date with this checkout."""
    require_tools("make")
    env = {"GO": os.environ.get("GO") or shutil.which("go") or "go"}
    run([shutil.which("make") or "make", "-s", "libovstage"], cwd=REPO, env=env, timeout=600)
    assert LIB.is_file() and (INCLUDE / "ovstage" / "ovstage.h").is_file()
    return LIB
