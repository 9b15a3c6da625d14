"""deploy/k8s/batch: the Indexed Job that scores an archive in shards, its merge step and
the shared volume, validated offline against the Kubernetes schemas (as tests/test_deploy.py
does for the server) and cross-checked against the CLI they run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from shuangkou.service.batch import command as batch

yaml = pytest.importorskip("yaml", reason="pyyaml is a test dependency (pip install -e .[test])")

BATCH = Path(__file__).resolve().parents[1] / "deploy" / "k8s" / "batch"
# backoffLimitPerIndex is beta from 1.29 (GA 1.33): the oldest schema that knows it.
K8S_VERSIONS = ("1.29.0", "latest")


def _docs() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(BATCH.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            for doc in yaml.safe_load_all(path.read_text()):
                found[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return found


@pytest.fixture(scope="module")
def docs() -> dict[str, dict[str, Any]]:
    return _docs()


def test_validate_against_kubernetes_schemas(docs: dict[str, dict[str, Any]]) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    from kubernetes_validate.utils import latest_version

    assert set(docs) == {"Job/score-replays", "Job/score-replays-merge",
                         "PersistentVolumeClaim/replay-archive"}
    for version in K8S_VERSIONS:
        version = latest_version() if version == "latest" else version
        for name, doc in docs.items():
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{name} against Kubernetes {version}: {err.message} at "
                            f"{'.'.join(map(str, err.path))}")


def test_kustomization_lists_the_volume_and_the_job() -> None:
    k = yaml.safe_load((BATCH / "kustomization.yaml").read_text())
    assert k["resources"] == ["archive-pvc.yaml", "score-replays-job.yaml"]


def _container(job: dict[str, Any]) -> dict[str, Any]:
    (c,) = job["spec"]["template"]["spec"]["containers"]
    return c


def test_indexed_job_shards_match_completions(docs: dict[str, dict[str, Any]]) -> None:
    job = docs["Job/score-replays"]
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["backoffLimitPerIndex"] >= 1
    assert spec["template"]["spec"]["restartPolicy"] == "Never"   # required per index
    args = _container(job)["args"]
    assert args[0] == "score-replays"
    shard = args[args.index("--shard") + 1]
    m = re.fullmatch(r"\$\(JOB_COMPLETION_INDEX\)/(\d+)", shard)
    assert m and int(m.group(1)) == spec["completions"]
    jobs = int(args[args.index("--jobs") + 1])
    assert jobs == int(_container(job)["resources"]["limits"]["cpu"])
    # the arguments parse, with every index the Job will substitute
    for i in range(spec["completions"]):
        real = [a.replace("$(JOB_COMPLETION_INDEX)", str(i)) for a in args[1:]]
        parsed = batch._parser().parse_args(real)
        assert parsed.shard == f"{i}/{spec['completions']}" and parsed.output_dir


def test_merge_reads_what_the_shards_write(docs: dict[str, dict[str, Any]]) -> None:
    job, merge = docs["Job/score-replays"], docs["Job/score-replays-merge"]
    args = _container(job)["args"]
    out = args[args.index("--output-dir") + 1]
    script = shlex.split(_container(merge)["args"][0].split(";")[0])
    assert script[:2] == ["shuangkou", "score-replays"]
    parsed = batch._parser().parse_args(script[2:])
    assert parsed.merge and parsed.output_dir == out

    def claims(j: dict[str, Any]) -> dict[str, str]:
        pod = j["spec"]["template"]["spec"]
        vols = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]
                if "persistentVolumeClaim" in v}
        return {m["mountPath"]: vols[m["name"]] for m in _container(j)["volumeMounts"]
                if m["name"] in vols}

    assert claims(job) == claims(merge) == {"/data": "replay-archive"}
    assert docs["PersistentVolumeClaim/replay-archive"]["spec"]["accessModes"] == \
        ["ReadWriteMany"]                              # shards on several nodes at once


def test_pods_run_non_root_with_a_read_only_root(docs: dict[str, dict[str, Any]]) -> None:
    for name in ("Job/score-replays", "Job/score-replays-merge"):
        pod = docs[name]["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        sc = _container(docs[name])["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
