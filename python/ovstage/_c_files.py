"""Where an installed wheel keeps the C library: ``get_include`` and ``get_library_dir``.

A wheel (``make wheel``) carries libovstage.so, its headers, ``ovstage.pc`` and the CMake
package inside the package directory, as a prefix of its own::

    ovstage/include/ovstage/ovstage.h ...
    ovstage/lib/libovstage.so
    ovstage/lib/pkgconfig/ovstage.pc        (prefix found from its own place)
    ovstage/lib/cmake/ovstage/ovstageConfig.cmake

so a build system can ask Python for the paths (as with numpy and pybind11)::

    PKG_CONFIG_PATH=<get_library_dir()>/pkgconfig cc ... $(pkg-config --cflags --libs ovstage)
    cmake -DCMAKE_PREFIX_PATH=<get_prefix()> ...      (then find_package(ovstage))

A source install (``pip install -e .``, an sdist) builds only the Python extension; there the
C library comes from ``make libovstage`` / ``make install-c`` and these functions say so.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["c_files_installed", "get_include", "get_library_dir", "get_prefix"]

_PACKAGE_DIR = Path(__file__).resolve().parent
_NOT_INSTALLED = (
    "{missing} is not in this install of ovstage-go, a source build: the C library and its "
    "headers come with the wheel (`make wheel`) or from `make libovstage`"
)


def get_prefix() -> str:
    """The prefix holding ``include/`` and ``lib/`` of the installed C library (the package
    directory): the ``CMAKE_PREFIX_PATH`` entry for ``find_package(ovstage)``.

    Raises ``FileNotFoundError`` when this install carries no C library (a source build)."""
    _require(_PACKAGE_DIR / "lib" / "libovstage.so")
    return str(_PACKAGE_DIR)


def get_include() -> str:
    """The directory to put on the include path: it holds ``ovstage/ovstage.h``.

    Raises ``FileNotFoundError`` when this install carries no C headers (a source build)."""
    include = _PACKAGE_DIR / "include"
    _require(include / "ovstage" / "ovstage.h")
    return str(include)


def get_library_dir() -> str:
    """The directory holding ``libovstage.so`` (and ``pkgconfig/``, ``cmake/ovstage/``).

    Raises ``FileNotFoundError`` when this install carries no C library (a source build)."""
    lib = _PACKAGE_DIR / "lib"
    _require(lib / "libovstage.so")
    return str(lib)


def c_files_installed() -> bool:
    """Whether this install carries the C library and its headers (a wheel install)."""
    return (_PACKAGE_DIR / "lib" / "libovstage.so").is_file() and (
        _PACKAGE_DIR / "include" / "ovstage" / "ovstage.h"
    ).is_file()


def _require(path: Path) -> None:
    if not path.is_file():
        raise FileNotFoundError(_NOT_INSTALLED.format(missing=path))
