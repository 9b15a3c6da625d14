"""deploy/k8s/components: the kustomize components an operator adds to deploy/k8s — a
ServiceMonitor or a PodMonitor (kube-prometheus-stack) for the metrics port, a Gateway API
HTTPRoute or an Ingress for the HTTP port with TLS at the edge.

Each is rendered over the base by kustomize (``kubectl kustomize``, offline) in an overlay
made as docs/operations.md tells; what it adds is validated — the Ingress against the
Kubernetes schemas (kubernetes-validate, strict), the custom resources, whose schemas
kubernetes-validate does not ship, against schemas written here from the fields of their
CRDs that the components use (unknown fields refused, so that a typo does not pass) — and
cross-checked against the base: selectors, port names and numbers, the alert rules' job.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="pyyaml is a test dependency (pip install -e .[test])")

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"
COMPONENTS = K8S / "components"
K8S_VERSIONS = ("1.27.0", "latest")
#: component -> the kind it adds
ADDS = {"servicemonitor": "ServiceMonitor", "podmonitor": "PodMonitor",
        "httproute": "HTTPRoute", "ingress": "Ingress"}

# ------------------------------------------------------------------ custom resource schemas
# From the CRDs (monitoring.coreos.com/v1 of prometheus-operator, gateway.networking.k8s.io/v1
# of Gateway API v1.x): the fields the components use, with their types, enums and patterns;
# anything else is refused.

_DURATION = r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
_GATEWAY_DURATION = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"
_LABELS = {"type": "object", "additionalProperties": {"type": "string"}}


def _closed(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


_METADATA = _closed({"name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                     "namespace": {"type": "string"}, "labels": _LABELS,
                     "annotations": _LABELS}, ("name",))
_SELECTOR = _closed({"matchLabels": _LABELS, "matchExpressions": {"type": "array"}})
_RELABELING = _closed({
    "action": {"enum": ["replace", "Replace", "keep", "Keep", "drop", "Drop", "hashmod",
                        "HashMod", "labelmap", "LabelMap", "labeldrop", "LabelDrop",
                        "labelkeep", "LabelKeep", "lowercase", "Lowercase", "uppercase",
                        "Uppercase", "keepequal", "KeepEqual", "dropequal", "DropEqual"]},
    "sourceLabels": {"type": "array", "items": {"type": "string",
                                                "pattern": r"^[a-zA-Z_][a-zA-Z0-9_]*$"}},
    "separator": {"type": "string"}, "regex": {"type": "string"},
    "targetLabel": {"type": "string"}, "replacement": {"type": "string"},
    "modulus": {"type": "integer"}})
_ENDPOINT = {
    "port": {"type": "string"}, "path": {"type": "string"},
    "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
    "interval": {"type": "string", "pattern": _DURATION},
    "scrapeTimeout": {"type": "string", "pattern": _DURATION},
    "relabelings": {"type": "array", "items": _RELABELING},
    "metricRelabelings": {"type": "array", "items": _RELABELING},
    "honorLabels": {"type": "boolean"}}


def _resource(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return _closed({"apiVersion": {"const": api_version}, "kind": {"const": kind},
                    "metadata": _METADATA, "spec": spec}, ("apiVersion", "kind", "metadata",
                                                           "spec"))


_PARENT_REF = _closed({
    "group": {"type": "string"}, "kind": {"type": "string"},
    "name": {"type": "string", "minLength": 1}, "namespace": {"type": "string"},
    "sectionName": {"type": "string"}, "port": {"type": "integer"}}, ("name",))
_BACKEND_REF = _closed({
    "group": {"type": "string"}, "kind": {"type": "string"},
    "name": {"type": "string", "minLength": 1}, "namespace": {"type": "string"},
    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "weight": {"type": "integer", "minimum": 0, "maximum": 1000000}}, ("name",))
_MATCH = _closed({
    "path": _closed({"type": {"enum": ["Exact", "PathPrefix", "RegularExpression"]},
                     "value": {"type": "string", "pattern": "^/"}}),
    "method": {"enum": ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS",
                        "TRACE", "PATCH"]},
    "headers": {"type": "array"}, "queryParams": {"type": "array"}})

SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): _resource(
        "monitoring.coreos.com/v1", "ServiceMonitor", _closed({
            "selector": _SELECTOR, "jobLabel": {"type": "string"},
            "namespaceSelector": _closed({"any": {"type": "boolean"},
                                          "matchNames": {"type": "array"}}),
            "endpoints": {"type": "array", "minItems": 1, "items": _closed(_ENDPOINT)}},
            ("selector",))),
    ("monitoring.coreos.com/v1", "PodMonitor"): _resource(
        "monitoring.coreos.com/v1", "PodMonitor", _closed({
            "selector": _SELECTOR, "jobLabel": {"type": "string"},
            "namespaceSelector": _closed({"any": {"type": "boolean"},
                                          "matchNames": {"type": "array"}}),
            "podMetricsEndpoints": {"type": "array", "minItems": 1,
                                    "items": _closed(_ENDPOINT)}}, ("selector",))),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): _resource(
        "gateway.networking.k8s.io/v1", "HTTPRoute", _closed({
            "parentRefs": {"type": "array", "maxItems": 32, "items": _PARENT_REF},
            "hostnames": {"type": "array", "maxItems": 16, "items": {
                "type": "string",
                "pattern": r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}},
            "rules": {"type": "array", "maxItems": 16, "items": _closed({
                "matches": {"type": "array", "maxItems": 64, "items": _MATCH},
                "backendRefs": {"type": "array", "maxItems": 16, "items": _BACKEND_REF},
                "timeouts": _closed({
                    "request": {"type": "string", "pattern": _GATEWAY_DURATION},
                    "backendRequest": {"type": "string", "pattern": _GATEWAY_DURATION}}),
                "filters": {"type": "array"}})}})),
}


# ----------------------------------------------------------------------------- rendering

def _kustomize() -> list[str] | None:
    if found := shutil.which("kustomize"):
        return [found, "build"]
    if found := shutil.which("kubectl"):
        return [found, "kustomize"]
    return None


def render(tmp: Path, components: list[str]) -> list[dict[str, Any]]:
    """``kustomize build`` of an overlay of deploy/k8s with ``components``, as
    docs/operations.md writes it (paths relative to the overlay)."""
    tool = _kustomize()
    if tool is None:
        pytest.skip("neither kustomize nor kubectl (kubectl kustomize) is installed")
    overlay = tmp / ("overlay-" + "-".join(components or ["none"]))
    overlay.mkdir()
    base = os.path.relpath(K8S, overlay)
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [base],
        "components": [f"{base}/components/{c}" for c in components]}))
    done = subprocess.run([*tool, str(overlay)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("kustomize")
    return {c: render(tmp, [c] if c else []) for c in ["", *ADDS]}


def added(rendered: dict[str, list[dict[str, Any]]], component: str) -> dict[str, Any]:
    """The one resource ``component`` adds to the base (the base itself unchanged)."""
    base = {(d["kind"], d["metadata"]["name"]): d for d in rendered[""]}
    docs = {(d["kind"], d["metadata"]["name"]): d for d in rendered[component]}
    assert {k: v for k, v in docs.items() if k in base} == base, f"{component} changed the base"
    new = [v for k, v in docs.items() if k not in base]
    assert [d["kind"] for d in new] == [ADDS[component]], new
    return new[0]


def of_kind(docs: list[dict[str, Any]], kind: str, name: str = "shuangkou") -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


# ----------------------------------------------------------------------------- the tests

def test_every_component_is_listed_rendered_and_documented() -> None:
    on_disk = {p.name for p in COMPONENTS.iterdir() if p.is_dir()}
    assert on_disk == set(ADDS)
    doc = (ROOT / "docs" / "operations.md").read_text()
    for name in ADDS:
        kustomization = yaml.safe_load((COMPONENTS / name / "kustomization.yaml").read_text())
        assert kustomization["kind"] == "Component"
        assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1alpha1"
        listed = set(kustomization["resources"])
        assert listed == {p.name for p in (COMPONENTS / name).glob("*.yaml")} - {
            "kustomization.yaml"}
        assert f"deploy/k8s/components/{name}" in doc, f"docs/operations.md: {name}"


def test_components_validate(rendered: dict[str, list[dict[str, Any]]]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    from kubernetes_validate.utils import latest_version

    for component in ADDS:
        doc = added(rendered, component)
        schema = SCHEMAS.get((doc["apiVersion"], doc["kind"]))
        if schema is not None:
            jsonschema.Draft7Validator.check_schema(schema)
            errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=str)
            assert not errors, [f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors]
            continue
        for version in K8S_VERSIONS:
            version = latest_version() if version == "latest" else version
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{component} against Kubernetes {version}: {err.message} at "
                            f"{'.'.join(map(str, err.path))}")


def test_the_schemas_refuse_a_typo(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """The hand-written schemas are closed: a misspelt field fails, as kubernetes-validate's
    strict mode fails it for built-in kinds."""
    jsonschema = pytest.importorskip("jsonschema")
    for component in ("servicemonitor", "podmonitor", "httproute"):
        doc = added(rendered, component)
        spec = dict(doc["spec"], selectr={})
        bad = dict(doc, spec=spec)
        assert not jsonschema.Draft7Validator(
            SCHEMAS[(doc["apiVersion"], doc["kind"])]).is_valid(bad), component


def _alerts_job() -> str:
    text = (ROOT / "deploy" / "prometheus" / "alerts.yaml").read_text()
    (job,) = set(re.findall(r'job="([^"]+)"', text))
    return job


def test_monitors_scrape_the_metrics_port_as_the_alerts_job(
        rendered: dict[str, list[dict[str, Any]]]) -> None:
    base = rendered[""]
    deployment = of_kind(base, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}

    monitor = added(rendered, "servicemonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    services = [s for s in base if s["kind"] == "Service"
                and selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]
    with_port = [s for s in services
                 if endpoint["port"] in {p["name"] for p in s["spec"]["ports"]}]
    # one Service, so one target per pod (the headless Service has no metrics port); its
    # name is the job label Prometheus Operator gives by default
    assert [s["metadata"]["name"] for s in with_port] == [_alerts_job()]
    (port,) = [p for p in with_port[0]["spec"]["ports"] if p["name"] == endpoint["port"]]
    assert port["targetPort"] == "metrics" and ports["metrics"] == port["port"]

    pod_monitor = added(rendered, "podmonitor")
    assert selects(pod_monitor["spec"]["selector"]["matchLabels"], pod_labels)
    (endpoint,) = pod_monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics"
    jobs = [r["replacement"] for r in endpoint.get("relabelings", [])
            if r.get("targetLabel") == "job"]
    assert jobs == [_alerts_job()]
    for each in (monitor, pod_monitor):
        (endpoint,) = each["spec"].get("endpoints") or each["spec"]["podMetricsEndpoints"]
        assert endpoint["path"] == of_kind(base, "Deployment")["spec"]["template"][
            "metadata"]["annotations"]["prometheus.io/path"]


def _api_paths() -> set[str]:
    """The path prefix of each service the HTTP port serves."""
    from shuangkou.v1 import rounds_pb2, service_pb2

    return {f"/{s.full_name}/" for module in (service_pb2, rounds_pb2)
            for s in module.DESCRIPTOR.services_by_name.values()}


def test_routes_reach_the_http_port_with_tls_at_the_edge(
        rendered: dict[str, list[dict[str, Any]]]) -> None:
    from shuangkou.service.config import defaults

    base = rendered[""]
    service = of_kind(base, "Service")
    http = {p["name"]: p for p in service["spec"]["ports"]}["http"]
    assert http["targetPort"] == "http"

    route = added(rendered, "httproute")
    (rule,) = route["spec"]["rules"]
    assert {m["path"]["value"] for m in rule["matches"]} == _api_paths()
    assert all(m["path"]["type"] == "PathPrefix" for m in rule["matches"])
    (backend,) = rule["backendRefs"]
    assert (backend["kind"], backend["name"], backend["port"]) == (
        "Service", service["metadata"]["name"], http["port"])
    # TLS: the route hangs on a Gateway's HTTPS listener (the Gateway terminates it)
    (parent,) = route["spec"]["parentRefs"]
    assert parent["kind"] == "Gateway" and parent["sectionName"] == "https"
    # the server ends a call at its default deadline first, with its own status
    timeout = rule["timeouts"]["request"]
    assert timeout.endswith("s") and int(timeout[:-1]) > defaults()["default_deadline"]

    ingress = added(rendered, "ingress")
    hosts = {r["host"] for r in ingress["spec"]["rules"]}
    (tls,) = ingress["spec"]["tls"]
    assert set(tls["hosts"]) == hosts and tls["secretName"]
    assert set(route["spec"]["hostnames"]) == hosts
    (rule,) = ingress["spec"]["rules"]
    paths = rule["http"]["paths"]
    assert {p["path"] for p in paths} == _api_paths()
    for path in paths:
        assert path["pathType"] == "Prefix"
        assert path["backend"]["service"] == {"name": service["metadata"]["name"],
                                              "port": {"name": "http"}}


def test_network_policy_admits_what_the_docs_say_to_label() -> None:
    """The components' comments tell to label the Gateway's or ingress controller's
    namespace shuangkou.io/client: "true": that label must be what the policy admits to the
    HTTP port, and Prometheus' pods what it admits to the metrics port."""
    policy = yaml.safe_load((K8S / "networkpolicy.yaml").read_text())
    rules = {tuple(sorted(p["port"] for p in r["ports"])): r["from"]
             for r in policy["spec"]["ingress"]}
    http_from = rules[("grpc", "http")]
    assert {"namespaceSelector": {"matchLabels": {"shuangkou.io/client": "true"}}} in http_from
    for name in ("httproute", "ingress"):
        assert 'shuangkou.io/client: "true"' in (COMPONENTS / name / "kustomization.yaml"
                                                 ).read_text()
    (metrics_from,) = rules[("metrics",)]
    assert metrics_from["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "prometheus"}
