"""Checks a built sdist against the source tree: ``python tools/check_sdist.py SDIST``.

The sdist must hold every file git tracks (less CI's own, NOT_SHIPPED) and nothing else but
what the sdist build itself adds (PKG-INFO, setup.cfg, the egg-info, the BUILD_IDENTITY stamp,
which must name the checkout's commit: tools/build_identity.py). A source file MANIFEST.in
misses, or build output it lets in, fails here. Exits 1 naming each problem.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path, PurePosixPath

import build_identity
from check_wheel import report

ROOT = Path(__file__).resolve().parents[1]
#: Tracked files an sdist leaves out: CI's entry point and git's own configuration.
NOT_SHIPPED = {".ci/run", ".gitignore"}
#: Files the sdist build writes that git does not track.
GENERATED = {"PKG-INFO", "setup.cfg", build_identity.STAMP}
GENERATED_DIRS = ("python/ovstage_go.egg-info/",)


def tracked(root: Path) -> set[str]:
    """The files git tracks under ``root`` (deleted ones excluded)."""
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    names = {name for name in out.decode().split("\0") if name}
    return {name for name in names if (root / name).exists()}


def members(sdist: Path) -> tuple[set[str], dict[str, bytes]]:
    """The sdist's file names without their top directory, and the generated files' contents."""
    names: set[str] = set()
    contents: dict[str, bytes] = {}
    with tarfile.open(sdist) as tar:
        for info in tar.getmembers():
            if not info.isfile():
                continue
            parts = PurePosixPath(info.name).parts
            name = PurePosixPath(*parts[1:]).as_posix()
            names.add(name)
            if name in GENERATED:
                extracted = tar.extractfile(info)
                assert extracted is not None
                contents[name] = extracted.read()
    return names, contents


def problems(sdist: Path) -> list[str]:
    """What is missing from the sdist, in it without a source, or stamped wrong."""
    names, contents = members(sdist)
    want = tracked(ROOT) - NOT_SHIPPED
    found = [f"missing: {name}" for name in sorted(want - names)]
    for name in sorted(names - want):
        if name not in GENERATED and not name.startswith(GENERATED_DIRS):
            found.append(f"not a tracked source file: {name}")
    stamp = contents.get(build_identity.STAMP)
    if stamp is None:
        found.append(f"missing: {build_identity.STAMP} (setup.py's sdist command writes it)")
    else:
        data = json.loads(stamp)
        got = (data.get("git_branch"), data.get("git_hash"))
        if got != build_identity.identity(ROOT):
            found.append(f"{build_identity.STAMP} says {got}, the checkout is "
                         f"{build_identity.identity(ROOT)}")
    return found


def main(argv: list[str]) -> int:
    """Check the sdist named by argv[1]; print each problem."""
    return report(
        argv,
        "python tools/check_sdist.py SDIST",
        problems,
        "holds every tracked source file, stamped with its commit",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
