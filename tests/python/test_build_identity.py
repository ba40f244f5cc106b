"""The build identity (git branch and commit) a build stamps into its binaries.

tools/build_identity.py finds it (git, else an sdist's BUILD_IDENTITY stamp, else the 0.3.0
defaults ``local unknown``); setup.py stamps it into the extension and the Makefile into the C
library. A wheel carries both binaries of one build: they must say the same thing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import ovstage
import pytest
from c_build import INSTALLED, LIB, REPO

TOOL = REPO / "tools" / "build_identity.py"


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    if not TOOL.is_file():
        pytest.skip("tools/build_identity.py is not beside these tests (a copy without tools/)")
    spec = importlib.util.spec_from_file_location("build_identity", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git repository on branch ``feature-x`` whose one commit tracks go.mod."""
    if subprocess.run(["git", "--version"], capture_output=True, timeout=30).returncode:
        pytest.skip("no git")
    _git(tmp_path, "init", "-q", "-b", "feature-x")
    (tmp_path / "go.mod").write_text("module example.com/x\n")
    _git(tmp_path, "add", "go.mod")
    _git(tmp_path, "commit", "-q", "-m", "one")
    return tmp_path


def test_a_checkout_reports_its_branch_and_commit(tool: ModuleType, checkout: Path) -> None:
    commit = _git(checkout, "rev-parse", "HEAD")
    branch, short = tool.identity(checkout)
    assert branch == "feature-x"
    assert len(short) == 12 and commit.startswith(short)


def test_the_stamp_an_sdist_carries_is_read_back(
    tool: ModuleType, checkout: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    sdist = tmp_path_factory.mktemp("sdist")
    assert tool.identity(sdist) == ("local", "unknown")
    written = tool.write_stamp(checkout, sdist)
    assert written == tool.identity(checkout)
    assert tool.identity(sdist) == written


def test_an_unrelated_repository_around_the_tree_is_not_its_identity(
    tool: ModuleType, checkout: Path
) -> None:
    """An sdist unpacked inside some other repository: that repository does not track it."""
    inner = checkout / "unpacked"
    inner.mkdir()
    (inner / "go.mod").write_text("module example.com/inner\n")
    assert tool.identity(inner) == ("local", "unknown")
    (inner / tool.STAMP).write_text(json.dumps({"git_branch": "main", "git_hash": "abc123"}))
    assert tool.identity(inner) == ("main", "abc123")


@pytest.mark.parametrize(
    "text", ["not json", "[]", '{"git_branch": "main"}', '{"git_branch": "", "git_hash": "x"}']
)
def test_a_malformed_stamp_is_an_error_not_an_unknown_build(
    tool: ModuleType, tmp_path: Path, text: str
) -> None:
    (tmp_path / tool.STAMP).write_text(text)
    with pytest.raises(RuntimeError, match="BUILD_IDENTITY"):
        tool.identity(tmp_path)


# The C library's build info, read in a process of its own (no second Go runtime in this one).
_C_BUILD_INFO = textwrap.dedent(
    """
    import ctypes, sys
    class S(ctypes.Structure):
        _fields_ = [("ptr", ctypes.c_void_p), ("length", ctypes.c_size_t)]
    class Info(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_uint32), ("build_number", ctypes.c_uint32),
                    ("build_string", S), ("git_branch", S), ("git_hash", S),
                    ("build_location", S)]
    lib = ctypes.CDLL(sys.argv[1])
    lib.ovstage_get_build_info.restype = ctypes.POINTER(Info)
    info = lib.ovstage_get_build_info().contents
    print(ctypes.string_at(info.build_string.ptr, info.build_string.length).decode())
    """
)


@pytest.mark.skipif(not INSTALLED, reason="only a wheel holds both binaries of one build")
def test_the_wheel_s_extension_and_library_report_one_build() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _C_BUILD_INFO, str(LIB)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert proc.stdout.strip() == ovstage.get_build_info().build_string
