# Shuangkou hand-evaluation service image.
#
#   docker build -t shuangkou:0.1.0 .
#   docker run --rm -p 50051:50051 -p 8080:8080 -p 9090:9090 shuangkou:0.1.0  # = shuangkou serve
#   docker run --rm shuangkou:0.1.0 --help                                  # any other subcommand
#
# Two stages: the builder compiles the Cython core and generates the gRPC stubs while
# building the project's wheel (plus wheels of its dependencies); the runtime stage
# installs those wheels offline and carries no compiler, no sources and no pip cache.

# The builder's base needs a C compiler's headers (python3-dev); the runtime's needs only the
# interpreter. Both default to the same image; scripts/image.sh passes two Debian bases made
# with mmdebstrap, the runtime one without headers or compiler.
ARG PYTHON_IMAGE=python:3.11-slim
ARG RUNTIME_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------- builder
FROM ${PYTHON_IMAGE} AS builder

# A C compiler for the Cython extension. Versions come from the pinned Debian release
# of the base image; pinning each package version here would break on every point release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

WORKDIR /src
# Only what the build reads (see .dockerignore): packaging metadata, the two packages, the
# protos. Stubs (shuangkou.v1) and compiled modules are produced here, never copied in.
COPY pyproject.toml setup.py README.md MANIFEST.in ./
COPY protos/ protos/
COPY third_party/ third_party/
COPY core_ext/ core_ext/
COPY service/ service/
COPY client/ client/

# pip builds the project in an isolated environment (Cython, grpcio-tools from
# [build-system]) and resolves the runtime dependencies to wheels in /wheels.
RUN pip wheel --wheel-dir /wheels . \
    && ls /wheels/shuangkou-*.whl

# ---------------------------------------------------------------------------- runtime
FROM ${RUNTIME_IMAGE} AS runtime

LABEL org.opencontainers.image.title="shuangkou" \
      org.opencontainers.image.description="Shuangkou hand-evaluation gRPC service" \
      org.opencontainers.image.licenses="MIT"

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

# Install from the builder's wheels only (--no-index: no registry access at this step).
# The wheel files are bind-mounted, so they never become a layer of the final image.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels /wheels/shuangkou-*.whl \
    && shuangkou --help >/dev/null

# A fixed numeric uid/gid so Kubernetes' runAsNonRoot can verify it (deploy/k8s uses 10001).
RUN groupadd --system --gid 10001 shuangkou \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin shuangkou
USER 10001:10001
WORKDIR /tmp

# `shuangkou serve` listens on loopback by default (a quick start on a laptop stays private);
# in a container every interface is the point, so the image sets the three addresses. The
# environment is above a --config file in the settings' order: override them with these
# variables or the flags (docs/operations.md "Configuration").
ENV SHUANGKOU_HOST=0.0.0.0 \
    SHUANGKOU_HTTP_HOST=0.0.0.0 \
    SHUANGKOU_METRICS_HOST=0.0.0.0

# gRPC, the HTTP API (Connect, gRPC-Web), Prometheus /metrics.
EXPOSE 50051 8080 9090
# `shuangkou serve` turns SIGTERM into a graceful drain (health NOT_SERVING, in-flight RPCs
# finish within --grace seconds, exit 0). Exec-form ENTRYPOINT keeps it PID 1 so it gets it.
STOPSIGNAL SIGTERM
ENTRYPOINT ["shuangkou"]
CMD ["serve"]
