"""The build identity (git branch and commit) stamped into the extension and the C library.

``python tools/build_identity.py [ROOT]`` prints ``<branch> <hash>`` for the source tree at
ROOT (default: this checkout); setup.py imports :func:`identity` and the Makefile runs it, so
both binaries of one build say the same thing (what ``ovstage.get_build_info()`` and
``ovstage_get_build_info`` report, docs/c-api.md).

Where it comes from, first match wins:
  1. git, when ROOT's go.mod is tracked by the work tree ROOT is in (a checkout, or a larger
     repository holding it; never an unrelated repository an unpacked sdist happens to sit in);
  2. the stamp file an sdist carries (``BUILD_IDENTITY``, written by setup.py's sdist command
     from 1.), so a wheel or install built from the sdist keeps the identity of its commit;
  3. the reference's defaults ``local unknown``: the build could not know its commit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

STAMP = "BUILD_IDENTITY"
#: What a build reports that does not know its commit: the defaults of the 0.3.0 binaries.
UNKNOWN = ("local", "unknown")
HASH_LENGTH = 12


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = proc.stdout.strip()
    return out if proc.returncode == 0 and out else None


def from_git(root: Path) -> tuple[str, str] | None:
    """``(branch, hash)`` of the commit checked out at ``root``, or None when git does not
    track this source tree (no git, no repository, or a repository that is not ours)."""
    if _git(root, "ls-files", "--error-unmatch", "go.mod") is None:
        return None
    commit = _git(root, "rev-parse", f"--short={HASH_LENGTH}", "HEAD")
    branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD")
    if commit is None or branch is None:
        return None
    return branch, commit


def from_stamp(root: Path) -> tuple[str, str] | None:
    """``(branch, hash)`` from the stamp file of an sdist, or None when there is none.

    A stamp that is not what :func:`write_stamp` writes is an error, not an unknown build."""
    path = root / STAMP
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        branch, commit = data["git_branch"], data["git_hash"]
    except (ValueError, KeyError, TypeError) as exc:
        raise RuntimeError(f"{path}: not a build identity stamp ({exc})") from exc
    if not (isinstance(branch, str) and branch and isinstance(commit, str) and commit):
        raise RuntimeError(f"{path}: git_branch and git_hash must be non-empty strings")
    return branch, commit


def identity(root: Path) -> tuple[str, str]:
    """``(branch, hash)`` of the source tree at ``root`` (see the module docstring)."""
    return from_git(root) or from_stamp(root) or UNKNOWN


def write_stamp(root: Path, dest: Path) -> tuple[str, str]:
    """Write the identity of ``root`` into ``dest/BUILD_IDENTITY``; return it."""
    branch, commit = identity(root)
    text = json.dumps({"git_branch": branch, "git_hash": commit}, indent=1) + "\n"
    (dest / STAMP).write_text(text, encoding="utf-8")
    return branch, commit


def check_installed(root: Path) -> int:
    """Exit status 1, saying both, unless the installed ovstage (the one this interpreter
    imports) reports the identity of the source tree at ``root``: a wheel or sdist test built
    it from there (tools/test_wheel.sh, tools/test_sdist.sh)."""
    import ovstage  # the install under test, not this checkout's python/

    info = ovstage.get_build_info()
    got, want = (info.git_branch, info.git_hash), identity(root)
    if got != want:
        print(f"the installed ovstage reports the build identity {got}, its source tree "
              f"{root} is {want}", file=sys.stderr)
        return 1
    print(f"build identity {' '.join(got)}: the source tree's")
    return 0


def main(argv: list[str]) -> int:
    """Print ``<branch> <hash>`` of argv[1] (default: the checkout this file is in); with
    ``--check-installed ROOT``, compare the installed ovstage's with ROOT's."""
    if len(argv) == 3 and argv[1] == "--check-installed":
        return check_installed(Path(argv[2]))
    if len(argv) > 2:
        print("usage: python tools/build_identity.py [ROOT | --check-installed ROOT]",
              file=sys.stderr)
        return 2
    root = Path(argv[1]) if len(argv) == 2 else Path(__file__).resolve().parents[1]
    print(*identity(root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
