"""Spark runs that survive: ``--checkpoint DIR`` (reliable, level by level) against a lost executor
and a dead driver, and what happens without it.

Two runs on one standalone cluster on 127.0.0.1 (a master and a worker, as in test_spark): one
with --checkpoint whose executor JVM is killed mid-run, one without, killed the same way. The dead
driver is a local[2] run killed with SIGKILL and resumed. Every run is the CLI in a subprocess,
compared with the local engine's JSON (counts, depth, verdict, trace, coverage).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kafkamc.cli import main
from test_spark import Cluster

pytestmark = pytest.mark.spark

# replication's defaults: 6,435 distinct states, 18 levels; a run takes a few seconds a level apart.
SPEC = ["replication"]
VIOLATING = ["replication", "-p", "truncation=hw", "-p", "max_leader_epoch=1", "-i", "weak-isr"]


def local_json(capsys, args):
    code = main(["check", *args, "--json"])
    doc = json.loads(capsys.readouterr().out)
    return code, comparable(doc)


def comparable(doc):
    return {k: v for k, v in doc.items() if k not in ("seconds", "engine")}


def cli(args):
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    return subprocess.Popen([sys.executable, "-m", "kafkamc", "check", *args, "--json", "--progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def run_until(proc, level, then, timeout=240):
    """Read the progress lines of ``proc`` until ``level N:`` appears, call ``then``, then wait
    for it; returns (exit code, stdout, stderr)."""
    err, deadline, fired = [], time.monotonic() + timeout, False
    for line in proc.stderr:
        err.append(line)
        if not fired and line.startswith(f"level {level}:"):
            then()
            fired = True
        if time.monotonic() > deadline:
            proc.kill()
            break
    out = proc.stdout.read()
    code = proc.wait(timeout=timeout)
    assert fired, f"the run ended before level {level}:\n{''.join(err)[-3000:]}"
    return code, out, "".join(err)


def children(pid):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(x) for x in fh.read().split()]
        except OSError:
            pass
    return out


def kill_executor(worker_pid):
    """SIGKILL the executor JVM the worker launched (its child running CoarseGrainedExecutorBackend)."""
    for pid in children(worker_pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if b"CoarseGrainedExecutorBackend" in cmd:
            os.kill(pid, signal.SIGKILL)
            return pid
    raise AssertionError("no executor JVM to kill")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.start()
        yield c
    finally:
        c.stop()


def executors_launched(cluster):
    work = os.path.join(cluster.workdir, "work")
    return sum(len(os.listdir(os.path.join(work, app))) for app in os.listdir(work) if app.startswith("app-"))


@pytest.mark.timeout(300)
def test_lost_executor_with_checkpoint_gives_identical_results(cluster, tmp_path, capsys):
    _, local = local_json(capsys, SPEC)
    before = executors_launched(cluster)
    killed = []
    proc = cli([*SPEC, "--engine", "spark", "--master", cluster.url, "--partitions", "2",
                "--checkpoint", str(tmp_path / "ckpt")])
    code, out, err = run_until(proc, 5, lambda: killed.append(kill_executor(cluster.procs[1].pid)))
    assert code == 0, err[-3000:] + cluster.tail()
    assert comparable(json.loads(out)) == local
    # The killed executor was replaced: the run went on on a new one, reading the lost blocks back.
    assert killed and executors_launched(cluster) >= before + 2


@pytest.mark.timeout(300)
def test_lost_executor_without_checkpoint_is_an_error(cluster, tmp_path):
    # From level 9 on the blocks descend from a local checkpoint, which nothing can recompute.
    proc = cli([*SPEC, "--engine", "spark", "--master", cluster.url, "--partitions", "2", "--out", str(tmp_path)])
    code, out, err = run_until(proc, 11, lambda: kill_executor(cluster.procs[1].pid))
    assert code == 3 and out == ""
    assert "--checkpoint DIR" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


@pytest.mark.timeout(300)
def test_dead_driver_resumes_with_identical_results(tmp_path, capsys):
    code, local = local_json(capsys, VIOLATING)
    assert code == 1 and local["result"] == "violation"
    ckpt = str(tmp_path / "ckpt")
    proc = cli([*VIOLATING, "--engine", "spark", "--master", "local[2]", "--partitions", "2", "--checkpoint", ckpt])
    code, _, _ = run_until(proc, 5, lambda: os.kill(proc.pid, signal.SIGKILL))
    assert code == -signal.SIGKILL
    with open(os.path.join(ckpt, "kafkamc-spark-checkpoint.json")) as fh:
        assert json.load(fh)["state"]["level"] >= 3
    proc = cli(["--resume", ckpt, "--master", "local[2]"])
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 1, err[-3000:]
    assert not err.startswith("level 1:")  # the resumed run starts after the recorded level
    assert comparable(json.loads(out)) == local
