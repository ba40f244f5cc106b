"""Build hook: compiles the Go facade (pybind/) with gopy into ovstage._native.

Metadata lives in pyproject.toml. The recipe:
  1. `go build` gopy and goimports at the versions pinned in go.mod into a temp bin dir;
  2. `gopy build` the pybind package into a directory inside the Go module;
  3. check the extension was really produced (gopy can exit 0 without it);
  4. copy the extension and the generated .py files into ovstage/_native;
  5. for in-place / editable builds, copy the generated .py files to the source tree too.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
GOPY_NAME = "native"  # must not start with "_": the go tool ignores such files
EXT_NAME = "ovstage._native._native"  # gopy names the extension "_" + GOPY_NAME
GENERATED_PY = ("__init__.py", "go.py", "pybind.py")
# Inside the Go module so gopy's `go build` resolves our packages and pinned deps; the "_"
# keeps it out of `./...` patterns (go vet/test), /build/ keeps it out of git.
GOPY_OUT = os.path.join(ROOT, "build", "_gopy")
TOOLS = ("github.com/go-python/gopy", "golang.org/x/tools/cmd/goimports")

# setuptools requires listed package directories to exist; ovstage/_native is generated.
os.makedirs(os.path.join(ROOT, "python", "ovstage", "_native"), exist_ok=True)


def _go_module_path():
    with open(os.path.join(ROOT, "go.mod"), encoding="utf-8") as f:
        m = re.search(r"^module\s+(\S+)", f.read(), re.MULTILINE)
    if not m:
        raise RuntimeError("go.mod has no module line")
    return m.group(1)


def _run(cmd, env, what):
    print("ovstage build: " + " ".join(cmd), flush=True)
    proc = subprocess.run(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"ovstage build: {what} failed (exit {proc.returncode}):\n{proc.stdout}"
        )
    return proc.stdout


class GopyBuildExt(build_ext):
    """Builds the single gopy extension and installs its generated Python files."""

    def build_extension(self, ext):
        if ext.name != EXT_NAME:
            return super().build_extension(ext)
        if shutil.which("go") is None:
            raise RuntimeError(
                "ovstage build: the Go toolchain (`go`, version per go.mod) is required "
                "on PATH to build ovstage-go from source"
            )
        tmpbin = tempfile.mkdtemp(prefix="ovstage-gotools-")
        try:
            self._build_with_gopy(ext, tmpbin)
        finally:
            shutil.rmtree(tmpbin, ignore_errors=True)

    def _build_with_gopy(self, ext, tmpbin):
        env = dict(os.environ)
        env["PATH"] = tmpbin + os.pathsep + env.get("PATH", "")
        env["CGO_ENABLED"] = "1"
        env["CGO_LDFLAGS_ALLOW"] = "-fwrapv"
        goflags = env.get("GOFLAGS", "")
        if "-buildvcs" not in goflags:  # no VCS stamping (sdist trees, foreign-owned clones)
            env["GOFLAGS"] = (goflags + " -buildvcs=false").strip()

        # (1) tools at the versions pinned in go.mod (required via tools/tools.go)
        for tool in TOOLS:
            exe = os.path.join(tmpbin, tool.rsplit("/", 1)[-1])
            _run(["go", "build", "-o", exe, tool], env, f"go build {tool}")

        # (2) gopy build into a fresh directory inside the module
        shutil.rmtree(GOPY_OUT, ignore_errors=True)
        os.makedirs(os.path.dirname(GOPY_OUT), exist_ok=True)
        pkg = _go_module_path() + "/pybind"
        cmd = [
            os.path.join(tmpbin, "gopy"), "build",
            "-output=" + GOPY_OUT,
            "-vm=" + sys.executable,
            "-dynamic-link=true",
            "-no-make",
            "-name=" + GOPY_NAME,
            pkg,
        ]
        out = _run(cmd, env, "gopy build")

        # (3) gopy can exit 0 without producing the extension
        libs = sorted(glob.glob(os.path.join(GOPY_OUT, "_" + GOPY_NAME + "*.so")))
        missing = [p for p in GENERATED_PY if not os.path.isfile(os.path.join(GOPY_OUT, p))]
        if len(libs) != 1 or missing:
            raise RuntimeError(
                "ovstage build: gopy did not produce the expected files in "
                f"{GOPY_OUT} (extensions: {libs}, missing: {missing}); gopy output:\n{out}"
            )

        # (4) extension + generated Python into ovstage/_native (in build_lib)
        dest = self.get_ext_fullpath(ext.name)
        dest_dir = os.path.dirname(dest)
        os.makedirs(dest_dir, exist_ok=True)
        shutil.copyfile(libs[0], dest)
        for name in GENERATED_PY:
            shutil.copyfile(os.path.join(GOPY_OUT, name), os.path.join(dest_dir, name))

    def copy_extensions_to_source(self):
        # (5) editable / --inplace: the generated .py files must sit next to the .so
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            if ext.name != EXT_NAME:
                continue
            built_dir = os.path.dirname(
                os.path.join(self.build_lib, self.get_ext_filename(ext.name))
            )
            package = ".".join(ext.name.split(".")[:-1])
            src_dir = os.path.join(ROOT, build_py.get_package_dir(package))
            os.makedirs(src_dir, exist_ok=True)
            for name in GENERATED_PY:
                shutil.copyfile(os.path.join(built_dir, name), os.path.join(src_dir, name))


setup(
    ext_modules=[Extension(EXT_NAME, sources=[])],
    cmdclass={"build_ext": GopyBuildExt},
)
