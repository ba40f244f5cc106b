"""The C examples under examples/c, built the two ways a user would and run.

Each example is copied out of the repository (as a user would copy it) and built by its own
Makefile, which finds libovstage through pkg-config (PKG_CONFIG_PATH=build/lib/pkgconfig), and
by its CMakeLists.txt, which finds the CMake package (CMAKE_PREFIX_PATH=build). Both programs
must print exactly the lines below; the examples compile with -Wall -Wextra -Werror.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from c_build import BUILD, CC, PKGCONFIG_DIR, REPO, make_libovstage, require_tools, run

EXAMPLES = REPO / "examples" / "c"

EXPECTED = {
    "minimal": [
        "wrote temperature at ordinal 1",
        "sealed ordinal 1",
        "read back:",
        "  /World/A = 20.5 (written at ordinal 1)",
        "  /World/B = 21.0 (written at ordinal 1)",
        "  /World/C = 21.5 (written at ordinal 1)",
        "writing ordinal 1 again: write floor violation",
    ],
    "write-flavors": [
        "batch write at ordinal 1 (one op)",
        "  temperature [20.0, 21.0, 22.0, 23.0]",
        "  position    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]",
        # A <- row 1, B <- row 1, C <- row 0, D untouched.
        "index_map [1, 1, 0] at ordinal 2",
        "  temperature [200.0, 200.0, 100.0, 23.0]",
        # Only B and D (bits 1 and 3).
        "mask 0b1010 at ordinal 3",
        "  temperature [200.0, -2.0, 100.0, -4.0]",
        "CPU ahead: submitted 5 ops for ordinals 4..7 with no waits, drained 5",
        "  temperature [70.0, 70.0, 70.0, 70.0]",
    ],
    "producer-consumer": [
        "producer: 120 frames, 240 writes and 120 floor advances submitted ahead, all completed",
        "consumer: read at least one frame while the producer ran: yes",
        "consumer: frames never went backwards: yes",
        "consumer: every read was one whole sealed frame: yes",
        "consumer: no read was older than the floor fetched before it: yes",
        "final frame: 120",
        "final temperature: 140.0 140.5 141.0 141.5 142.0 142.5 143.0 143.5",
        "final position of sensor 7: [120.0, 7.0, -120.0]",
    ],
}

# What each example prints to stderr: minimal reports the write it has rejected on purpose.
EXPECTED_STDERR = {
    "minimal": [
        "ovstage_write_attribute at a sealed ordinal: status 5: write_attribute: ordinal 1 is "
        'at or below the write floor 1 of attribute "temperature"'
    ],
    "write-flavors": [],
    "producer-consumer": [],
}


@pytest.fixture(scope="module")
def library() -> Path:
    require_tools("make")
    if CC is None:
        pytest.skip("needs a C compiler (set CC)")
    return make_libovstage()


def check_run(exe: Path, name: str) -> None:
    proc = run([exe], timeout=120)
    assert proc.stdout.splitlines() == EXPECTED[name]
    assert proc.stderr.splitlines() == EXPECTED_STDERR[name]


def test_every_example_is_covered() -> None:
    assert sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_built_with_its_makefile(library: Path, tmp_path: Path, name: str) -> None:
    require_tools("pkg-config")
    copy = tmp_path / name
    shutil.copytree(EXAMPLES / name, copy)
    run(
        [shutil.which("make") or "make", f"CC={CC}"],
        cwd=copy,
        env={"PKG_CONFIG_PATH": str(PKGCONFIG_DIR)},
        timeout=120,
    )
    check_run(copy / name, name)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_built_with_cmake(library: Path, tmp_path: Path, name: str) -> None:
    require_tools("cmake")
    build = tmp_path / "build"
    run(["cmake", "-S", EXAMPLES / name, "-B", build, f"-DCMAKE_PREFIX_PATH={BUILD}"], timeout=120)
    run(["cmake", "--build", build], timeout=120)
    check_run(build / name, name)


def test_makefile_says_when_pkg_config_finds_no_ovstage(tmp_path: Path) -> None:
    require_tools("make", "pkg-config")
    copy = tmp_path / "minimal"
    shutil.copytree(EXAMPLES / "minimal", copy)
    proc = subprocess.run(
        [shutil.which("make") or "make"],
        cwd=copy,
        env={
            **os.environ,
            "PKG_CONFIG_PATH": str(tmp_path),
            "PKG_CONFIG_LIBDIR": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert "pkg-config finds no ovstage" in proc.stderr


def test_readme_c_snippet_compiles_and_runs(library: Path, tmp_path: Path) -> None:
    """The README's C example, built with the pkg-config line the README gives."""
    require_tools("pkg-config")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## The C API\n", 1)[1].split("\n## ", 1)[0]
    source = tmp_path / "app.c"
    source.write_text(section.split("```c\n", 1)[1].split("```", 1)[0], encoding="utf-8")
    env = {"PKG_CONFIG_PATH": str(PKGCONFIG_DIR)}
    flags = run(["pkg-config", "--cflags", "--libs", "ovstage"], env=env, timeout=30).stdout
    exe = tmp_path / "app"
    run(
        [
            CC,
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            source,
            *flags.split(),
            f"-Wl,-rpath,{BUILD / 'lib'}",
            "-o",
            exe,
        ],
        timeout=120,
    )
    proc = run([exe], timeout=60)
    assert proc.stdout.splitlines() == ["1.5", "2.5"]
    assert proc.stderr == ""
