"""The package is typed for its users: ``mypy --strict`` passes on every Python example and on
the package itself.

mypy reads ovstage through its ``py.typed`` marker and the stub of the gopy facade, from
wherever the imported package is installed (the source tree, or a wheel in CI's wheel run).
Each example directory is checked on its own (each has a ``main.py``), with one shared cache;
pyproject.toml's [tool.mypy] names the modules without type information that are let through.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_DIRS = sorted(p for p in (REPO / "examples" / "python").iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for every run (mypy comes with the test extra)."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy_strict(targets: list[str], cwd: Path, cache: Path) -> None:
    """Run ``mypy --strict`` on targets; it must report nothing."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(cache),
            *targets,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "MYPYPATH": ""},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("example", EXAMPLE_DIRS, ids=[p.name for p in EXAMPLE_DIRS])
def test_mypy_strict_passes_on_the_example(example: Path, mypy_cache: Path) -> None:
    sources = sorted(str(p) for p in example.glob("*.py"))
    assert sources, f"{example} has no Python files"
    mypy_strict(sources, example, mypy_cache)


def test_mypy_strict_passes_on_the_installed_package(mypy_cache: Path, tmp_path: Path) -> None:
    """Every public function and class is typed, what comes from the extension included."""
    mypy_strict(["-p", "ovstage"], tmp_path, mypy_cache)
