"""Build the Cython rules core and generate the gRPC stubs from protos/.

Everything static lives in pyproject.toml; this file only adds the two build steps
that need code: cythonize core_ext/*.pyx and run protoc over protos/ (stubs are
generated at build time, never committed, never edited by hand).
"""

import os
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent
DEBUG = os.environ.get("SHUANGKOU_DEBUG_BUILD") == "1"


def generate_protos() -> None:
    """protoc protos/**/*.proto -> service/gen (messages, services, type stubs)."""
    import grpc_tools
    from grpc_tools import protoc  # build requirement

    protos = sorted(str(p.relative_to(ROOT / "protos")) for p in (ROOT / "protos").rglob("*.proto"))
    if not protos:
        return
    out = ROOT / "service" / "gen"
    out.mkdir(parents=True, exist_ok=True)
    include = str(Path(grpc_tools.__file__).parent / "_proto")
    args = ["protoc", f"-I{ROOT / 'protos'}", f"-I{include}", f"-I{googleapis_protos()}",
            f"--python_out={out}", f"--pyi_out={out}", f"--grpc_python_out={out}", *protos]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed on " + " ".join(protos))
    # Generated modules (and their .pyi stubs, which mypy reads) import each other as
    # top-level `shuangkou.v1...`; make them packages under service.gen and rewrite those
    # imports to be package-relative.
    for d in [out, *[p for p in out.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()
    for f in [*out.rglob("*_pb2*.py"), *out.rglob("*_pb2.pyi")]:
        text = f.read_text()
        text = text.replace("from shuangkou.v1 import", "from service.gen.shuangkou.v1 import")
        f.write_text(text)


def googleapis_protos() -> Path:
    """Where google/rpc/*.proto are found for imports only (never generated into service/gen:
    the stubs import googleapis-common-protos' own modules at run time). The package ships
    the .proto files; without it in the build environment, the vendored copy buf uses."""
    try:
        from google.rpc import status_pb2
    except ImportError:
        return ROOT / "third_party" / "googleapis"
    root = Path(status_pb2.__file__).parents[2]
    return root if (root / "google" / "rpc" / "status.proto").is_file() else (
        ROOT / "third_party" / "googleapis")


class BuildPyWithProtos(build_py):
    def run(self) -> None:
        generate_protos()
        super().run()


compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]
extensions = [
    Extension(f"core_ext.{p.stem}", [str(p.relative_to(ROOT))], extra_compile_args=compile_args)
    for p in sorted((ROOT / "core_ext").glob("*.pyx"))
]

if __name__ == "__main__":
    generate_protos()  # also for `setup.py build_ext --inplace` and editable installs
    setup(
        ext_modules=cythonize(
            extensions,
            language_level=3,
            compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True,
                                 "initializedcheck": False},
            annotate=DEBUG,
        ),
        cmdclass={"build_py": BuildPyWithProtos},
    )
