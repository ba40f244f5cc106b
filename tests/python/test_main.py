"""``python -m ovstage``: the report a bug report asks for, one ``field: value`` line each."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import ovstage
import pytest
from ovstage.population import _usd

FIELDS = [
    "ovstage-go",
    "API version",
    "build",
    "git",
    "Python",
    "Python executable",
    "platform",
    "numpy",
    "CUDA",
    "USD population",
    "package",
    "extension",
    "C library",
    "C headers",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The fields ``python -m ovstage`` printed (run from an empty directory)."""
    proc = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-m", "ovstage"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path_factory.mktemp("report"),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    fields = [line.split(":", 1) for line in proc.stdout.splitlines()]
    assert [field for field, _ in fields] == FIELDS
    return {field: value.strip() for field, value in fields}


def test_versions(report: dict[str, str]) -> None:
    info = ovstage.get_build_info()
    assert report["ovstage-go"] == ovstage.__version__
    assert report["API version"] == ".".join(map(str, ovstage.library_version()))
    assert report["build"] == info.build_string
    assert report["git"].startswith(f"{info.git_branch} {info.git_hash}")
    assert report["Python"] == f"{platform.python_implementation()} {platform.python_version()}"
    assert report["Python executable"] == sys.executable
    assert report["numpy"] == np.__version__


def test_an_unknown_commit_says_why(report: dict[str, str]) -> None:
    info = ovstage.get_build_info()
    why = " (built outside git: neither a checkout nor an sdist stamped with its commit)"
    if info.git_hash == "unknown":
        assert report["git"] == f"{info.git_branch} unknown{why}"
    else:
        assert report["git"] == f"{info.git_branch} {info.git_hash}"


def test_cuda_status_and_reason(report: dict[str, str]) -> None:
    status = ovstage.cuda_status()
    if status.available:
        assert report["CUDA"].startswith(f"available: {status.device_count} device(s)")
    else:
        assert report["CUDA"] == f"unavailable: {status.reason}"
        assert status.reason


def test_usd_population(report: dict[str, str]) -> None:
    want = "available" if _usd.AVAILABLE else f"unavailable: {_usd.REASON}"
    assert report["USD population"] == want


def test_where_things_are(report: dict[str, str]) -> None:
    assert Path(report["package"]) == Path(ovstage.__file__).parent
    assert Path(report["extension"]).is_file()
    assert Path(report["extension"]).parent == Path(ovstage.__file__).parent / "_native"
    for field, find in (("C library", ovstage.get_library_dir), ("C headers", ovstage.get_include)):
        try:
            assert report[field] == find()
        except FileNotFoundError as exc:
            assert report[field] == f"none ({exc})"
