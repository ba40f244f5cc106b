"""Build hook: compiles the Go facade (pybind/) with gopy into ovstage._native.

Metadata lives in pyproject.toml. The recipe:
  1. `go build` gopy and goimports at the versions pinned in go.mod into a temp bin dir;
  2. `gopy build` the pybind package into a directory inside the Go module;
  3. check the extension was really produced (gopy can exit 0 without it);
  4. copy the extension and the generated .py files into ovstage/_native, with a type stub of
     the facade (pybind.pyi) written from the signatures gopy puts in its docstrings;
  5. for in-place / editable builds, copy the generated files to the source tree too.

The extension reports the build identity of its source (git branch and commit, or the stamp an
sdist carries: tools/build_identity.py). gopy passes its own -ldflags to `go build`, so the
Makefile's `-X` cannot reach it: a `go build -overlay` adds a generated file to package abi that
sets the identity, leaving the source tree untouched.

A wheel (`make wheel`, tools/build_wheel.sh) also carries the C library: with
OVSTAGE_C_FILES=<dir> (a prefix holding lib/libovstage.so, include/, lib/pkgconfig/ and
lib/cmake/, staged by `make wheel`), build_py copies that tree into the package as
ovstage/lib and ovstage/include, where ovstage.get_library_dir() / get_include() find it.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import build_identity  # noqa: E402  (tools/, shipped in the sdist)

GOPY_NAME = "native"  # must not start with "_": the go tool ignores such files
EXT_NAME = "ovstage._native._native"  # gopy names the extension "_" + GOPY_NAME
GENERATED_PY = ("__init__.py", "go.py", "pybind.py")
STUB = "pybind.pyi"  # written by _facade_stub from the generated pybind.py
# Inside the Go module so gopy's `go build` resolves our packages and pinned deps; the "_"
# keeps it out of `./...` patterns (go vet/test), /build/ keeps it out of git.
GOPY_OUT = os.path.join(ROOT, "build", "_gopy")
TOOLS = ("github.com/go-python/gopy", "golang.org/x/tools/cmd/goimports")
# Facade functions that never block (they enqueue, poll with a zero timeout, export a view or
# free what they are handed) and return within microseconds: they keep the GIL instead of
# gopy's release and reacquire around every call. The release costs more than such a call's
# work, and with several Python threads each release hands the GIL to another thread and waits
# to get it back (see pybind/API.md, "The GIL"). Anything that can wait (a timeout, a CUDA
# sync) or copy a whole column must not be here, and a read's enqueue (ReadAttributesTo) stays
# out on purpose: other threads get the GIL at least once per read.
GIL_HELD = (
    "WriteNumpy",
    "WaitReleaseOp",
    "FetchReadNextNow",
    "ReleaseReadNow",
    "ReleaseGroup",
    "ExportGroupView",
    "ManagedToCapsulePointer",
    "ManagedFree",
)
_GIL_SAVE = re.compile(r"^[ \t]*_saved_thread := C\.PyEval_SaveThread\(\)\n", re.MULTILINE)
_GIL_RESTORE = re.compile(
    r"^[ \t]*(defer )?C\.PyEval_RestoreThread\(_saved_thread\)\n", re.MULTILINE
)

# setuptools requires listed package directories to exist; ovstage/_native is generated.
os.makedirs(os.path.join(ROOT, "python", "ovstage", "_native"), exist_ok=True)


def _go_module_path():
    with open(os.path.join(ROOT, "go.mod"), encoding="utf-8") as f:
        m = re.search(r"^module\s+(\S+)", f.read(), re.MULTILINE)
    if not m:
        raise RuntimeError("go.mod has no module line")
    return m.group(1)


def _run(cmd, env, what, cwd=ROOT):
    print("ovstage build: " + " ".join(cmd), flush=True)
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"ovstage build: {what} failed (exit {proc.returncode}):\n{proc.stdout}"
        )
    return proc.stdout


# gopy's docstring signature of a facade function: "Name(long a, bool b) long, str" (the
# trailing str is the Go error, raised as RuntimeError, so Python receives only the first).
_GOPY_SIGNATURE = re.compile(
    r'^def (\w+)\(([^)]*)\):\n\t"""\w+\(([^)]*)\) (\w+), str$', re.MULTILINE
)
_GOPY_TYPES = {"long": "int", "int": "int", "bool": "bool", "str": "str", "float": "float"}


def _py_type(function, go_type):
    if go_type not in _GOPY_TYPES:
        raise RuntimeError(
            f"ovstage build: facade function {function} uses {go_type!r}, which the stub "
            f"writer does not map (it maps {sorted(_GOPY_TYPES)}): extend _GOPY_TYPES"
        )
    return _GOPY_TYPES[go_type]


def _facade_stub(source):
    """The .pyi of gopy's generated pybind.py: every facade function with its Python types."""
    lines = [
        '"""Types of the gopy facade (generated by setup.py from pybind.py; do not edit)."""',
        "",
        "from types import ModuleType",
        "",
        "_native: ModuleType",
        "",
    ]
    count = source.count("\ndef ")
    found = _GOPY_SIGNATURE.findall(source)
    if len(found) != count:
        raise RuntimeError(
            f"ovstage build: {count - len(found)} of {count} facade functions in pybind.py have "
            "no gopy signature of the form 'Name(type arg, ...) type, str'"
        )
    for name, params, typed_params, result in sorted(found):  # gopy's order varies
        args = []
        names = [p.strip() for p in params.split(",") if p.strip()]
        types = [p.split()[0] for p in typed_params.split(",") if p.strip()]
        if len(names) != len(types):
            raise RuntimeError(f"ovstage build: {name}: parameters {names} vs signature {types}")
        for arg, go_type in zip(names, types, strict=True):
            args.append(f"{arg}: {_py_type(name, go_type)}")
        lines.append(f"def {name}({', '.join(args)}) -> {_py_type(name, result)}: ...")
    return "\n".join(lines) + "\n"


def _keep_gil(source, names):
    """gopy's native.go with the GIL release and reacquire removed from the wrappers of
    ``names`` (GIL_HELD); raises if one of them is not found exactly once as gopy writes it."""
    for name in names:
        head = re.search(r"^func pybind_" + name + r"\(.*\{\n", source, re.MULTILINE)
        end = source.find("\n}\n", head.end()) if head else -1
        body = source[head.end() : end] if end >= 0 else ""
        if len(_GIL_SAVE.findall(body)) != 1 or len(_GIL_RESTORE.findall(body)) != 1:
            raise RuntimeError(
                f"ovstage build: gopy's wrapper of {name} (GIL_HELD) does not release and "
                "reacquire the GIL as expected: update _keep_gil for this gopy version"
            )
        body = _GIL_RESTORE.sub("", _GIL_SAVE.sub("", body))
        source = source[: head.end()] + body + source[end:]
    return source


def _relink(out, env, lib):
    """Rebuilds the extension after native.go changed, with gopy's final `go build` command
    and cgo flags (printed in its output ``out``) and its symbol map (a temp file gopy
    deleted: written again)."""
    flags = dict(re.findall(r"^(CGO_CFLAGS|CGO_LDFLAGS)=(.*)$", out, re.MULTILINE))
    builds = [line.split() for line in out.splitlines() if line.startswith("go build ")]
    if len(flags) != 2 or not builds or builds[-1][-3:] != ["-o", os.path.basename(lib), "."]:
        raise RuntimeError(f"ovstage build: cannot read gopy's final go build in:\n{out}")
    cmd = builds[-1]
    with tempfile.NamedTemporaryFile("w", suffix=".map", delete=False) as f:
        f.write("{ global: PyInit__" + GOPY_NAME + "; local: *; };\n")
    try:
        script = re.compile(r"(--version-script=)\S+")
        if not any(script.search(arg) for arg in cmd):
            raise RuntimeError(f"ovstage build: gopy's go build has no symbol map: {cmd}")
        cmd = [script.sub(lambda m: m.group(1) + f.name, arg) for arg in cmd]
        _run(cmd, {**env, **flags}, "go build (GIL_HELD wrappers)", cwd=GOPY_OUT)
    finally:
        os.unlink(f.name)


def _identity_overlay(tmpdir):
    """A `go build -overlay` file adding abi/build_identity_stamp.go (it sets abi's gitBranch
    and gitHash, docs/c-api.md) under tmpdir; returns the overlay's path."""
    branch, commit = build_identity.identity(Path(ROOT))
    print(f"ovstage build: build identity {branch} {commit}", flush=True)
    source = os.path.join(tmpdir, "build_identity_stamp.go")
    with open(source, "w", encoding="utf-8") as f:
        # json.dumps of an ASCII-escaped str is a valid Go string literal
        f.write(
            "// Generated by setup.py (the build identity of this build); not in the tree.\n\n"
            "package abi\n\n"
            f"func init() {{ gitBranch, gitHash = {json.dumps(branch)}, {json.dumps(commit)} }}\n"
        )
    overlay = os.path.join(tmpdir, "overlay.json")
    target = os.path.join(ROOT, "abi", "build_identity_stamp.go")
    with open(overlay, "w", encoding="utf-8") as f:
        json.dump({"Replace": {target: source}}, f)
    return overlay


class SdistWithIdentity(sdist):
    """An sdist carries its commit's identity (BUILD_IDENTITY) for builds without git."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        branch, commit = build_identity.write_stamp(Path(ROOT), Path(base_dir))
        print(f"ovstage sdist: build identity {branch} {commit}", flush=True)


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

        # the build identity, through an overlay file in package abi (module docstring)
        env["GOFLAGS"] = (env["GOFLAGS"] + " -overlay=" + _identity_overlay(tmpbin)).strip()

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

        # (3b) the GIL_HELD wrappers keep the GIL: patch gopy's Go and relink
        native_go = os.path.join(GOPY_OUT, GOPY_NAME + ".go")
        with open(native_go, encoding="utf-8") as f:
            source = f.read()
        with open(native_go, "w", encoding="utf-8") as f:
            f.write(_keep_gil(source, GIL_HELD))
        _relink(out, env, libs[0])

        # (4) extension + generated Python into ovstage/_native (in build_lib)
        dest = self.get_ext_fullpath(ext.name)
        dest_dir = os.path.dirname(dest)
        os.makedirs(dest_dir, exist_ok=True)
        shutil.copyfile(libs[0], dest)
        for name in GENERATED_PY:
            shutil.copyfile(os.path.join(GOPY_OUT, name), os.path.join(dest_dir, name))
        with open(os.path.join(GOPY_OUT, "pybind.py"), encoding="utf-8") as f:
            stub = _facade_stub(f.read())
        with open(os.path.join(dest_dir, STUB), "w", encoding="utf-8") as f:
            f.write(stub)

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
            for name in (*GENERATED_PY, STUB):
                shutil.copyfile(os.path.join(built_dir, name), os.path.join(src_dir, name))


class BuildPyWithCFiles(build_py):
    """Copies the C library's files (OVSTAGE_C_FILES, see the module docstring) into the
    package when a wheel is built with them."""

    C_DIRS = ("lib", "include")

    def run(self):
        super().run()
        c_files = os.environ.get("OVSTAGE_C_FILES")
        if not c_files:
            return
        if not os.path.isfile(os.path.join(c_files, "lib", "libovstage.so")):
            raise RuntimeError(f"ovstage build: OVSTAGE_C_FILES={c_files} has no lib/libovstage.so")
        package_dir = os.path.join(self.build_lib, "ovstage")
        for name in self.C_DIRS:
            dest = os.path.join(package_dir, name)
            shutil.rmtree(dest, ignore_errors=True)  # never a stale file of an earlier build
            shutil.copytree(os.path.join(c_files, name), dest, symlinks=False)


setup(
    ext_modules=[Extension(EXT_NAME, sources=[])],
    cmdclass={
        "build_ext": GopyBuildExt,
        "build_py": BuildPyWithCFiles,
        "sdist": SdistWithIdentity,
    },
)
