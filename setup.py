"""Build the Cython rules core and generate the gRPC stubs from protos/.

Everything static lives in pyproject.toml; this file only adds the build steps that need
code: cythonize core_ext/*.pyx as ``shuangkou.core.*`` (and service/api/*.pyx, the
service's reply writers) and run protoc over protos/ (stubs
are generated at build time beside the .proto files, never committed, never edited by hand).

The folders keep the names of the design card (core_ext/, service/) while everything is
installed under the one import name ``shuangkou`` (pyproject ``package-dir``;
docs/decisions/engineering.md E1). Two tools read modules by folder rather than through the
install, so the build also links build/tree/shuangkou/{core,service,client,v1} to the folders:
Cython finds ``shuangkou.core._core``'s .pxd there (cimports use the installed name, which
is also the name the compiled modules import each other by at run time) and mypy reads
the sources there (pyproject ``mypy_path``).
"""

import os
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent
DEBUG = os.environ.get("SHUANGKOU_DEBUG_BUILD") == "1"
STUBS = ROOT / "protos" / "shuangkou" / "v1"
#: installed subpackage -> the folder that holds it (as pyproject's package-dir)
FOLDERS = {"core": "core_ext", "service": "service", "client": "client",
           "v1": "protos/shuangkou/v1"}


def generate_protos() -> None:
    """protoc protos/**/*.proto -> *_pb2.py, *_pb2.pyi, *_pb2_grpc.py and *_connect.py (the
    Connect, gRPC-Web and HTTP/JSON application of each service: protoc-gen-connectrpc for
    google.protobuf messages) beside each .proto.

    The proto package is ``shuangkou.v1`` and the stubs are installed as ``shuangkou.v1``,
    so protoc's own imports (``from shuangkou.v1 import cards_pb2``) need no rewriting."""
    import grpc_tools
    from grpc_tools import protoc  # build requirement

    protos = sorted(str(p.relative_to(ROOT / "protos")) for p in (ROOT / "protos").rglob("*.proto"))
    if not protos:
        return
    include = str(Path(grpc_tools.__file__).parent / "_proto")
    out = ROOT / "protos"
    args = ["protoc", f"-I{out}", f"-I{include}", f"-I{googleapis_protos()}",
            f"--python_out={out}", f"--pyi_out={out}", f"--grpc_python_out={out}",
            f"--plugin=protoc-gen-connectrpc={connect_plugin()}",
            f"--connectrpc_out=protobuf=google:{out}", *protos]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed on " + " ".join(protos))
    (STUBS / "__init__.py").write_text('"""Generated from protos/shuangkou/v1 (setup.py)."""\n')
    (STUBS / "py.typed").touch()


def connect_plugin() -> str:
    """The protoc-gen-connectrpc executable (a build requirement: on PATH in pip's build
    environment, else beside this interpreter)."""
    import shutil
    import sys

    found = shutil.which("protoc-gen-connectrpc") or shutil.which(
        "protoc-gen-connectrpc", path=str(Path(sys.executable).parent))
    if not found:
        raise RuntimeError("protoc-gen-connectrpc not found: install the build requirements "
                           "(pyproject [build-system])")
    return found


def googleapis_protos() -> Path:
    """Where google/rpc/*.proto are found for imports only (never generated here: the stubs
    import googleapis-common-protos' own modules at run time). The package ships the .proto
    files; without it in the build environment, the vendored copy buf uses."""
    try:
        from google.rpc import status_pb2
    except ImportError:
        return ROOT / "third_party" / "googleapis"
    root = Path(status_pb2.__file__).parents[2]
    return root if (root / "google" / "rpc" / "status.proto").is_file() else (
        ROOT / "third_party" / "googleapis")


def link_tree() -> Path:
    """build/tree/shuangkou/<name> -> the folder of each installed subpackage."""
    tree = ROOT / "build" / "tree" / "shuangkou"
    tree.mkdir(parents=True, exist_ok=True)
    for name, folder in FOLDERS.items():
        link = tree / name
        target = Path(os.path.relpath(ROOT / folder, tree))
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)
    return tree.parent


class BuildPyWithProtos(build_py):
    def run(self) -> None:
        generate_protos()
        super().run()


compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]
#: compiled modules: the core's, and the service's reply writers (service/api/_*_replies.pyx)
COMPILED = {"core_ext": "shuangkou.core", "service/api": "shuangkou.service.api"}
extensions = [
    Extension(f"{package}.{p.stem}", [str(p.relative_to(ROOT))], extra_compile_args=compile_args)
    for folder, package in COMPILED.items() for p in sorted((ROOT / folder).glob("*.pyx"))
]

if __name__ == "__main__":
    generate_protos()  # also for `setup.py build_ext --inplace` and editable installs
    setup(
        ext_modules=cythonize(
            extensions,
            include_path=[str(link_tree())],
            language_level=3,
            compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True,
                                 "initializedcheck": False},
            annotate=DEBUG,
        ),
        cmdclass={"build_py": BuildPyWithProtos},
    )
