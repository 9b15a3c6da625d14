"""deploy/k8s/batch: the Indexed Jobs that score and review an archive in shards, their merge
steps and the shared volume, validated offline against the Kubernetes schemas (as
tests/test_deploy.py does for the server) and cross-checked against the CLI they run: each
Job's command line parses with the real parser for every index the Job substitutes, and
runs, as the pod's shell runs it, on a small archive."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shuangkou.service.batch import command as batch
from shuangkou.service.batch import review

yaml = pytest.importorskip("yaml", reason="pyyaml is a test dependency (pip install -e .[test])")

ROOT = Path(__file__).resolve().parents[1]
BATCH = ROOT / "deploy" / "k8s" / "batch"
# backoffLimitPerIndex is beta from 1.29 (GA 1.33): the oldest schema that knows it.
K8S_VERSIONS = ("1.29.0", "latest")
INDEX = "$(JOB_COMPLETION_INDEX)"     # expanded by the kubelet from the controller's env
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Run:
    """One archive job of deploy/k8s/batch: its shards' Job, its merge Job, its command."""

    command: str
    job: str
    merge: str
    parser: Any

    @property
    def id(self) -> str:
        return self.command


RUNS = [Run("score-replays", "Job/score-replays", "Job/score-replays-merge", batch._parser),
        Run("review-replays", "Job/review-replays", "Job/review-replays-merge",
            review._parser)]
JOBS = [name for r in RUNS for name in (r.job, r.merge)]


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

    assert set(docs) == {*JOBS, "PersistentVolumeClaim/replay-archive"}
    for version in K8S_VERSIONS:
        version = latest_version() if version == "latest" else version
        for name, doc in docs.items():
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{name} against Kubernetes {version}: {err.message} at "
                            f"{'.'.join(map(str, err.path))}")


def test_kustomization_lists_the_volume_and_the_scoring_job() -> None:
    """`kubectl apply -k deploy/k8s/batch` scores; it never starts a review as well (a review
    costs thousands of times what scoring costs: docs/decisions/engineering.md E37)."""
    k = yaml.safe_load((BATCH / "kustomization.yaml").read_text())
    assert k["resources"] == ["archive-pvc.yaml", "score-replays-job.yaml"]
    tool = ([found, "build"] if (found := shutil.which("kustomize"))
            else [found, "kustomize"] if (found := shutil.which("kubectl")) else None)
    if tool is None:
        pytest.skip("neither kustomize nor kubectl (kubectl kustomize) is installed")
    done = subprocess.run([*tool, str(BATCH)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rendered = {f"{d['kind']}/{d['metadata']['name']}"
                for d in yaml.safe_load_all(done.stdout) if d}
    assert rendered == {"PersistentVolumeClaim/replay-archive", "Job/score-replays"}


def _container(job: dict[str, Any]) -> dict[str, Any]:
    (c,) = job["spec"]["template"]["spec"]["containers"]
    return c


def _script(job: dict[str, Any]) -> str:
    """The shell line the container runs: ``/bin/sh -c`` and one argument."""
    c = _container(job)
    assert c["command"] == ["/bin/sh", "-c"] and len(c["args"]) == 1
    script: str = c["args"][0]
    return script


def _argv(job: dict[str, Any], command: str) -> list[str]:
    """The arguments the script gives ``shuangkou COMMAND`` (its first statement)."""
    words = shlex.split(_script(job).split(";")[0])
    assert words[:2] == ["shuangkou", command], words
    return words[2:]


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id)
def test_indexed_job_shards_match_completions(run: Run,
                                              docs: dict[str, dict[str, Any]]) -> None:
    job = docs[run.job]
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["backoffLimitPerIndex"] >= 1
    assert spec["template"]["spec"]["restartPolicy"] == "Never"   # required per index
    assert spec["parallelism"] <= spec["completions"]
    args = _argv(job, run.command)
    shard = args[args.index("--shard") + 1]
    m = re.fullmatch(re.escape(INDEX) + r"/(\d+)", shard)
    assert m and int(m.group(1)) == spec["completions"]
    # The index is the controller's variable, expanded by the kubelet: a variable of the
    # same name set in the container would override it, and every shard would be one.
    assert re.findall(r"\$\((\w+)\)", _script(job)) == ["JOB_COMPLETION_INDEX"]
    assert "JOB_COMPLETION_INDEX" not in {e["name"] for e in _container(job).get("env", [])}
    jobs = int(args[args.index("--jobs") + 1])
    resources = _container(job)["resources"]
    assert jobs == int(resources["limits"]["cpu"])
    # the arguments parse, with every index the Job will substitute
    for i in range(spec["completions"]):
        real = [a.replace(INDEX, str(i)) for a in args]
        parsed = run.parser().parse_args(real)
        assert parsed.shard == f"{i}/{spec['completions']}" and parsed.output_dir
        assert not parsed.merge and parsed.no_progress


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id)
def test_merge_reads_what_the_shards_write(run: Run, docs: dict[str, dict[str, Any]]) -> None:
    job, merge = docs[run.job], docs[run.merge]
    args = _argv(job, run.command)
    out = args[args.index("--output-dir") + 1]
    parsed = run.parser().parse_args(_argv(merge, run.command))
    assert parsed.merge and parsed.output_dir == out and not parsed.files

    def claims(j: dict[str, Any]) -> dict[str, str]:
        pod = j["spec"]["template"]["spec"]
        vols = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]
                if "persistentVolumeClaim" in v}
        return {m["mountPath"]: vols[m["name"]] for m in _container(j)["volumeMounts"]
                if m["name"] in vols}

    assert claims(job) == claims(merge) == {"/data": "replay-archive"}
    assert docs["PersistentVolumeClaim/replay-archive"]["spec"]["accessModes"] == \
        ["ReadWriteMany"]                              # shards on several nodes at once
    # The merge's podFailurePolicy names its own container (else the rule never matches).
    rules = merge["spec"]["podFailurePolicy"]["rules"]
    assert {r["onExitCodes"]["containerName"] for r in rules if "onExitCodes" in r} == \
        {_container(merge)["name"]}


def test_the_runs_write_apart(docs: dict[str, dict[str, Any]]) -> None:
    """A review's output directory and a scoring run's refuse each other: the two Jobs
    share the archive, never an output."""
    outs = set()
    for run in RUNS:
        args = _argv(docs[run.job], run.command)
        outs.add(args[args.index("--output-dir") + 1])
        assert args[0] == "/data/in"
    assert len(outs) == len(RUNS)


def test_the_review_is_sized_for_its_cost(docs: dict[str, dict[str, Any]]) -> None:
    """The review runs for hours (~7 CPU-s a round, docs/operations.md): CPU requested as
    limited (never squeezed below --jobs), a deadline that caps the spend, disruptions not
    counted against a shard's retries."""
    spec = docs["Job/review-replays"]["spec"]
    resources = _container(docs["Job/review-replays"])["resources"]
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"]
    assert spec["activeDeadlineSeconds"] >= 6 * 3600
    (rule,) = spec["podFailurePolicy"]["rules"]
    assert rule["action"] == "Ignore" and rule["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}]


def _user() -> tuple[int, int]:
    """The image's uid and gid (the Dockerfile's last USER)."""
    uid, gid = re.findall(r"^USER (\d+):(\d+)", (ROOT / "Dockerfile").read_text(), re.M)[-1]
    return int(uid), int(gid)


@pytest.mark.parametrize("name", JOBS)
def test_pods_run_non_root_with_a_read_only_root(name: str,
                                                 docs: dict[str, dict[str, Any]]) -> None:
    pod = docs[name]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == \
        _user() == (10001, 10001)
    assert pod["automountServiceAccountToken"] is False
    sc = _container(docs[name])["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    limits = _container(docs[name])["resources"]["limits"]
    assert {"cpu", "memory"} <= set(limits)


def _sh(script: str, data: Path, index: int | None = None,
        bin_dir: Path = BIN) -> subprocess.CompletedProcess[str]:
    """``script`` as the pod runs it: the kubelet's expansion of the index, /data mounted
    at ``data``, ``shuangkou`` on PATH (the one in ``bin_dir``)."""
    if index is not None:
        script = script.replace(INDEX, str(index))
    script = script.replace(" /data/", f" {shlex.quote(str(data))}/")
    return subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True,
                          timeout=120, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id)
def test_shards_and_merge_run_as_the_pods_run_them(run: Run, tmp_path: Path,
                                                   docs: dict[str, dict[str, Any]]) -> None:
    """Every shard, then the merge, on an archive with rejected lines: a shard or a merge
    that rejected lines exits 3 for the CLI and 0 for the Job (a complete run; a failed pod
    would be retried, exit 3 again and fail its index); a merge before the shards exits 2."""
    job, merge = docs[run.job], docs[run.merge]
    (tmp_path / "in").mkdir()
    # Rejected lines only: the review's default budget costs seconds a round, and what is
    # checked here is the Jobs' wiring, not the review (tests/test_review_archive.py).
    (tmp_path / "in" / "rounds.jsonl").write_text('{"bad": 1}\nnot json\n')
    assert _sh(_script(merge), tmp_path).returncode == 2       # nothing to merge yet
    for i in range(job["spec"]["completions"]):
        done = _sh(_script(job), tmp_path, i)
        assert done.returncode == 0, done.stderr
    first = _sh(_script(job).split(";")[0], tmp_path, 0)       # the CLI's own status
    assert first.returncode == 3 and "shard 0/" in first.stderr, first.stderr
    done = _sh(_script(merge), tmp_path)
    assert done.returncode == 0, done.stderr
    args = _argv(job, run.command)
    out = tmp_path / args[args.index("--output-dir") + 1].removeprefix("/data/")
    summary = yaml.safe_load((out / "summary.json").read_text())
    assert summary["lines"] == summary["rejected"] == 2


@pytest.mark.parametrize("name", JOBS)
def test_only_done_and_lines_rejected_succeed(name: str, tmp_path: Path,
                                              docs: dict[str, dict[str, Any]]) -> None:
    """The pod's shell turns the CLI's statuses (service/exits.py) into the Job's: 0 (done)
    and 3 (done, lines rejected) succeed; bad usage or I/O (2), a crash (70), a crash Python
    reported itself (1) and a kill (137) fail the pod, each with its own status."""
    stub = tmp_path / "bin" / "shuangkou"
    stub.parent.mkdir()
    stub.write_text('#!/bin/sh\nexit "$STATUS"\n')
    stub.chmod(0o755)
    script = _script(docs[name])
    for status, pod in ((0, 0), (3, 0), (1, 1), (2, 2), (70, 70), (137, 137)):
        done = subprocess.run(["/bin/sh", "-c", script.replace(INDEX, "0")], text=True,
                              capture_output=True, timeout=60,
                              env={"PATH": f"{stub.parent}:/usr/bin:/bin",
                                   "STATUS": str(status)})
        assert done.returncode == pod, (status, done.returncode, done.stderr)


# A `shuangkou` with a bug planted where every line's record is counted (either job): the
# real command, which must crash with status 70, never with the status of rejected lines.
CRASHING = """#!{python}
import sys
from shuangkou.service.batch import archive

def bug(*args, **kwargs):
    raise KeyError("planted")

archive.Stats.add_record = bug
from shuangkou.service.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id)
def test_a_crash_fails_the_pod(run: Run, tmp_path: Path,
                               docs: dict[str, dict[str, Any]]) -> None:
    """A bug in a shard exits 70 with its traceback: the pod fails (and is retried, up to
    backoffLimitPerIndex); with the old rule (any status up to 1 a success) a crash,
    Python's status 1, passed for "lines rejected" and the Job completed without the
    partitions, to be found missing only by the merge."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "rounds.jsonl").write_text('{"bad": 1}\n')
    crashing = tmp_path / "bin" / "shuangkou"
    crashing.parent.mkdir()
    crashing.write_text(CRASHING.format(python=sys.executable))
    crashing.chmod(0o755)
    done = _sh(_script(docs[run.job]), tmp_path, 0, crashing.parent)
    assert done.returncode == 70, done.stderr
    assert "KeyError: 'planted'" in done.stderr and "internal error" in done.stderr
    assert _sh(_script(docs[run.merge]), tmp_path).returncode == 2   # nothing complete
