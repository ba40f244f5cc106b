"""What an install of ovstage-go holds beside the Python code, where build systems find it.

A wheel (``make wheel``) carries the C library, its headers, ``ovstage.pc`` and the CMake package
inside the package directory, and ``ovstage.get_include()`` / ``get_library_dir()`` /
``get_prefix()`` name them; a source build (``pip install -e .``) has none of them and the
functions say so. Every install is typed: ``py.typed`` and the stub of the gopy facade. CI runs
this module against the source tree and against the installed wheel.
"""

from __future__ import annotations

import re
from pathlib import Path

import ovstage
import pytest
from c_build import INSTALLED, REPO
from ovstage import _c_files
from ovstage._native import pybind

PACKAGE = Path(ovstage.__file__).resolve().parent

needs_wheel = pytest.mark.skipif(
    not INSTALLED, reason="a source build carries no C files (the wheel run of CI checks them)"
)


def test_the_package_is_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()


def test_the_facade_stub_declares_every_facade_function() -> None:
    """pybind.pyi (written by setup.py from gopy's signatures) types each function gopy made."""
    stub = (Path(pybind.__file__).parent / "pybind.pyi").read_text(encoding="utf-8")
    declared = set(re.findall(r"^def (\w+)\(.*\) -> (?:int|bool|str|float): \.\.\.$", stub, re.M))
    generated = {
        name
        for name, value in vars(pybind).items()
        if not name.startswith("_")
        and callable(value)
        and getattr(value, "__module__", "") == pybind.__name__
    }
    assert generated, "pybind.py defines no functions"
    assert declared == generated


@needs_wheel
def test_get_include_holds_every_header() -> None:
    include = Path(ovstage.get_include())
    assert include == PACKAGE / "include"
    assert (include / "ovstage" / "ovstage.h").is_file()
    source = REPO / "include"
    if source.is_dir():  # the tests run from a checkout: the wheel has all of its headers
        want = sorted(p.relative_to(source) for p in source.rglob("*.h"))
        assert sorted(p.relative_to(include) for p in include.rglob("*.h")) == want


@needs_wheel
def test_get_library_dir_holds_the_library_and_its_package_files() -> None:
    lib = Path(ovstage.get_library_dir())
    assert lib == PACKAGE / "lib"
    assert (lib / "libovstage.so").read_bytes()[:4] == b"\x7fELF"
    assert (lib / "cmake" / "ovstage" / "ovstageConfig.cmake").is_file()
    assert (lib / "cmake" / "ovstage" / "ovstageConfigVersion.cmake").is_file()
    assert Path(ovstage.get_prefix()) == PACKAGE


@needs_wheel
def test_the_wheel_pkg_config_file_is_relocatable() -> None:
    """Its prefix is found from its own place, not the build machine's path."""
    text = (Path(ovstage.get_library_dir()) / "pkgconfig" / "ovstage.pc").read_text()
    assert "prefix=${pcfiledir}/../..\n" in text.splitlines(keepends=True)
    assert f"Version: {ovstage.__version__}\n" in text.splitlines(keepends=True)


@pytest.mark.skipif(INSTALLED, reason="this install is a wheel: it carries the C files")
@pytest.mark.parametrize("find", [ovstage.get_include, ovstage.get_library_dir, ovstage.get_prefix])
def test_a_source_build_says_it_has_no_c_files(find: object) -> None:
    assert not _c_files.c_files_installed()
    assert callable(find)
    with pytest.raises(FileNotFoundError, match=r"is not in this install of ovstage-go") as info:
        find()
    assert str(PACKAGE) in str(info.value)


def test_pyproject_lists_every_package_of_the_source_tree() -> None:
    """pyproject.toml names the packages a wheel holds (no discovery): every directory of
    python/ovstage with an ``__init__.py`` must be one of them, or the wheel lacks it."""
    text = (REPO / "pyproject.toml").read_text()
    line = re.search(r"^packages = \[(.*)\]$", text, re.MULTILINE)
    assert line is not None, "pyproject.toml has no one-line packages list"
    listed = set(re.findall(r'"([\w.]+)"', line.group(1)))
    source = REPO / "python"
    found = {
        ".".join(p.parent.relative_to(source).parts)
        for p in (source / "ovstage").rglob("__init__.py")
    }
    assert found - listed == set()


def test_the_sdist_manifest_grafts_every_go_source_directory() -> None:
    """MANIFEST.in names the sdist's folders one by one: a top-level folder holding Go sources
    that is not grafted leaves the sdist unable to build the extension (CI's sdist step finds it
    too, but only at its end)."""
    manifest = REPO / "MANIFEST.in"
    if not manifest.is_file():
        pytest.skip("a copy of the tests without the source tree (the wheel run of CI)")
    grafted = set(re.findall(r"^graft (\S+)$", manifest.read_text(), re.MULTILINE))
    go_dirs = {
        top.name
        for top in REPO.iterdir()
        if top.is_dir()
        and not top.name.startswith(".")
        and top.name not in {"build", "dist"}
        and next(top.rglob("*.go"), None) is not None
    }
    assert go_dirs, "no Go sources found under the repository root"
    assert go_dirs - grafted == set()
