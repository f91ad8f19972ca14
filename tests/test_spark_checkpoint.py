"""Spark runs that survive: ``--checkpoint DIR`` (reliable, level by level) against a lost executor
and a dead driver, and what happens without it.

Two runs on one standalone cluster on 127.0.0.1 (a master and a worker, as in test_spark), each
the CLI in a subprocess, on a model whose violation is 12 levels deep: one with --checkpoint whose
executor JVM is killed at level 4 and whose driver is killed at level 8 and resumed; one without,
whose executor is killed once the blocks descend from a local checkpoint. Results are compared
with the local engine's JSON: counts, depth, verdict, trace and coverage.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from kafkamc.cli import main
from test_spark import Cluster

pytestmark = pytest.mark.spark

# strong-isr fails at depth 12 after 5,573 distinct states: a few seconds, a level apart.
VIOLATING = ["replication", "-p", "truncation=kip101", "-i", "all"]


@pytest.fixture(scope="module")
def local():
    """The local engine's JSON and its (level, distinct, generated) per level."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", *VIOLATING, "--json", "--progress"])
    assert code == 1
    levels = set()
    for line in err.getvalue().splitlines():
        m = re.match(r"level (\d+): ([\d,]+) distinct, ([\d,]+) generated", line)
        if m:
            levels.add(tuple(int(g.replace(",", "")) for g in m.groups()))
    return comparable(json.loads(out.getvalue())), levels


def comparable(doc):
    return {k: v for k, v in doc.items() if k not in ("seconds", "engine", "checkpoint")}


def cli(args):
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    return subprocess.Popen([sys.executable, "-m", "kafkamc", "check", *args, "--json", "--progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def run(proc, on_line, timeout=240):
    """Call ``on_line`` with each line ``proc`` writes on stderr (its progress) until it ends;
    returns (exit code, stdout, stderr)."""
    err, deadline = [], time.monotonic() + timeout
    for line in proc.stderr:
        err.append(line)
        on_line(line)
        if time.monotonic() > deadline:
            proc.kill()
            break
    out = proc.stdout.read()
    return proc.wait(timeout=timeout), out, "".join(err)


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


@pytest.mark.timeout(400, method="thread")  # the checker's --progress timer takes SIGALRM
def test_lost_executor_and_dead_driver_with_checkpoint_give_identical_results(cluster, local, tmp_path):
    expected, levels = local
    before = executors_launched(cluster)
    ckpt = str(tmp_path / "ckpt")
    proc = cli([*VIOLATING, "--engine", "spark", "--master", cluster.url, "--partitions", "2", "--checkpoint", ckpt])
    killed = []

    def kill(line):
        if line.startswith("level 4:"):
            killed.append(kill_executor(cluster.procs[1].pid))
        elif line.startswith("level 8:"):
            os.kill(proc.pid, signal.SIGKILL)

    code, _, err = run(proc, kill)
    assert code == -signal.SIGKILL and killed, err[-3000:] + cluster.tail()
    # What the driver recorded after the executor was lost is the local engine's state at that level.
    with open(os.path.join(ckpt, "manifest.json")) as fh:
        manifest = json.load(fh)
    recorded = manifest["state"]
    assert manifest["engine"] == "spark" and len(manifest["files"]) == 2
    assert recorded["level"] >= 6 and (recorded["depth"], recorded["distinct"], recorded["generated"]) in levels

    proc = cli(["--resume", ckpt, "--master", cluster.url])
    code, out, err = run(proc, lambda line: None)
    assert code == 1, err[-3000:] + cluster.tail()
    assert not err.startswith("level 1:")  # the resumed run starts after the recorded level
    doc = json.loads(out)
    assert comparable(doc) == expected and doc["engine"] == "spark"
    # The killed executor was replaced, and the resumed driver had one of its own.
    assert executors_launched(cluster) >= before + 3


@pytest.mark.timeout(300, method="thread")
def test_lost_executor_without_checkpoint_is_an_error(cluster, tmp_path):
    # From level 9 on the blocks descend from the local checkpoint of level 8, which nothing can recompute.
    proc = cli([*VIOLATING, "--engine", "spark", "--master", cluster.url, "--partitions", "2",
                "--out", str(tmp_path)])
    code, out, err = run(proc, lambda line: line.startswith("level 9:") and kill_executor(cluster.procs[1].pid))
    assert code == 3 and out == "", err[-3000:]
    assert "Checkpoint block" in err and "--checkpoint DIR" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []
