"""How C and C++ projects find libovstage: its pkg-config file and its CMake package.

``make libovstage`` writes build/lib/pkgconfig/ovstage.pc (prefix: build/) and the CMake package
build/lib/cmake/ovstage/ (``find_package(ovstage)`` -> imported target ``ovstage::ovstage``);
``make install-c PREFIX=...`` installs the library, headers and both under a prefix. Against an
installed wheel (c_build.INSTALLED) the "build tree" tests check the wheel's own files. Each test
compiles tests/c/package/link_probe.c the way a host project would, runs it, and checks the
version it reports and the library file it loaded.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from c_build import (
    BUILD,
    CC,
    INCLUDE,
    LIB,
    PKGCONFIG_DIR,
    REPO,
    make_libovstage,
    require_source_tree,
    require_tools,
    run,
)

PROBE_DIR = REPO / "tests" / "c" / "package"
PROBE = PROBE_DIR / "link_probe.c"
TYPES_HEADER = INCLUDE / "ovstage" / "ovstage_types.h"


def header_version() -> str:
    """The API version the headers declare (OVSTAGE_VERSION_*), the one place it is stated."""
    text = TYPES_HEADER.read_text(encoding="utf-8")
    parts = [
        re.search(rf"^#define OVSTAGE_VERSION_{part} (\d+)$", text, re.MULTILINE)
        for part in ("MAJOR", "MINOR", "PATCH")
    ]
    assert all(parts), "OVSTAGE_VERSION_* not found in ovstage_types.h"
    return ".".join(m.group(1) for m in parts if m)


@pytest.fixture(scope="module")
def library() -> Path:
    require_tools("make")
    if CC is None:
        pytest.skip("needs a C compiler (set CC)")
    return make_libovstage()


@pytest.fixture(scope="module")
def prefix(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An install prefix filled by `make install-c PREFIX=...`."""
    require_source_tree()
    root = tmp_path_factory.mktemp("install") / "usr"
    run(
        [shutil.which("make") or "make", "-s", "install-c", f"PREFIX={root}"], cwd=REPO, timeout=300
    )
    return root


def check_probe(exe: Path, want_library: Path) -> None:
    """The probe runs, the headers and the library agree on the version, and the library it
    loaded is want_library."""
    out = run([exe], timeout=60).stdout.splitlines()
    version = header_version()
    assert out[:2] == [f"headers {version}", f"library {version}"]
    # The loader reports the path as the rpath spelled it (a wheel's: .../pkgconfig/../../lib).
    assert len(out) == 3 and out[2].startswith("loaded from "), out
    assert Path(out[2].removeprefix("loaded from ")).resolve() == want_library.resolve()


def pkg_config(pc_dir: Path, *args: str) -> str:
    env = {"PKG_CONFIG_PATH": str(pc_dir), "PKG_CONFIG_LIBDIR": str(pc_dir)}
    return run(["pkg-config", *args, "ovstage"], env=env, timeout=30).stdout.strip()


def build_with_pkg_config(pc_dir: Path, exe: Path) -> Path:
    """Compiles the probe with `cc $(pkg-config --cflags --libs ovstage)` and an rpath to the
    library's directory (--variable=libdir), as the examples' Makefiles do."""
    flags = pkg_config(pc_dir, "--cflags", "--libs").split()
    libdir = pkg_config(pc_dir, "--variable=libdir")
    run(
        [
            str(CC),
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            PROBE,
            "-o",
            exe,
            *flags,
            f"-Wl,-rpath,{libdir}",
        ],
        timeout=120,
    )
    return exe


def build_with_cmake(prefix_path: Path, build_dir: Path, version: str = "") -> Path:
    """Configures and builds tests/c/package with CMAKE_PREFIX_PATH=prefix_path, asking
    find_package(ovstage) for `version` (none when empty)."""
    run(
        [
            "cmake",
            "-S",
            PROBE_DIR,
            "-B",
            build_dir,
            f"-DCMAKE_PREFIX_PATH={prefix_path}",
            f"-DOVSTAGE_WANTED_VERSION={version}",
        ],
        timeout=120,
    )
    run(["cmake", "--build", build_dir], timeout=120)
    return build_dir / "link_probe"


# ---- pkg-config ----------------------------------------------------------------------------


def test_pkg_config_file_of_the_build_tree(library: Path, tmp_path: Path) -> None:
    require_tools("pkg-config")
    assert pkg_config(PKGCONFIG_DIR, "--modversion") == header_version()
    # A wheel's ovstage.pc finds its prefix from its own place: .../lib/pkgconfig/../..
    cflags = pkg_config(PKGCONFIG_DIR, "--cflags")
    libs = pkg_config(PKGCONFIG_DIR, "--libs").split()
    assert cflags.startswith("-I") and Path(cflags[2:]).resolve() == INCLUDE.resolve()
    assert libs[0].startswith("-L") and Path(libs[0][2:]).resolve() == LIB.parent.resolve()
    assert libs[1:] == ["-lovstage"]
    check_probe(build_with_pkg_config(PKGCONFIG_DIR, tmp_path / "probe"), LIB)


def test_pkg_config_file_of_an_install_prefix(prefix: Path, tmp_path: Path) -> None:
    require_tools("pkg-config")
    pc_dir = prefix / "lib" / "pkgconfig"
    assert pkg_config(pc_dir, "--variable=prefix") == str(prefix)
    assert pkg_config(pc_dir, "--cflags") == f"-I{prefix / 'include'}"
    check_probe(build_with_pkg_config(pc_dir, tmp_path / "probe"), prefix / "lib" / "libovstage.so")


def test_install_prefix_holds_the_library_headers_and_packages(prefix: Path) -> None:
    assert (prefix / "lib" / "libovstage.so").read_bytes() == LIB.read_bytes()
    headers = sorted(p.relative_to(REPO / "include") for p in (REPO / "include").rglob("*.h"))
    installed = sorted(p.relative_to(prefix / "include") for p in (prefix / "include").rglob("*.h"))
    assert installed == headers
    for name in ("ovstageConfig.cmake", "ovstageConfigVersion.cmake"):
        assert (prefix / "lib" / "cmake" / "ovstage" / name).read_text() == (
            BUILD / "lib" / "cmake" / "ovstage" / name
        ).read_text()


def test_install_c_refuses_a_relative_prefix(library: Path) -> None:
    require_source_tree()
    proc = subprocess.run(
        [shutil.which("make") or "make", "-s", "install-c", "PREFIX=relative/dir"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert "PREFIX must be an absolute path" in proc.stdout + proc.stderr
    assert not (REPO / "relative").exists()


# ---- CMake -----------------------------------------------------------------------------------


def test_cmake_package_of_the_build_tree(library: Path, tmp_path: Path) -> None:
    require_tools("cmake")
    check_probe(build_with_cmake(BUILD, tmp_path / "b"), LIB)


def test_cmake_package_of_an_install_prefix_is_relocatable(prefix: Path, tmp_path: Path) -> None:
    """The package finds the library from its own place: a prefix moved elsewhere still works."""
    require_tools("cmake")
    moved = tmp_path / "moved"
    shutil.copytree(prefix, moved, symlinks=True)
    check_probe(build_with_cmake(moved, tmp_path / "b"), moved / "lib" / "libovstage.so")


@pytest.mark.parametrize("wanted", ["0.3", "0.3.0"])
def test_cmake_package_accepts_its_version(library: Path, tmp_path: Path, wanted: str) -> None:
    require_tools("cmake")
    assert header_version().startswith("0.3."), "update the versions this test asks for"
    check_probe(build_with_cmake(BUILD, tmp_path / "b", wanted), LIB)


@pytest.mark.parametrize("wanted", ["0.2", "0.4", "1.0", "0.3.1"])
def test_cmake_package_refuses_other_versions(library: Path, tmp_path: Path, wanted: str) -> None:
    """Before 1.0 a minor version may change the ABI: only 0.3.x up to the built patch fits."""
    require_tools("cmake")
    assert header_version() == "0.3.0", "update the versions this test asks for"
    proc = subprocess.run(
        [
            "cmake",
            "-S",
            str(PROBE_DIR),
            "-B",
            str(tmp_path / "b"),
            f"-DCMAKE_PREFIX_PATH={BUILD}",
            f"-DOVSTAGE_WANTED_VERSION={wanted}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert f'compatible with requested version "{wanted}"' in proc.stderr
    assert "version: 0.3.0" in proc.stderr
