"""The Spark engine gives the local engine's results: verdict, counts, depth and the same trace.

One local[2] SparkSession serves the whole module; one test starts a real standalone cluster (a
master and a worker from the PySpark installation's own jars) on 127.0.0.1 and checks a spec
defined in this very module against it, so the module itself must be shipped to the executors.
This module imports nothing from the tests directory: executors import it by name.
"""

from __future__ import annotations

import enum
import glob
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from dataclasses import dataclass

import pytest

from kafkamc import Param, Spec, action, action_property, invariant
from kafkamc.checker.local import explore
from kafkamc.cli import main
from kafkamc.errors import EngineError, SpecError, SpecRaised, UsageError
from kafkamc.spec.registry import build_spec, bundled_names, load_spec_class

pytestmark = pytest.mark.spark

HERE = os.path.dirname(os.path.abspath(__file__))


# -- a user spec: nested dataclasses, an IntEnum, frozensets, several initial states ---------


class Light(enum.IntEnum):
    RED = 0
    GREEN = 1


@dataclass(frozen=True, slots=True)
class Cell:
    value: int
    light: Light


@dataclass(frozen=True, slots=True)
class Board:
    cells: tuple[Cell, ...]
    touched: frozenset[int]
    moves: int


@invariant("moves-below-limit", "fewer than limit moves were made")
def moves_below_limit(p, s):
    return s.moves < p.limit


@invariant("some-red", "some cell is still red")
def some_red(p, s):
    if p.explode and s.moves == 3:
        raise ZeroDivisionError("invariant exploded")
    return any(c.light == Light.RED for c in s.cells)


@action_property("no-double-bump", "a bump raises a value by one")
def no_double_bump(p, s, label, t):
    return all(b.value - a.value <= 1 for a, b in zip(s.cells, t.cells)) and not (p.skip and t.moves == 4)


class Tiles(Spec):
    """Cells count up to ``cap`` and turn green (one way); a board of green cells at cap is stuck."""

    name = "tiles"
    description = "cells that count up and turn green"
    parameters = (
        Param("cells", 3, "number of cells", min=1, max=5),
        Param("cap", 2, "largest value of a cell", min=1, max=5),
        Param("limit", 99, "moves must stay below this", min=1),
        Param("skip", False, "bumps may skip a value once 4 moves were made"),
        Param("explode", False, "some-red raises after 3 moves"),
        Param("crash", False, "the action kills its Python process after 3 moves"),
        Param("boom", False, "the action raises after 4 moves"),
        Param("most", 99, "constraint: states with more moves are not expanded", min=0),
    )
    invariants = (moves_below_limit, some_red, no_double_bump)
    default_invariants = ("moves-below-limit", "some-red")

    def init_states(p):
        red = Cell(0, Light.RED)
        yield Board((red,) * p.cells, frozenset(), 0)
        yield Board((Cell(1, Light.RED),) + (red,) * (p.cells - 1), frozenset({0}), 0)
        yield Board((red,) * p.cells, frozenset(), 0)  # a duplicate: the engines keep the first

    @action
    def bump(p, s):
        if p.boom and s.moves >= 4:
            raise ValueError("bump exploded")
        if p.crash and s.moves >= 3:
            os._exit(7)  # what a lost executor looks like to Spark
        for i in range(p.cells):
            c = s.cells[i]
            if c.value < p.cap:
                step = 2 if p.skip and s.moves >= 4 and c.value + 2 <= p.cap else 1
                cells = s.cells[:i] + (Cell(c.value + step, c.light),) + s.cells[i + 1:]
                yield (i,), Board(cells, s.touched | {i}, s.moves + 1)

    @action
    def go_green(p, s):
        for i in range(p.cells):
            c = s.cells[i]
            if c.light == Light.RED and c.value == p.cap:
                cells = s.cells[:i] + (Cell(c.value, Light.GREEN),) + s.cells[i + 1:]
                yield f"GoGreen(c{i})", Board(cells, s.touched, s.moves + 1)

    def constraint(p, s):
        return s.moves <= p.most

    def symmetry(p, s):
        return Board(tuple(sorted(s.cells, key=lambda c: (c.value, c.light))), frozenset(), s.moves)


# Expansions of each state in this process: Shuffled's order of successors depends on it.
_CALLS: dict = {}


@dataclass(frozen=True, slots=True)
class XY:
    x: int
    y: int


@invariant("x-below-two", "x stays below 2")
def x_below_two(p, s):
    return s.x < 2


@invariant("y-forgot-return", "y stays small, but the author forgot the return")
def y_forgot_return(p, s):
    if s.x + s.y == 0:
        return True  # the driver checks the initial state; the executors meet the bug
    s.y < 9  # noqa: B015 - the bug under test


class Shuffled(Spec):
    """Successors reversed on every second call for a state, and again in any process but ``home``
    (the driver): executors expand in one order, the driver replays in the other."""

    name = "spark-shuffled"
    parameters = (Param("home", 0, "the driver's process id", min=0),)
    invariants = (x_below_two, y_forgot_return)
    default_invariants = ("x-below-two",)

    def init_states(p):
        yield XY(0, 0)

    @action
    def step(p, s):
        _CALLS[s] = _CALLS.get(s, 0) + 1
        out = [("IncX", XY(s.x + 1, s.y)), ("IncY", XY(s.x, s.y + 1))] if s.x + s.y < 4 else []
        if (_CALLS[s] % 2 == 0) != (os.getpid() != p.home):
            out.reverse()
        yield from out


@invariant("not-joined", "the two branches never join")
def not_joined(p, s):
    return not (s.x == 1 and s.y == 1)


class Diamond(Spec):
    """Two branches that join: executors take them in the other order than the driver, so the
    replayed counterexample ends in the recorded state by another path (only the digest of the
    path's fingerprints tells)."""

    name = "spark-diamond"
    parameters = (Param("home", 0, "the driver's process id", min=0),)
    invariants = (not_joined,)

    def init_states(p):
        yield XY(0, 0)

    @action
    def step(p, s):
        if s == XY(0, 0):
            out = [("IncX", XY(1, 0)), ("IncY", XY(0, 1))]
            yield from (reversed(out) if os.getpid() != p.home else out)
        elif s.x + s.y == 1:
            yield "Join", XY(1, 1)


# -- helpers --------------------------------------------------------------------------------


def outcome(r):
    path = None if r.trace is None else r.trace.path
    states = None if r.trace is None else [(st.action, st.state) for st in r.trace.steps]
    return (r.result, r.violated, r.distinct_states, r.states_generated, r.depth, r.reason, path, states,
            r.coverage)


def assert_same(spec, props=None, **kw):
    from kafkamc.checker.spark import explore_spark

    partitions = kw.pop("partitions", None)
    local = explore(spec, props, **kw)
    spark = explore_spark(spec, props, partitions=partitions, **kw)
    assert spark.engine == "spark"
    assert outcome(spark) == outcome(local)
    return local, spark


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]").appName("kafkamc-tests")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.pyspark.python", sys.executable).config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# -- identity with the local engine -----------------------------------------------------------


def test_replication_ok_and_violating(spark):
    ok, _ = assert_same(build_spec("replication", ["log_size=1", "max_records=1", "max_leader_epoch=1"]))
    assert ok.result == "ok" and ok.distinct_states > 100
    bad, spark_bad = assert_same(build_spec("replication", ["truncation=hw", "max_leader_epoch=1"]), partitions=3)
    assert bad.result == "violation" and bad.violated == "weak-isr"
    assert len(spark_bad.trace) == bad.depth


# Small configurations of the other bundled specs (present once their authors commit them).
OTHERS = [
    ("controller", ["brokers=2", "elections=2", "expiries=1", "leader_epochs=1", "requests=1", "fencing=none"]),
    ("transactions", ["producers=2", "partitions=1", "max_transactions=1", "max_epoch=1", "max_delayed=0",
                      "version=tv1"]),
    ("group", ["consumers=2", "partitions=1", "max_generation=1", "max_session_expiries=0", "commit_check=none"]),
]


@pytest.mark.parametrize("name,params", OTHERS, ids=[n for n, _ in OTHERS])
def test_other_bundled_specs(spark, name, params):
    if name not in bundled_names():
        pytest.skip(f"spec {name} is not in this checkout yet")
    cls = load_spec_class(name)
    assert_same(build_spec(name, params), cls.properties())


def test_user_spec_shipped_to_executors(spark):
    local, result = assert_same(Tiles(cells=2))
    assert local.result == "violation" and local.violated == "some-red"
    assert any("test_spark" in name for name in result.extra["shipped"])
    # The executors imported this module from the shipped zip: the tests directory is not on their path.
    sources = result.extra["executor_sources"]
    assert sources and all(mod.endswith(os.path.join(".zip", "test_spark.py")) for _, mod in sources)


@pytest.mark.parametrize("kw,violated", [
    ({"limit": 4}, "moves-below-limit"),
    ({"skip": True}, "no-double-bump"),
    ({"most": 3}, None),
], ids=["invariant", "action-property", "constraint"])
def test_user_spec_variants(spark, kw, violated):
    local, _ = assert_same(Tiles(**kw), Tiles.properties(), partitions=1 if kw.get("most") else 4)
    assert local.violated == violated


def test_deadlock_symmetry_and_bounds(spark):
    _, dead = assert_same(Tiles(cells=2, cap=1), [], deadlock=True)
    assert dead.violated == "deadlock"
    _, sym = assert_same(Tiles(cells=3, cap=1), [], symmetry=True)
    assert sym.result == "ok" and sym.distinct_states < explore(Tiles(cells=3, cap=1), []).distinct_states
    _, depth = assert_same(Tiles(), [], max_depth=3)
    assert depth.reason == "max-depth"
    _, states = assert_same(Tiles(), [], max_states=40, partitions=3)
    assert states.reason == "max-states" and states.distinct_states == 40


def test_spec_errors_match_the_local_engine(spark):
    from kafkamc.checker.spark import explore_spark

    for kw in ({"boom": True}, {"explode": True}):
        spec = Tiles(**kw)
        with pytest.raises(SpecRaised) as local:
            explore(spec, Tiles.properties())
        with pytest.raises(SpecRaised) as remote:
            explore_spark(spec, Tiles.properties())
        assert str(remote.value) == str(local.value)


def test_nondeterministic_spec_and_non_bool_invariant_are_spec_errors(spark):
    from kafkamc.checker.spark import explore_spark

    with pytest.raises(SpecError, match="the spec is not deterministic: action step yields its successors in a "
                                        r"different order on the same state XY\(x=0, y=0\)"):
        explore_spark(Shuffled(home=os.getpid()))
    with pytest.raises(SpecError, match=r"invariant y-forgot-return returned None \(NoneType\), not a bool, on "
                                        r"state XY\(x=\d, y=\d\)"):
        explore_spark(Shuffled(home=os.getpid()), [Shuffled.property_named("y-forgot-return")])
    with pytest.raises(SpecError, match=r"the spec is not deterministic: action step yields its successors in a "
                                        r"different order on the same state XY\(x=1, y=0\), or an action did on an "
                                        r"earlier state"):
        explore_spark(Diamond(home=os.getpid()))


def test_lost_python_worker_is_an_engine_error(spark):
    from kafkamc.checker.spark import explore_spark

    with pytest.raises(EngineError, match="Spark job failed"):
        explore_spark(Tiles(crash=True), [])


def test_failed_job_with_checkpoint_says_how_to_resume(spark, tmp_path):
    from kafkamc.checker.manifest import spec_identity
    from kafkamc.checker.spark import explore_spark
    from kafkamc.checker.spark_checkpoint import SparkCheckpointer

    spec = Tiles(crash=True)
    options = {"properties": [], "symmetry": False, "deadlock": False, "max_depth": None, "max_states": None}
    with SparkCheckpointer(str(tmp_path), spec_identity(spec, "test_spark:Tiles"), options, 0.0) as ckpt:
        with pytest.raises(EngineError, match=rf"; {tmp_path} holds level 4: continue with kafkamc check --resume "):
            explore_spark(spec, [], checkpoint=ckpt)


def test_bad_input_is_a_usage_error(spark):
    from kafkamc.checker.spark import explore_spark

    with pytest.raises(UsageError, match="partitions"):
        explore_spark(Tiles(), partitions=0)
    with pytest.raises(UsageError, match="already runs a Spark context"):
        explore_spark(Tiles(), master="spark://127.0.0.1:7077")


def test_cli_engine_spark(spark, capsys):
    args = ["check", "replication", "-p", "truncation=hw", "-p", "max_leader_epoch=1", "-i", "weak-isr", "--json"]
    assert main(args) == 1
    local = json.loads(capsys.readouterr().out)
    assert main(args + ["--engine", "spark", "--partitions", "2", "--progress"]) == 1
    out, err = capsys.readouterr()
    remote = json.loads(out)
    assert [ln.split(":")[0] for ln in err.splitlines()] == [f"level {n}" for n in range(1, remote["depth"] + 1)]
    for out in (local, remote):
        out.pop("seconds")
    assert remote.pop("engine") == "spark" and local.pop("engine") == "local"
    assert remote == local


def test_codec_round_trips_nested_states():
    from kafkamc.checker.spark import _Codec

    codec = _Codec(Board)
    assert codec.plain
    state = Board((Cell(2, Light.GREEN), Cell(0, Light.RED)), frozenset({0, 1}), 5)
    back = codec.loads(codec.dumps(state))
    assert back == state and type(back.cells[0].light) is Light and hash(back) == hash(state)
    assert type(codec.enc(state)[0][0]) is tuple  # sent as plain tuples, not as Cell objects
    # A state of another type, or an IntEnum field holding a non-member, still comes back as it was.
    other = Cell(3, Light.RED)
    assert codec.loads(codec.dumps(other)) == other and type(codec.loads(codec.dumps(other))) is Cell
    odd = Board((Cell(1, 7),), frozenset(), 0)
    assert codec.loads(codec.dumps(odd)) == odd


def test_path_codes_compare_like_index_sequences():
    import random

    from kafkamc.checker.spark import MAX_INDEX, _split_last, _step, _unpath

    edges = [0, 127, 128, 16511, 16512, 2113663, 2113664, MAX_INDEX]
    rnd = random.Random(6)
    for _ in range(3000):
        n = rnd.randint(1, 5)
        a, b = ([rnd.choice(edges) if rnd.random() < 0.3 else rnd.randint(0, 300) for _ in range(n)] for _ in "ab")
        pa, pb = b"".join(map(_step, a)), b"".join(map(_step, b))
        assert _unpath(pa) == a and (pa < pb) == (a < b) and (pa == pb) == (a == b)
        assert _split_last(pa) == (b"".join(map(_step, a[:-1])), a[-1])
    assert len(_step(5)) == 1 and len(_step(MAX_INDEX)) == 4


# -- errors that need no Spark: subprocesses of the CLI ------------------------------------------


def run_cli(args, env_update=None, cwd=None, timeout=240):
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    env.update(env_update or {})
    return subprocess.run([sys.executable, "-m", "kafkamc", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def test_no_java_and_unreachable_master_exit_3(tmp_path):
    env = {"PATH": os.path.dirname(sys.executable), "JAVA_HOME": ""}
    proc = run_cli(["check", "replication", "--engine", "spark"], env)
    assert proc.returncode == 3 and "no Java runtime" in proc.stderr and proc.stdout == ""
    port = free_port()
    proc = run_cli(["check", "replication", "--engine", "spark", "--master", f"spark://127.0.0.1:{port}", "--out",
                    str(tmp_path / "out")])
    assert proc.returncode == 3 and "unreachable" in proc.stderr
    assert not (tmp_path / "out").exists()


# -- a real standalone cluster on 127.0.0.1 ---------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A Spark standalone master and one worker, launched from the PySpark installation's jars."""

    def __init__(self, workdir):
        import pyspark

        self.home = os.path.dirname(pyspark.__file__)
        self.port, self.ui, self.worker_ui = free_port(), free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.workdir = str(workdir)
        self.procs = []
        self.logs = []

    def _launch(self, name, *args):
        log = open(os.path.join(self.workdir, f"{name}.log"), "wb")
        self.logs.append(log.name)
        # The worker builds executor command lines with Spark's launcher, which needs the Scala
        # version that the pip layout's load-spark-env.sh would export.
        scala = glob.glob(os.path.join(self.home, "jars", "scala-library-*.jar"))[0]
        scala_version = ".".join(os.path.basename(scala)[len("scala-library-"):].split(".")[:2])
        env = dict(os.environ, SPARK_HOME=self.home, SPARK_LOCAL_IP="127.0.0.1", SPARK_SCALA_VERSION=scala_version,
                   SPARK_WORKER_DIR=os.path.join(self.workdir, "work"), SPARK_LOG_DIR=self.workdir)
        jars = os.path.join(self.home, "jars", "*")
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
        self.procs.append(subprocess.Popen([java, "-Xmx512m", "-cp", jars, *args], stdout=log,
                                           stderr=subprocess.STDOUT, env=env, cwd=self.workdir))

    def start(self, timeout=150):
        self._launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(self.port), "--webui-port", str(self.ui))
        self._launch("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                     "--cores", "2", "--memory", "2g", "--webui-port", str(self.worker_ui),
                     "--work-dir", os.path.join(self.workdir, "work"), self.url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=5) as resp:
                    if any(w.get("state") == "ALIVE" for w in json.load(resp).get("workers", [])):
                        return
            except OSError:
                pass
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        raise RuntimeError(f"the standalone cluster did not come up:\n{self.tail()}")

    def tail(self):
        return "\n".join(f"== {path}\n" + open(path, errors="replace").read()[-3000:] for path in self.logs)

    def stop(self):
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


DRIVER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[2])
    from kafkamc.checker.spark import explore_spark
    import test_spark
    r = explore_spark(test_spark.Tiles(limit=5), test_spark.Tiles.properties(), master=sys.argv[1])
    print(json.dumps({"result": r.result, "violated": r.violated, "distinct": r.distinct_states,
                      "generated": r.states_generated, "depth": r.depth, "path": list(r.trace.path),
                      "sources": r.extra["executor_sources"], "master": r.extra["master"]}))
""")


@pytest.mark.timeout(420)
def test_standalone_cluster(tmp_path):
    cluster = Cluster(tmp_path)
    try:
        cluster.start()
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
        proc = subprocess.run([sys.executable, "-c", DRIVER, cluster.url, HERE], capture_output=True, text=True,
                              env=env, cwd=str(tmp_path), timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:] + cluster.tail()
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        # Spark's own logging is off; only the JVM's one-line notice about incubator modules remains.
        assert [ln for ln in proc.stderr.splitlines() if ln.strip() and "incubator modules" not in ln] == []
    finally:
        cluster.stop()
    local = explore(Tiles(limit=5), Tiles.properties())
    assert got["master"] == cluster.url
    assert (got["result"], got["violated"], got["distinct"], got["generated"], got["depth"], tuple(got["path"])) == (
        local.result, local.violated, local.distinct_states, local.states_generated, local.depth, local.trace.path)
    # Neither kafkamc nor this module is on the executors' path: both came in the shipped zips.
    assert got["sources"] and all(".zip" in pkg and ".zip" in mod for pkg, mod in got["sources"])
    assert glob.glob(os.path.join(str(tmp_path), "work", "app-*")), "the worker ran no executor"


def test_ctrl_c_cancels_the_jobs_quietly(spark, capfd, caplog):
    """Ctrl-C during a Spark job: incomplete (reason interrupted), and no Py4J errors (PySpark's
    own handler calls the JVM from inside the interrupted Py4J call, which breaks it)."""
    import logging
    import signal
    import threading

    from kafkamc.checker.spark import explore_spark

    before = signal.getsignal(signal.SIGINT)

    def progress(stats):
        if stats.level == 3:  # the signal arrives while the next level's job runs
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()

    spec = build_spec("replication", ["replicas=3", "truncation=kip320"])
    with caplog.at_level(logging.DEBUG):
        result = explore_spark(spec, partitions=2, progress=progress)
    assert result.result == "incomplete" and result.reason == "interrupted"
    assert 3 <= result.depth < 20
    assert signal.getsignal(signal.SIGINT) is before
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]
    err = capfd.readouterr().err
    assert "Traceback" not in err and "py4j" not in err.lower(), err[:2000]
