"""Which build answers: the package version and what it runs on (one home for all reports)."""

from __future__ import annotations

import platform
from functools import cache
from importlib import metadata

__all__ = ["version", "build_info"]


@cache
def version() -> str:
    """The installed ``shuangkou`` distribution's version ("0+unknown" when not installed)."""
    try:
        return metadata.version("shuangkou")
    except metadata.PackageNotFoundError:
        return "0+unknown"


@cache
def build_info() -> dict[str, str]:
    """Version, Python, grpcio and how the compiled core was built (labels of
    ``shuangkou_build_info``, the start-up log line and the server-info RPC)."""
    import grpc

    import shuangkou.core._core as core

    return {"version": version(), "python": platform.python_version(),
            "grpcio": grpc.__version__,
            "core": "cython-" + ("debug" if getattr(core, "DEBUG_BUILD", False) else "release")}
