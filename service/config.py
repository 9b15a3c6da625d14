"""Server settings: embedded defaults < ``--config`` TOML file < ``SHUANGKOU_*`` env < flags.

:class:`Config` is a frozen record; :func:`load_config` merges the layers and validates every
value, naming the setting and its source in the error.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shuangkou.core import StateKeys

__all__ = ["Config", "ConfigError", "load_config", "load_state_keys", "add_arguments",
           "ENV_PREFIX"]

ENV_PREFIX = "SHUANGKOU_"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")     # service/logs.py's formatters


class ConfigError(ValueError):
    """A setting has a bad value or a config file cannot be read."""


@dataclass(frozen=True)
class Config:
    host: str = "127.0.0.1"
    port: int = 50051
    metrics_port: int = 9090
    http: bool = True
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    http_cors_origins: tuple[str, ...] = ()
    http_max_request_bytes: int = 64 * 1024 * 1024
    http_max_head_bytes: int = 64 * 1024
    http_max_headers: int = 100
    http_header_timeout: float = 5.0
    http_body_timeout: float = 30.0
    http_keepalive_timeout: float = 5.0
    http_max_connections: int = 1000
    default_deadline: float = 30.0
    workers: int = 1
    threads: int = 32
    max_streams: int = 16
    max_queued_calls: int = 1024
    max_pending_requests: int = 10_000
    reuse_port: bool = False
    grace: float = 10.0
    metrics_host: str = "127.0.0.1"
    reflection: bool = True
    tls_cert: str = ""
    tls_key: str = ""
    tls_client_ca: str = ""
    keepalive_time: float = 60.0
    keepalive_timeout: float = 20.0
    max_connection_idle: float = 300.0
    max_connection_age: float = 0.0
    worker_check_interval: float = 2.0
    variants: tuple[str, ...] = ()
    state_keys: str = ""
    state_key_id: str = ""
    max_message_bytes: int = 4 * 1024 * 1024
    max_cards: int = 64
    max_batch: int = 100_000
    enumeration_cap: int = 10_000
    lane_threads: int = 0
    lane_max_calls: int = 8
    lane_backlog: float = 30.0
    search_max_rollouts: int = 1_000_000
    search_max_seconds: float = 10.0
    review_max_rollouts: int = 1_000_000
    review_max_seconds: float = 30.0
    log_level: str = "INFO"
    log_format: str = "text"
    access_log: int = 0
    tracing: bool = False

    def __post_init__(self) -> None:
        ranges: dict[str, tuple[float, float]] = {
            "port": (0, 65535), "metrics_port": (0, 65535), "http_port": (0, 65535),
            "http_max_request_bytes": (1024, 2**40), "workers": (1, 256),
            "http_max_head_bytes": (1024, 2**24), "http_max_headers": (8, 10_000),
            "http_header_timeout": (0.1, 3600), "http_body_timeout": (0.1, 3600),
            "http_keepalive_timeout": (0.1, 3600), "http_max_connections": (1, 10**6),
            "default_deadline": (0, 86400),
            "threads": (1, 1024), "max_streams": (0, 1023), "grace": (0, 3600),
            "max_queued_calls": (1, 10**6), "max_pending_requests": (100, 10**6),
            "keepalive_time": (1, 86400), "keepalive_timeout": (1, 3600),
            "max_connection_idle": (0, 86400), "max_connection_age": (0, 86400 * 30),
            "worker_check_interval": (0.1, 600), "max_message_bytes": (1024, 2**31 - 1),
            "max_cards": (1, 4096), "max_batch": (1, 10**7), "enumeration_cap": (1, 10**7),
            "access_log": (0, 10**6),
            "lane_threads": (0, 1024), "lane_max_calls": (1, 1024),
            "lane_backlog": (0.1, 86400), "search_max_rollouts": (1, 1_000_000),
            "search_max_seconds": (0.001, 10), "review_max_rollouts": (1, 10**12),
            "review_max_seconds": (0.1, 86400),
        }
        for name, (lo, hi) in ranges.items():
            value = getattr(self, name)
            if not lo <= value <= hi:
                raise ConfigError(f"setting {name!r} must be in {lo:g}..{hi:g}; got {value!r}")
        if self.log_level not in LOG_LEVELS:
            raise ConfigError(f"setting 'log_level' must be one of {', '.join(LOG_LEVELS)}; "
                              f"got {self.log_level!r}")
        if self.log_format not in LOG_FORMATS:
            raise ConfigError(f"setting 'log_format' must be one of {', '.join(LOG_FORMATS)}; "
                              f"got {self.log_format!r}")
        if not self.host:
            raise ConfigError("setting 'host' must not be empty")
        if not self.metrics_host:
            raise ConfigError("setting 'metrics_host' must not be empty")
        if self.http and not self.http_host:
            raise ConfigError("setting 'http_host' must not be empty")
        for origin in self.http_cors_origins:
            if origin != "*" and not (origin.startswith(("http://", "https://"))
                                      and origin.count("/") == 2):
                raise ConfigError(f"setting 'http_cors_origins' holds {origin!r}: each entry is "
                                  "an origin such as https://admin.example.com (scheme://host"
                                  "[:port], no path) or *")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ConfigError("settings 'tls_cert' and 'tls_key' must be given together")
        if self.tls_client_ca and not self.tls_cert:
            raise ConfigError("setting 'tls_client_ca' (mTLS) needs 'tls_cert' and 'tls_key'")
        if self.state_key_id and not self.state_keys:
            raise ConfigError("setting 'state_key_id' needs 'state_keys' (the key files)")
        if self.http and self.tls_cert:
            # The HTTP port speaks plaintext only: never serve the API unencrypted beside a
            # TLS port.
            raise ConfigError("setting 'http' with 'tls_cert': the HTTP port speaks plaintext "
                              "only; terminate TLS in front of it (an ingress) or set http = "
                              "false (flag --no-http)")

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{host}:{self.port}"

    @property
    def http_address(self) -> str:
        host = self.http_host
        return f"[{host}]:{self.http_port}" if ":" in host and not host.startswith("[") \
            else f"{host}:{self.http_port}"

    @property
    def shares_ports(self) -> bool:
        """Whether the gRPC and HTTP ports are bound with SO_REUSEPORT: asked for, or shared
        by workers."""
        return self.reuse_port or self.workers > 1

    @property
    def stream_cap(self) -> int:
        """Streams allowed at once: ``max_streams``, but always leaving half the handler
        threads (at least one) to unary calls and health checks, since a stream holds one."""
        return min(self.max_streams, self.threads - max(1, self.threads // 2))

    @property
    def lane_call_cap(self) -> int:
        """Searches and reviews in the lane at once (each holds a handler thread while it
        waits): ``lane_max_calls``, but at most half the handler threads that streams leave
        (at least one), so that the rest always answer every other call."""
        return max(1, min(self.lane_max_calls, (self.threads - self.stream_cap) // 2))

    def with_(self, **changes: Any) -> Config:
        return replace(self, **changes)


_TYPES = {f.name: f.type for f in fields(Config)}
_HELP = {
    "host": "gRPC listen address",
    "port": "gRPC port (0: any free port)",
    "metrics_port": "Prometheus metrics HTTP port (0 disables)",
    "http": "serve the API over HTTP too: Connect (JSON or binary over HTTP/1.1), gRPC-Web",
    "http_host": "HTTP API listen address",
    "http_port": "HTTP API port (0: any free port)",
    "http_cors_origins": "origins whose browser pages may call the HTTP API (CORS; * for any)",
    "http_max_request_bytes": "largest HTTP request body in bytes (a ScoreReplays stream over "
                              "HTTP is one body; each message is still under max_message_bytes)",
    "http_max_head_bytes": "largest HTTP request head in bytes (request line and headers); "
                           "a longer one is answered 431 and closed before it is read whole",
    "http_max_headers": "most header fields in an HTTP request head; more are answered 431 "
                        "and closed",
    "http_header_timeout": "seconds a client has to send a request's head (line and "
                           "headers) on the HTTP ports; slower ones are closed",
    "http_body_timeout": "seconds a client has to send a request's body once its head is in",
    "http_keepalive_timeout": "seconds an HTTP connection may wait idle between requests",
    "http_max_connections": "HTTP connections open at once per process; past it a new one "
                            "closes the one waiting longest for a request, or is answered "
                            "503 and closed when none waits",
    "default_deadline": "seconds a call without a deadline (gRPC or HTTP) gets as one "
                        "(0: none)",
    "workers": "server processes sharing the port (SO_REUSEPORT)",
    "threads": "RPC handler threads per process",
    "max_streams": "streaming RPCs at once per process, at most threads/2; more are refused "
                   "RESOURCE_EXHAUSTED (health Watch holds no thread and is not counted)",
    "max_queued_calls": "calls waiting for a handler thread beyond which new calls are "
                        "refused RESOURCE_EXHAUSTED at once (counted: reason overloaded)",
    "max_pending_requests": "calls gRPC keeps before the server takes them in; past it gRPC "
                            "drops new calls itself (CANCELLED, uncounted), all past twice it",
    "reuse_port": "single-process mode: allow another process on the same port",
    "grace": "seconds in-flight RPCs get to finish on SIGTERM",
    "max_message_bytes": "largest request/response message in bytes",
    "max_cards": "most cards in one play or hand",
    "max_batch": "most plays in one BatchClassify request",
    "enumeration_cap": "most plays one EnumerateLegalPlays response lists",
    "lane_threads": "threads that run searches and reviews per process (0: the cores this "
                    "process may use, by CPU affinity and cgroup quota, shared among workers)",
    "lane_max_calls": "searches and reviews in the lane at once per process, running and "
                      "waiting, at most half the threads streams leave; more are refused "
                      "RESOURCE_EXHAUSTED (reason lane_full)",
    "lane_backlog": "seconds of expected work the lane may hold per lane thread (its bound "
                    "in CPU-seconds is this x lane threads); a call that would pass it is "
                    "refused RESOURCE_EXHAUSTED (reason lane_full)",
    "search_max_rollouts": "most rollouts one SuggestAction search may ask for; more is "
                           "refused INVALID_ARGUMENT (reason over_cap)",
    "search_max_seconds": "longest one SuggestAction search runs, whatever its deadline; a "
                          "longer search.max_ms is refused INVALID_ARGUMENT (reason over_cap)",
    "review_max_rollouts": "most rollouts one ReviewRound may ask for in all (rollouts x "
                           "decisions, twice with oracle, plus the fair-play views' with "
                           "fair_play); more is refused INVALID_ARGUMENT (reason over_cap)",
    "review_max_seconds": "longest one ReviewRound runs, whatever its deadline; a review "
                          "still running then ends RESOURCE_EXHAUSTED (reason cap_reached)",
    "log_level": "DEBUG, INFO, WARNING, ERROR or CRITICAL",
    "log_format": "text (time level pid logger: message) or json (one object a line)",
    "access_log": "one log line per call, at most this many a second per process for calls "
                  "that end OK and as many for the rest (0: no access log)",
    "tracing": "OpenTelemetry traces over OTLP (pip install 'shuangkou[otel]'; the OTEL_* "
               "variables name the collector)",
    "metrics_host": "Prometheus metrics HTTP listen address",
    "reflection": "serve gRPC server reflection",
    "tls_cert": "PEM server certificate chain file (with tls_key: TLS instead of plaintext)",
    "tls_key": "PEM private key file of tls_cert",
    "tls_client_ca": "PEM CA bundle file: require client certificates signed by it (mTLS)",
    "keepalive_time": "seconds between HTTP/2 keepalive pings on an idle connection",
    "keepalive_timeout": "seconds to wait for a keepalive ping's ack before closing",
    "max_connection_idle": "close a connection with no RPC for this many seconds (0: never)",
    "max_connection_age": "seconds before a connection is asked to reconnect, and as long "
                          "again to finish its RPCs (0: never)",
    "worker_check_interval": "--workers: seconds between health checks of each worker "
                             "(3 missed in a row: the worker is replaced)",
    "variants": "house variant files (TOML or JSON) registered by id at start-up",
    "state_keys": "file, or directory of files (a mounted Kubernetes Secret), holding the "
                  "keys that seal round states; each file is one key named by the file",
    "state_key_id": "the key of state_keys that seals new states (needed with several)",
}


def load_state_keys(config: Config) -> StateKeys | None:
    """The keys of ``state_keys`` (None when unset): one file is one key, named by the file;
    a directory (a mounted Kubernetes Secret) holds one file per key, names starting with
    ``.`` skipped (the Secret's ``..data`` links). A key is the file's bytes, surrounding
    whitespace removed (``openssl rand -base64 32`` writes 45 bytes with the newline)."""
    from pathlib import Path

    from shuangkou.core import ShuangkouError, StateKeys

    if not config.state_keys:
        return None
    root = Path(config.state_keys)
    try:
        files = (sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.is_file())
                 if root.is_dir() else [root])
        keys = {p.name: p.read_bytes().strip() for p in files}
    except OSError as exc:
        raise ConfigError(f"setting 'state_keys': cannot read {str(root)!r}: "
                          f"{exc.strerror}") from None
    if not keys:
        raise ConfigError(f"setting 'state_keys': no key files in {str(root)!r}")
    signing = config.state_key_id or (next(iter(keys)) if len(keys) == 1 else "")
    if not signing:
        raise ConfigError(f"setting 'state_key_id' must name the key that seals new states, "
                          f"one of {', '.join(keys)}")
    try:
        return StateKeys(keys, signing)
    except ShuangkouError as exc:
        raise ConfigError(f"setting {exc.field!r} ({str(root)!r}): "
                          f"{str(exc).removeprefix('state keys: ')}") from None


def _coerce(name: str, value: Any, source: str) -> Any:
    """Convert a raw value (TOML scalar or string) to the setting's type."""
    kind = _TYPES[name]
    try:
        if kind == "tuple[str, ...]":    # a list of paths: a TOML array, flag list or "a,b"
            items = value.split(",") if isinstance(value, str) else list(value)
            if not all(isinstance(v, str) for v in items):
                raise ValueError(value)
            return tuple(v.strip() for v in items if v.strip())
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if kind == "int":
            if isinstance(value, bool) or isinstance(value, float):
                raise ValueError(value)
            return int(value)
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if name == "log_level":
            return str(value).upper()
        if name == "log_format":
            return str(value).lower()
        return str(value)
    except (TypeError, ValueError):
        what = ("list of file names" if name == "variants" else "list of strings"
                ) if kind.startswith("tuple") else kind
        raise ConfigError(f"setting {name!r} from {source} must be a{'n' if kind == 'int' else ''} "
                          f"{what}; got {value!r}") from None


def _from_mapping(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    unknown = sorted(set(data) - set(_TYPES))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r} in {source}; "
                          f"known: {', '.join(_TYPES)}")
    return {k: _coerce(k, v, source) for k, v in data.items()}


def _read_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source} is not valid TOML: {exc}") from None


def defaults() -> dict[str, Any]:
    """The embedded defaults (service/defaults.toml)."""
    text = resources.files(__package__ or "shuangkou.service").joinpath("defaults.toml").read_text(encoding="utf-8")
    return _from_mapping(_read_toml(text, "defaults.toml"), "defaults.toml")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting (default None = not given), plus --config."""
    parser.add_argument("--config", metavar="FILE", help="TOML file of settings")
    for name, kind in _TYPES.items():
        flag = "--" + name.replace("_", "-")
        env = ENV_PREFIX + name.upper()
        if kind == "bool":
            parser.add_argument(flag, dest=name, default=None,
                                action=argparse.BooleanOptionalAction,
                                help=f"{_HELP[name]} (env {env})")
        elif kind.startswith("tuple"):
            parser.add_argument(flag, dest=name, default=None, nargs="+",
                                metavar="FILE" if name == "variants" else "ORIGIN",
                                help=f"{_HELP[name]} (env {env}, comma-separated)")
        else:
            parser.add_argument(flag, dest=name, default=None, metavar=name.split("_")[-1].upper(),
                                help=f"{_HELP[name]} (env {env})")


def load_config(args: argparse.Namespace | None = None,
                environ: Mapping[str, str] | None = None,
                overrides: Mapping[str, Any] | None = None) -> Config:
    """Merge defaults, the --config file, SHUANGKOU_* variables, flags and ``overrides``."""
    environ = os.environ if environ is None else environ
    merged = defaults()
    config_file = getattr(args, "config", None) or environ.get(ENV_PREFIX + "CONFIG")
    if config_file:
        try:
            with open(config_file, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file!r}: {exc.strerror}") from None
        merged.update(_from_mapping(_read_toml(text, config_file), config_file))
    for name in _TYPES:
        env = ENV_PREFIX + name.upper()
        if env in environ:
            merged[name] = _coerce(name, environ[env], f"${env}")
    if args is not None:
        for name in _TYPES:
            value = getattr(args, name, None)
            if value is not None:
                merged[name] = _coerce(name, value, "--" + name.replace("_", "-"))
    if overrides:
        merged.update(_from_mapping(overrides, "overrides"))
    return Config(**merged)


def parse_flags(argv: Sequence[str]) -> argparse.Namespace:
    """Parse only the settings flags (for tests and embedding)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))
