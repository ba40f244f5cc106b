"""libovstage.so, the C library, through its C API (docs/c-api.md).

``make libovstage`` builds build/lib/libovstage.so (when a source changed) and copies the
headers to build/include. This module runs it, checks that the library exports exactly the 53
functions of the ABI table (tests/abi/layout.json), then compiles the C tests of tests/c against
build/include with ``-Wall -Wextra -Werror`` and runs them with a timeout: capi_test.c (every
slot and function; one line per test and ``N passed, N failed``) and capi_cuda_test.c (placement
on CUDA, once with the fake driver of core/cuda/testdata and once with no driver).

Running the same C tests under AddressSanitizer (library and test instrumented) is
``make capi-asan``; it is not part of ``make test`` because the instrumented build of the Go
runtime takes minutes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from c_build import CC, INCLUDE, REPO, make_libovstage

C_TEST = REPO / "tests" / "c" / "capi_test.c"
C_CUDA_TEST = REPO / "tests" / "c" / "capi_cuda_test.c"
FAKE_DRIVER = REPO / "core" / "cuda" / "testdata" / "fakecuda.c"
MAKE = shutil.which("make")
NM = shutil.which("nm")
C_FLAGS = ["-std=c11", "-D_GNU_SOURCE", "-g", "-Wall", "-Wextra", "-Werror"]

pytestmark = pytest.mark.skipif(
    CC is None or MAKE is None, reason="needs a C compiler and make (set CC)"
)


@pytest.fixture(scope="module")
def library() -> Path:
    """build/lib/libovstage.so, up to date with this checkout."""
    return make_libovstage()


def _build(source: Path, library: Path, exe: Path) -> Path:
    cmd = [
        str(CC),
        *C_FLAGS,
        f"-I{INCLUDE}",
        str(source),
        f"-L{library.parent}",
        "-lovstage",
        "-lpthread",
        "-ldl",
        f"-Wl,-rpath,{library.parent}",
        "-o",
        str(exe),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, f"building {source.name} failed:\n{proc.stdout}{proc.stderr}"
    return exe


@pytest.fixture(scope="module")
def c_test(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(C_TEST, library, tmp_path_factory.mktemp("capi") / "capi_test")


def _run(exe: Path, *args: str, **env: str) -> str:
    """Runs a C test program; it must exit 0 and print a summary with no failures."""
    proc = subprocess.run(
        [str(exe), *args],
        env={**os.environ, "OVSTAGE_TEST_HOOKS": "1", **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = proc.stdout + proc.stderr
    summary = re.search(r"^(\d+) passed, (\d+) failed$", proc.stdout, re.MULTILINE)
    assert summary is not None, f"no summary line (exit {proc.returncode}):\n{output}"
    assert int(summary.group(2)) == 0 and proc.returncode == 0, output
    return proc.stdout


@pytest.mark.skipif(NM is None, reason="needs nm")
def test_library_exports_exactly_the_api(library: Path) -> None:
    table = json.loads((REPO / "tests" / "abi" / "layout.json").read_text())
    want = {entry[0] for entry in table["functions"]}
    assert len(want) == 53
    out = subprocess.run(
        [str(NM), "-D", "--defined-only", str(library)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert exported == want, f"missing {sorted(want - exported)}, extra {sorted(exported - want)}"
    soname = subprocess.run(
        ["readelf", "-d", str(library)], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    if soname:
        assert "Library soname: [libovstage.so]" in soname


def test_c_api(c_test: Path) -> None:
    out = _run(c_test)
    summary = re.search(r"^(\d+) passed", out, re.MULTILINE)
    assert summary is not None and int(summary.group(1)) >= 30, out


def test_c_api_cuda_placement(library: Path, tmp_path: Path) -> None:
    """Placed writes, reads and maps on kDLCUDA with the fake driver, INVALID_ARGUMENT without
    a driver (each in its own process: the driver is loaded once per process)."""
    fake = tmp_path / "libfakecuda.so"
    proc = subprocess.run(
        [str(CC), "-shared", "-fPIC", "-O1", "-o", str(fake), str(FAKE_DRIVER), "-lpthread"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    exe = _build(C_CUDA_TEST, library, tmp_path / "capi_cuda_test")
    _run(exe, "fake", OVSTAGE_CUDA_LIBRARY=str(fake), FAKECUDA_DEVICES="1")
    _run(exe, "absent", OVSTAGE_CUDA_LIBRARY=str(tmp_path / "no-such-libcuda.so.1"))


def test_c_benchmark_compiles(library: Path, tmp_path: Path) -> None:
    """tests/bench/bench_c.c (run by `make bench`, not here) keeps compiling cleanly."""
    _build(REPO / "tests" / "bench" / "bench_c.c", library, tmp_path / "bench_c")
