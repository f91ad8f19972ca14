"""The Spark engine: level-synchronous breadth-first search sharded across Spark executors.

Every distinct state is owned by the partition ``fingerprint mod P`` (the unsigned 64-bit form of
the local engine's fingerprint, ``state_key_function``). Partition ``j`` of the one cached RDD of a
level holds a single block: the sorted ``int64`` fingerprints of the states it owns (its part of
the visited set, 8 bytes per state) and its part of the current frontier, each state with its
path (initial-state index, then successor indices, 1 byte per index below 128), packed
into one byte string.

One Spark job per level, two stages:

1. expand (one task per block): decode the frontier, run every action on every state, check
   action properties, count successors, note deadlocks, deduplicate successors locally (keeping
   the first, i.e. smallest, path), drop the ones this partition already owns, and emit one packed
   batch per owner partition.
2. merge (one task per owner): a partitioner-aware union puts the cached block of partition ``j``
   and the batches shuffled to ``j`` in the same task, so the visited set never moves. The task
   drops the batches' states already visited, keeps the smallest path of each new state, checks
   every invariant on the new states in path order, and writes the next block (old fingerprints
   plus new ones, the new frontier sorted by path).

The driver only reads per-level statistics (through an accumulator keyed by partition, so a task
retried by Spark counts once): successors generated, new states, and the smallest path of a
deadlock, of an action-property violation, of an invariant violation and of an error. Frontier
states carry their paths, so every state's path is its smallest shortest path, exactly as in the
local engine; the counterexample is replayed from that path on the driver, and the verdict, the
statistics and the trace are those of ``kafkamc.checker.local.explore`` (see its docstring for
the rule on which violation wins). A bounded run (``max_depth``/``max_states``) that stops inside
a level costs one more small job to find where the local engine would have stopped and one to
count the successors generated before that point, so its counts are the local engine's too.

Lineage is cut with ``localCheckpoint`` every few levels. The package and the spec's own modules
are shipped to the executors as zip files (``addPyFile``); the spec itself pickles by class
reference and parameter values.
"""

from __future__ import annotations

import atexit
import gc
import hashlib
import importlib
import io
import marshal
import os
import resource
import shutil
import socket
import sys
import sysconfig
import tempfile
import time
import zipfile
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np

from kafkamc.checker import spark_checkpoint
from kafkamc.checker.codec import _Codec, _codec  # noqa: F401 - _Codec: tests/test_spark.py
from kafkamc.checker.fingerprint import Fingerprinter, _validate_stable
from kafkamc.checker.local import _classify, first_violation, state_key_function
from kafkamc.checker.manifest import FileEntry
from kafkamc.checker.spark_stop import JobStop
from kafkamc.checker.watch import stop_reason
from kafkamc.result import (
    DEADLOCK, INCOMPLETE, OK, VIOLATION, CheckResult, LevelStats, coverage_of,
)
from kafkamc.counterexamples.checked import checked_replay
from kafkamc.counterexamples.trace import ReplayError, replay
from kafkamc.errors import EngineError, KafkamcError, SpecRaised, UsageError
from kafkamc.invariants.api import Property, fails
from kafkamc.spec.api import Spec, format_label

__all__ = ["explore_spark", "CHECKPOINT_EVERY"]

Progress = Callable[[LevelStats], None]

# Truncate the lineage every this many levels (each level adds a union, a shuffle and two
# Python stages to the DAG the scheduler walks and serialises per job).
CHECKPOINT_EVERY = 8
# Seconds to wait for a standalone master to give the application an executor.
EXECUTOR_WAIT = 90.0


def _owner(key: int) -> int:
    """The partition function: ``partitionBy`` takes it modulo P. One module-level object, so
    that every level's shuffle has an equal ``PythonPartitioner`` and the union with the cached
    blocks is partitioner-aware (partition j of both sides in one task)."""
    return key


# A path (initial-state index, then successor indices) travels as bytes: each index in an
# order-preserving, prefix-free code of 1 to 4 bytes (1 byte below 128), so that paths of one
# length compare as bytes exactly as their index sequences do.
_CODE_BASES = (0, 0x80, 0x80 + 0x4000, 0x80 + 0x4000 + 0x200000, 0x80 + 0x4000 + 0x200000 + 0x10000000)
_CODE_TAGS = (0x00, 0x8000, 0xC00000, 0xE0000000)
MAX_INDEX = _CODE_BASES[4] - 1


def _encode_index(i: int) -> bytes:
    for n in range(4):
        if i < _CODE_BASES[n + 1]:
            return (_CODE_TAGS[n] | (i - _CODE_BASES[n])).to_bytes(n + 1, "big")
    raise OverflowError(f"successor index {i} exceeds {MAX_INDEX}")


_IDX = tuple(_encode_index(i) for i in range(4096))


def _step(i: int) -> bytes:
    return _IDX[i] if i < 4096 else _encode_index(i)


def _code_length(first: int) -> int:
    return 1 if first < 0x80 else 2 if first < 0xC0 else 3 if first < 0xE0 else 4


def _unpath(path: bytes) -> list[int]:
    out, at = [], 0
    while at < len(path):
        n = _code_length(path[at])
        out.append((int.from_bytes(path[at:at + n], "big") ^ _CODE_TAGS[n - 1]) + _CODE_BASES[n - 1])
        at += n
    return out


def _split_last(path: bytes) -> tuple[bytes, int]:
    """(the parent's path, the last index) of a path."""
    at = last = 0
    while at < len(path):
        last = at
        at += _code_length(path[at])
    return path[:last], _unpath(path[last:])[0]


# -- what every task knows ------------------------------------------------------------------


class _Job:
    """Everything a task needs; pickled into each task (the spec by class and parameters)."""

    def __init__(self, spec: Spec, props: Sequence[Property], *, symmetry: bool, deadlock: bool,
                 partitions: int, state_type: type, plain_ok: bool) -> None:
        self.spec = spec
        self.invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]
        self.aprops = [(pr.name, pr.fn) for pr in props if pr.kind == "action"]
        self.symmetry = symmetry
        self.deadlock = deadlock
        self.partitions = partitions
        self.state_type = state_type
        self.plain_ok = plain_ok
        self.validate = 0  # how many new states each merge task deep-checks against annotations
        # --checkpoint: the directory every executor sees, where each level's blocks are files
        # (spark_checkpoint), and the level the merge tasks of the running job write.
        self.root: str | None = None
        self.level = 0

    def codec(self) -> _Codec:
        codec = _codec(self.state_type)
        if not self.plain_ok and codec.plain:
            codec = _Codec(object)
        return codec


class _StatsParam:
    """Accumulator of per-task statistics, keyed by (stage, partition): idempotent under retries."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:  # noqa: N802 - pyspark's name
        a.update(b)
        return a


def _rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _sources(spec: Spec) -> tuple[str, str]:
    import kafkamc

    mod = sys.modules.get(type(spec).__module__)
    return getattr(kafkamc, "__file__", "") or "", getattr(mod, "__file__", "") or ""


def _member(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of ``keys`` are in the sorted array (vectorised binary search)."""
    if sorted_keys.size == 0 or keys.size == 0:
        return np.zeros(keys.size, dtype=bool)
    pos = np.searchsorted(sorted_keys, keys)
    pos[pos == sorted_keys.size] = sorted_keys.size - 1
    return sorted_keys[pos] == keys


def _without_gc(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a task with the cyclic garbage collector off: a task allocates millions of tuples that
    all survive it, and every collection would traverse them (immutable states make no cycles)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return fn(*args)
    finally:
        if enabled:
            gc.enable()


def _chain(digest: int, fingerprint: int) -> int:
    """The digest of the fingerprints along a state's path, extended by one state. Executors keep
    no parent links, so the driver checks a replayed counterexample's states against this."""
    return hash((digest, fingerprint))


def _init_block(job: _Job, acc: Any, index: int, it: Any) -> Any:
    """Partition ``index`` of level 1 from the driver's initial states (already checked)."""
    keys: list[np.ndarray] = []
    entries: list = []
    for _, payload in it:
        kb, paths, states = marshal.loads(payload)
        ks = np.frombuffer(kb, dtype=np.int64)
        keys.append(ks)
        entries.extend((path, sb, -1, _chain(0, k)) for path, sb, k in zip(paths, states, ks.tolist()))
    v = np.sort(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
    entries.sort()
    return _store(job, acc, index, (v, _pack_frontier(entries), len(entries)), {})


def _store(job: _Job, acc: Any, index: int, block: tuple, stats: dict) -> Any:
    """The block a task made: kept in Spark's cache, or with --checkpoint written to a file
    (whose name the driver learns through the statistics) and read back by the next level."""
    if job.root is not None:
        stats["block"] = spark_checkpoint.write_block(job.root, job.level, index, *block)  # name, SHA-256, size
    acc.add({("m", index): stats})
    return iter([] if job.root is not None else [block])


def _read_block(job: _Job, files: Sequence[tuple[str, str]], index: int, it: Any) -> Any:
    """Partition ``index`` of a level recorded with --checkpoint, from its file (name, SHA-256)."""
    for _ in it:
        pass
    return iter([spark_checkpoint.read_block(job.root, *files[index])])


def _pack_frontier(entries: list) -> bytes:
    """(paths, states, actions, digests): per state its path, its encoding, the action that
    yielded it (-1 for an initial state) and the digest of the fingerprints along its path."""
    return marshal.dumps(tuple([e[c] for e in entries] for c in range(4)), 4)


def _expand(job: _Job, acc: Any, index: int, it: Any) -> Any:
    return _without_gc(_expand_body, job, acc, index, it)


def _expand_body(job: _Job, acc: Any, index: int, it: Any) -> Any:
    """Stage 1: expand this partition's frontier, emit (owner, packed batch) per owner partition."""
    started = time.perf_counter()
    block = None
    for block in it:
        pass
    visited, fbytes, count = block
    generated = 0
    dead = aprop_bad = err = None
    fps: dict[bytes, tuple[int, int]] = {}  # a reported path: its state's fingerprint and path digest
    nact = len(type(job.spec).actions())
    cov_en, cov_gen = [0] * nact, [0] * nact
    out: list = []
    if count:
        spec = job.spec
        p = spec.p
        codec = job.codec()
        loads = codec.loads
        frontier = marshal.loads(fbytes)
        paths, states, chains = frontier[0], frontier[1], frontier[3]
        key, _ = state_key_function(spec, loads(states[0]), job.symmetry)
        actions = [(ai, a.name, a.fn) for ai, a in enumerate(type(spec).actions())]
        constraint = spec.constraint
        aprops = job.aprops
        deadlock = job.deadlock
        cands: dict[int, tuple] = {}
        for path, sb, ch in zip(paths, states, chains):
            s = loads(sb)
            if constraint is not None and not constraint(p, s):
                continue
            i = 0
            try:
                for ai, aname, fn in actions:
                    j = i
                    for label, t in fn(p, s):
                        k = key(t)
                        if aprops and aprop_bad is None:
                            flabel = format_label(aname, label)
                            for n, (pname, pfn) in enumerate(aprops):
                                r = pfn(p, s, flabel, t)
                                if r is not True and fails(r, f"action property {pname} ({flabel})", s):
                                    aprop_bad = (path + _step(i), n)
                                    fps[aprop_bad[0]] = (k, _chain(ch, k))
                                    break
                        if k not in cands:
                            cands[k] = (path, i, t, ai, ch)
                        i += 1
                    if i != j:
                        cov_en[ai] += 1
                        cov_gen[ai] += i - j
            except Exception as exc:
                # The driver re-runs this state's expansion to raise the very same error.
                err = (path, f"{type(exc).__name__}: {exc}")
                break
            generated += i
            if i == 0 and deadlock and dead is None:
                dead = path
                fps[path] = (key(s), ch)
        if cands:
            P = job.partitions
            keys = np.fromiter(cands, dtype=np.int64, count=len(cands))
            owners = (keys.view(np.uint64) % np.uint64(P)).astype(np.intp)
            drop = np.zeros(keys.size, dtype=bool)
            own = np.flatnonzero(owners == index)
            if own.size and visited.size:
                drop[own] = _member(visited, keys[own])
            bk: list[list[int]] = [[] for _ in range(P)]
            bp: list[list[bytes]] = [[] for _ in range(P)]
            bs: list[list[bytes]] = [[] for _ in range(P)]
            ba: list[list[int]] = [[] for _ in range(P)]
            bc: list[list[int]] = [[] for _ in range(P)]
            dumps = codec.dumps
            try:
                for (k, (path, i, t, ai, ch)), o, d in zip(cands.items(), owners.tolist(), drop.tolist()):
                    if not d:
                        bk[o].append(k)
                        bp[o].append(path + _step(i))
                        bs[o].append(dumps(t))
                        ba[o].append(ai)
                        bc[o].append(_chain(ch, k))
                for j in range(P):
                    if bk[j]:
                        out.append((j, marshal.dumps(
                            (np.array(bk[j], dtype=np.int64).tobytes(), bp[j], bs[j], ba[j], bc[j]), 4)))
            except Exception as exc:
                if err is None:
                    err = (b"", f"encoding a state for the shuffle failed: {type(exc).__name__}: {exc}")
                out = []
    acc.add({("x", index): {
        "generated": generated, "deadlock": dead, "aprop": aprop_bad, "error": err, "fps": fps,
        "coverage": (cov_en, cov_gen),
        "expanded": count, "seconds": time.perf_counter() - started, "rss_kb": _rss_kb(),
        "sources": _sources(job.spec),
    }})
    return iter(out)


def _merge(job: _Job, acc: Any, index: int, it: Any) -> Any:
    block, stats = _without_gc(_merge_body, job, index, it)
    return _store(job, acc, index, block, stats)


def _merge_body(job: _Job, index: int, it: Any) -> tuple[tuple, dict]:
    """Stage 2: the cached block ``index`` plus the batches shuffled to it; the next block and
    the task's statistics."""
    started = time.perf_counter()
    visited = None
    keys: list[np.ndarray] = []
    paths: list[bytes] = []
    states: list[bytes] = []
    acts: list[int] = []  # the action that yielded each state (coverage)
    chains: list[int] = []  # the digest of the fingerprints along each state's path
    for item in it:
        if isinstance(item[0], np.ndarray):
            visited = item[0]
            continue
        kb, ps, ss, aa, cc = marshal.loads(item[1])
        keys.append(np.frombuffer(kb, dtype=np.int64))
        paths.extend(ps)
        states.extend(ss)
        acts.extend(aa)
        chains.extend(cc)
    if visited is None:
        raise RuntimeError(f"kafkamc: the visited block of partition {index} is missing from the union")
    inv_bad = inv_err = invalid = first_new = None
    inv_fp = None
    dist = [0] * len(type(job.spec).actions())
    order: list[int] = []  # the new states' positions in the batches, in path order
    if paths:
        ks = np.concatenate(keys)
        fresh = ~_member(visited, ks)
        best: dict[int, int] = {}
        get = best.get
        for n, (k, f) in enumerate(zip(ks.tolist(), fresh.tolist())):
            if f:
                b = get(k)
                if b is None or paths[n] < paths[b]:
                    best[k] = n
        order = sorted(best.values(), key=paths.__getitem__)  # paths are distinct: no ties
        for n in order:
            dist[acts[n]] += 1
        if order:
            first_new = paths[order[0]]
            new_keys = np.fromiter(best, dtype=np.int64, count=len(best))
            visited = np.concatenate((visited, np.sort(new_keys)))
            visited.sort(kind="stable")  # two sorted runs: a linear merge
        invs = job.invs
        budget = job.validate
        if invs or budget:
            p = job.spec.p
            loads = job.codec().loads
            for at in order:
                path, sb = paths[at], states[at]
                checking = inv_bad is None and inv_err is None and invs
                if not checking and budget <= 0:
                    break
                t = loads(sb)
                if budget > 0:
                    budget -= 1
                    if invalid is None:
                        try:
                            _validate_stable(t, "state")
                        except UsageError as exc:
                            invalid = (path, str(exc))
                if checking:
                    try:
                        for n, (name, fn) in enumerate(invs):
                            r = fn(p, t)
                            if r is not True and fails(r, f"invariant {name}", t):
                                inv_bad = (path, n)
                                break
                    except Exception as exc:
                        inv_err = (path, f"{type(exc).__name__}: {exc}")
    if inv_bad is not None:
        inv_fp = next((k, chains[n]) for k, n in best.items() if paths[n] == inv_bad[0])
    # The columns _pack_frontier writes, without building a tuple per state.
    packed = marshal.dumps(tuple([col[n] for n in order] for col in (paths, states, acts, chains)), 4)
    return (visited, packed, len(order)), {
        "new": len(order), "invariant": inv_bad, "error": inv_err, "invalid": invalid, "invariant_fp": inv_fp,
        "distinct_by_action": dist,
        "first_new": first_new, "visited": int(visited.size), "frontier_bytes": len(packed),
        "seconds": time.perf_counter() - started, "rss_kb": _rss_kb(),
    }


def _first_paths(job: _Job, limit: int, it: Any) -> Any:
    """The ``limit`` smallest paths of the new frontier in this block (a bounded run's cutoff)."""
    out: list = []
    for _, fbytes, count in it:
        if count:
            frontier = marshal.loads(fbytes)
            out.extend(zip(frontier[0][:limit], frontier[2][:limit]))
    return iter([out])


def _count_before(job: _Job, bound: bytes, it: Any) -> Any:
    return _without_gc(_count_before_body, job, bound, it)


def _count_before_body(job: _Job, bound: bytes, it: Any) -> Any:
    """Successors of this block's frontier states whose path is below ``bound`` (bounded runs), and
    per action the states it was enabled on and the successors it generated among them."""
    total = 0
    spec = job.spec
    p = spec.p
    constraint = spec.constraint
    codec = job.codec()
    actions = type(spec).actions()
    en, gen = [0] * len(actions), [0] * len(actions)
    for _, fbytes, count in it:
        if not count:
            continue
        frontier = marshal.loads(fbytes)
        for path, sb in zip(frontier[0], frontier[1]):
            if path >= bound:
                break
            s = codec.loads(sb)
            if constraint is not None and not constraint(p, s):
                continue
            for ai, act in enumerate(actions):
                c = 0
                for _ in act.fn(p, s):
                    c += 1
                if c:
                    en[ai] += 1
                    gen[ai] += c
                    total += c
    return iter([(total, en, gen)])


# -- the Spark context and shipping code ----------------------------------------------------

_TMP: list[str] = []
_SHIPPED: dict[str, set[str]] = {}


def _tmpdir() -> str:
    if not _TMP:
        path = tempfile.mkdtemp(prefix="kafkamc-spark-")
        _TMP.append(path)
        atexit.register(shutil.rmtree, path, True)
    return _TMP[0]


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        exe = os.path.join(home, "bin", "java")
        return exe if os.access(exe, os.X_OK) else None
    return shutil.which("java")


def _check_master(master: str) -> None:
    """Fail fast (instead of Spark's minute of retries) when no standalone master answers."""
    hosts = master[len("spark://"):].split(",")
    errors = []
    for hp in hosts:
        host, _, port = hp.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
                return
        except (OSError, ValueError) as exc:
            errors.append(f"{hp}: {exc}")
    raise EngineError(f"Spark master {master} is unreachable ({'; '.join(errors)})")


# Spark prints a shell's default log level (PySpark's gateway counts as a shell) unless the shell's
# logger has its own appender and the root's level; job failures reach the user as EngineError.
_QUIET_LOG4J = """\
rootLogger.level = fatal
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = fatal
logger.repl.additivity = false
logger.repl.appenderRef.stderr.ref = console
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = fatal
logger.gateway.additivity = false
logger.gateway.appenderRef.stderr.ref = console
"""


def _context(master: str | None) -> tuple[Any, bool]:
    """The active SparkContext (kept), or a new one this run owns and stops."""
    from pyspark import SparkConf, SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        if master is not None and master != active.master:
            raise UsageError(
                f"--master {master}: this process already runs a Spark context on {active.master}; "
                "allowed: that master, or no --master"
            )
        return active, False
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    verbose = bool(os.environ.get("KAFKAMC_SPARK_VERBOSE"))
    if under_submit:
        conf = SparkConf()
        if master is not None:
            conf.setMaster(master)
    else:
        if _java() is None:
            raise EngineError(
                "no Java runtime found: Spark needs Java 17 or 21 (install one, or set JAVA_HOME)"
            )
        master = master or "local[*]"
        if master.startswith("spark://"):
            _check_master(master)
        conf = SparkConf(loadDefaults=False).setMaster(master)
        if not verbose:
            log4j = os.path.join(_tmpdir(), "log4j2.properties")
            with open(log4j, "w", encoding="utf-8") as fh:
                fh.write(_QUIET_LOG4J)
            conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        if not os.environ.get("PYSPARK_PYTHON"):
            conf.set("spark.pyspark.python", sys.executable)
        if master.startswith("local"):
            conf.set("spark.ui.enabled", "false")
    conf.setAppName("kafkamc")
    conf.set("spark.ui.showConsoleProgress", "false")
    try:
        sc = SparkContext(conf=conf)
    except Exception as exc:
        raise EngineError(f"cannot start Spark on {master}: {_summary(exc)}") from None
    if not verbose:
        sc.setLogLevel("FATAL")
    if sc.master.startswith("spark://"):
        deadline = time.monotonic() + EXECUTOR_WAIT
        while sc._jsc.sc().getExecutorMemoryStatus().size() < 2:
            if time.monotonic() > deadline:
                sc.stop()
                raise EngineError(
                    f"no executor registered with Spark master {sc.master} within {EXECUTOR_WAIT:.0f} s "
                    "(are workers alive, with free cores and memory?)"
                )
            time.sleep(0.2)
    return sc, True


def _summary(exc: BaseException) -> str:
    """The readable part of a Py4J or PySpark error: Spark's reason for aborting the job and, for
    a Python failure, the last line of the Python traceback."""
    lines = [ln.rstrip() for ln in str(exc).splitlines()]
    marker = "Job aborted due to stage failure:"
    head = next((ln[ln.index(marker):] for ln in lines if marker in ln), None)
    if head is not None:
        head = head.split(". Consider setting", 1)[0]
    python = None
    for i, ln in enumerate(lines):
        if "PythonException:" in ln:
            for follow in lines[i + 1:]:
                if follow.lstrip().startswith("at ") or follow.startswith("\tat "):
                    break
                if follow.strip():
                    python = follow.strip()
            break
    parts = [part for part in (head, python) if part]
    if not parts:
        parts = [ln.strip() for ln in lines if ln.strip()][:2] or [type(exc).__name__]
    return " | ".join(parts)[:800]


def _ship_modules(spec: Spec, props: Sequence[Property], state_type: type) -> list[str]:
    """Top-level packages the executors must import: kafkamc and the spec's own modules."""
    mods = {"kafkamc"}
    objs: list[Any] = list(type(spec).__mro__[:-1]) + [a.fn for a in spec.actions()]
    objs += [pr.fn for pr in props] + [state_type]
    for hook in (spec.constraint, spec.symmetry, spec.view):
        if hook is not None:
            objs.append(hook)
    for obj in objs:
        name = getattr(obj, "__module__", None)
        if not name or name == "builtins":
            continue
        if name == "__main__":
            raise UsageError(
                f"{getattr(obj, '__qualname__', obj)} is defined in __main__, which Spark executors cannot "
                "import; put the spec in a module and name it as module:Class"
            )
        mods.add(name.split(".")[0])
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    out = []
    for top in sorted(mods):
        module = sys.modules.get(top) or importlib.import_module(top)
        fname = getattr(module, "__file__", None)
        if not fname or os.path.realpath(fname).startswith(stdlib + os.sep):
            continue
        if top in ("pyspark", "numpy", "py4j"):
            continue
        out.append(top)
    return out


def _zip_module(top: str) -> str:
    """A zip of the top-level module or package ``top`` ('' when it cannot or need not be zipped)."""
    module = sys.modules[top]
    fname = os.path.realpath(module.__file__)
    if not os.path.isfile(fname):
        return ""  # imported from a zip already (spark-submit --py-files), which Spark distributes
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        if os.path.basename(fname) == "__init__.py":
            root = os.path.dirname(fname)
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
                for f in sorted(filenames):
                    if f.endswith((".pyc", ".pyo")):
                        continue
                    full = os.path.join(dirpath, f)
                    arc = os.path.join(top, os.path.relpath(full, root))
                    zf.writestr(zipfile.ZipInfo(arc, (1980, 1, 1, 0, 0, 0)), open(full, "rb").read())
        elif fname.endswith(".py"):
            zf.writestr(zipfile.ZipInfo(os.path.basename(fname), (1980, 1, 1, 0, 0, 0)), open(fname, "rb").read())
        else:
            return ""  # an extension module cannot be imported from a zip; it must be installed
    data = buf.getvalue()
    digest = hashlib.sha1(data).hexdigest()[:12]
    path = os.path.join(_tmpdir(), f"kafkamc-ship-{top}-{digest}.zip")
    if not os.path.exists(path):
        with open(path + ".tmp", "wb") as fh:
            fh.write(data)
        os.replace(path + ".tmp", path)
    return path


def _ship(sc: Any, spec: Spec, props: Sequence[Property], state_type: type) -> list[str]:
    shipped = _SHIPPED.setdefault(sc.applicationId, set())
    names = []
    for top in _ship_modules(spec, props, state_type):
        path = _zip_module(top)
        if not path:
            continue
        name = os.path.basename(path)
        names.append(name)
        if name not in shipped:
            sc.addPyFile(path)
            shipped.add(name)
    return names


# -- the driver ----------------------------------------------------------------------------


def explore_spark(
    spec: Spec,
    properties: Sequence[Property] | None = None,
    *,
    master: str | None = None,
    partitions: int | None = None,
    max_depth: int | None = None,
    max_states: int | None = None,
    symmetry: bool = False,
    deadlock: bool = False,
    progress: Progress | None = None,
    checkpoint: spark_checkpoint.SparkCheckpointer | None = None,
) -> CheckResult:
    """Explore ``spec`` breadth-first on Spark; the same result as ``kafkamc.checker.local.explore``.

    ``checkpoint``: reliable checkpoints in a directory every executor sees (``spark_checkpoint``;
    the caller holds it open and has refused a checkpoint of another run): each level's blocks are
    files there, the driver's state is recorded after each level, and a checkpoint being resumed
    goes on from its last recorded level.
    """
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise UsageError(f"--partitions {partitions!r} is not allowed; allowed: a positive integer")
    for name, bound in (("max_depth", max_depth), ("max_states", max_states)):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 1):
            raise UsageError(f"{name}={bound!r} is not allowed; allowed: a positive integer")
    props = tuple(spec.default_properties() if properties is None else properties)
    invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]
    aprops = [(pr.name, pr.fn) for pr in props if pr.kind == "action"]
    resumed = resumed_files = None
    if checkpoint is not None:
        back = checkpoint.resumed_level()
        if back is not None:
            resumed, resumed_files = back
            if partitions is not None and partitions != resumed.partitions:
                raise UsageError(f"--partitions {partitions}: the checkpoint in {checkpoint.directory} has "
                                 f"{resumed.partitions} partitions; allowed: {resumed.partitions}, or no --partitions")
            partitions = resumed.partitions
    p = spec.p
    started = time.perf_counter()
    extra: dict[str, Any] = {"levels": []}

    # Level 1 on the driver, exactly as the local engine does it.
    inits = spec.initial()
    key, fpr = state_key_function(spec, inits[0], symmetry)

    names = [a.name for a in spec.actions()]
    # enabled, generated, distinct per action
    state = {"distinct": 0, "generated": len(inits), "depth": 1,
             "coverage": ([0] * len(names), [0] * len(names), [0] * len(names))}
    init_fps: dict[int, int] = {}

    def result(kind: str, violated: str | None = None, path: Sequence[int] | None = None,
               reason: str | None = None, last_fp: tuple[int, int] | None = None) -> CheckResult:
        trace = None
        if path is not None:
            # The executors keep no parent links; what they report with a violation is the last
            # state's fingerprint and the digest of the fingerprints along its path (_chain), so
            # every replayed state is checked, those in between through the digest at the end.
            end = len(path) - 1
            digest = [0]

            def expected(j: int, fp: int) -> bool | None:
                digest[0] = _chain(digest[0], fp)  # checked_replay asks once per position, in order
                if j == end and last_fp is not None:
                    return fp == last_fp[0] and digest[0] == last_fp[1]
                return fp == init_fps.get(path[0]) if j == 0 else None

            trace = checked_replay(spec, list(path), violated, props, key=key, expected=expected)
        return CheckResult(
            spec=spec.name, params=p.as_dict(), engine="spark", result=kind,
            invariants=tuple(pr.name for pr in props) + ((DEADLOCK,) if deadlock else ()),
            violated=violated, distinct_states=state["distinct"], states_generated=state["generated"],
            depth=state["depth"], seconds=time.perf_counter() - started, trace=trace, reason=reason,
            symmetry=symmetry, extra=extra, coverage=coverage_of(names, *state["coverage"]),
        )

    seen: set[int] = set()
    init_entries: list[tuple[int, bytes, Any]] = []
    bad: tuple[str, list[int]] | None = None
    for i, s in enumerate(inits):
        fpr.check(s)
        k = key(s)
        if k in seen:
            continue
        if max_states is not None and len(seen) >= max_states:
            return result(INCOMPLETE, reason="max-states")
        seen.add(k)
        init_fps[i] = k
        state["distinct"] = len(seen)
        if i > MAX_INDEX:
            raise UsageError(f"spec {spec.name} has more than {MAX_INDEX + 1} initial states")
        init_entries.append((k, _step(i), s))
        if bad is None:
            name = first_violation(p, s, invs)
            if name is not None:
                bad = (name, [i], k)
    if progress and resumed is None:
        progress(LevelStats(1, len(seen), state["generated"], len(init_entries), time.perf_counter() - started))
    if bad is not None:
        return result(VIOLATION, bad[0], bad[1], last_fp=(bad[2], _chain(0, bad[2])))

    state_type = type(inits[0])
    codec = _codec(state_type)
    plain_ok = codec.plain and all(type(s) is state_type and codec.round_trips(s) for _, _, s in init_entries)
    if not plain_ok:
        codec = _Codec(object)
    if resumed is not None:
        if resumed.plain_codec != plain_ok:
            raise UsageError(f"--resume {checkpoint.directory}: the checkpoint's states were encoded otherwise "
                             "than this spec's are now; allowed: the spec it was written with")
        state.update(distinct=resumed.distinct, generated=resumed.generated, depth=resumed.depth,
                     coverage=tuple(list(c) for c in resumed.coverage))
        extra["levels"] = [dict(lv) for lv in resumed.levels]

    t0 = time.perf_counter()
    stop = JobStop()
    sc, owned = _context(master)
    stop.arm(sc)
    extra["startup_seconds"] = time.perf_counter() - t0
    blocks_made: list[Any] = []
    try:
        return _run(
            sc, spec, props, invs, aprops, init_entries, codec, state, result, extra, blocks_made,
            partitions=partitions, max_depth=max_depth, max_states=max_states, symmetry=symmetry,
            deadlock=deadlock, progress=progress, started=started,
            state_type=state_type, fpr=fpr, plain_ok=plain_ok,
            stop=stop, checkpoint=checkpoint, resumed=resumed, resumed_files=resumed_files,
        )
    finally:
        stop.disarm()
        for rdd in blocks_made:
            try:
                rdd.unpersist()
            except Exception:
                pass
        if owned:
            try:
                sc.stop()
            except Exception:
                pass


def _run(sc: Any, spec: Spec, props: Sequence[Property], invs: list, aprops: list, init_entries: list,
         codec: _Codec, state: dict, result: Callable[..., CheckResult], extra: dict, blocks_made: list, *,
         partitions: int | None, max_depth: int | None, max_states: int | None, symmetry: bool,
         deadlock: bool, progress: Progress | None, started: float, plain_ok: bool, state_type: type,
         fpr: Fingerprinter, stop: JobStop | None = None,
         checkpoint: spark_checkpoint.SparkCheckpointer | None = None,
         resumed: spark_checkpoint.LevelState | None = None, resumed_files: list | None = None) -> CheckResult:
    from pyspark import RDD, StorageLevel
    from pyspark.serializers import BatchedSerializer, CPickleSerializer

    P = partitions or max(1, sc.defaultParallelism)
    t0 = time.perf_counter()
    extra.update(master=sc.master, partitions=P, shipped=_ship(sc, spec, props, state_type),
                 codec="plain tuples" if plain_ok else "pickle")
    extra["ship_seconds"] = time.perf_counter() - t0
    job = _Job(spec, props, symmetry=symmetry, deadlock=deadlock, partitions=P, state_type=state_type,
               plain_ok=plain_ok)
    root = job.root = None if checkpoint is None else checkpoint.root()
    mask = (1 << 64) - 1
    per_owner: list[tuple[list[int], list[bytes], list[bytes]]] = [([], [], []) for _ in range(P)]
    for k, path, s in init_entries:
        o = (k & mask) % P
        per_owner[o][0].append(k)
        per_owner[o][1].append(path)
        per_owner[o][2].append(codec.dumps(s))
    payloads = [(j, marshal.dumps((np.array(ks, dtype=np.int64).tobytes(), ps, ss), 4))
                for j, (ks, ps, ss) in enumerate(per_owner)]
    storage = StorageLevel.MEMORY_AND_DISK
    sources: set[tuple[str, str]] = set()
    executor_rss = 0

    def materialise(rdd: Any) -> None:
        spark_job(rdd._jrdd.count)

    def spark_job(run: Callable[[], Any]) -> Any:
        if stop is not None:
            stop.check()
        try:
            return run()
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            if stop is not None:
                stop.check()  # a job cancelled on Ctrl-C/SIGTERM fails: that is the stop, not an error
            hint = ""
            if root is None and "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND" in str(exc):
                hint = ("; an executor was lost with blocks of the visited set, which local checkpoints cannot "
                        "recompute: run with --checkpoint DIR, on a filesystem every executor sees, to survive it")
            elif checkpoint is not None and checkpoint.saved is not None:
                hint = (f"; {checkpoint.directory} holds level {checkpoint.saved.depth}: continue with "
                        f"kafkamc check --resume {checkpoint.directory}")
            raise EngineError(
                f"the Spark job failed: {_summary(exc)}{hint} (KAFKAMC_SPARK_VERBOSE=1 shows Spark's log)"
            ) from None

    slots = None  # with --checkpoint: one empty element per partition, placed by _owner

    def reader(files: Sequence[Any]) -> Any:
        """The blocks of a level read from their files, partitioned as the shuffles are."""
        nonlocal slots
        if slots is None:
            slots = sc.parallelize([(j, b"") for j in range(P)], P).partitionBy(P, _owner)
            slots.persist(storage)
            blocks_made.append(slots)
        rdd = slots.mapPartitionsWithIndex(partial(_read_block, job, [(f.name, f.sha256) for f in files]),
                                           preservesPartitioning=True)
        rdd.persist(storage)
        blocks_made.append(rdd)
        return rdd

    def record(at: int, files: Sequence[Any], frontier: int) -> None:
        """The driver's state after level ``at`` (complete, its blocks written)."""
        checkpoint.record(spark_checkpoint.LevelState(
            level=at, partitions=P, distinct=state["distinct"], generated=state["generated"],
            depth=state["depth"], frontier=frontier, coverage=tuple(tuple(c) for c in state["coverage"]),
            plain_codec=plain_ok, levels=tuple(extra["levels"])), files)

    t0 = time.perf_counter()
    if resumed is not None:
        level, frontier = resumed.level, resumed.frontier
        blocks = reader(resumed_files)
    else:
        level, frontier = 0, len(init_entries)
        acc = sc.accumulator({}, _StatsParam())
        blocks = sc.parallelize(payloads, P).partitionBy(P, _owner).mapPartitionsWithIndex(
            partial(_init_block, job, acc), preservesPartitioning=True)
        if root is None:
            blocks.persist(storage)
            blocks_made.append(blocks)
        try:
            materialise(blocks)
        except KeyboardInterrupt as exc:
            return result(INCOMPLETE, reason=stop_reason(exc))
        if root is not None:
            files = _blocks(acc.value, P)
            record(0, files, frontier)
            blocks = reader(files)
    extra["first_job_seconds"] = time.perf_counter() - t0
    try:
        while frontier:
            level_started = time.perf_counter()
            depth = state["depth"]
            last_level = max_depth is not None and depth >= max_depth
            job.validate = max(0, Fingerprinter.VALIDATE_FIRST - state["distinct"]) if fpr.fast else 0
            job.level = level + 1  # the level the merge tasks write with --checkpoint
            acc = sc.accumulator({}, _StatsParam())
            expanded = blocks.mapPartitionsWithIndex(partial(_expand, job, acc))
            shuffled = expanded.partitionBy(P, _owner)
            union = RDD(blocks._jrdd.union(shuffled._jrdd), sc, BatchedSerializer(CPickleSerializer()))
            if union.getNumPartitions() != P:
                raise EngineError("internal: the cached blocks and the shuffle are not co-partitioned")
            nxt = union.mapPartitionsWithIndex(partial(_merge, job, acc), preservesPartitioning=True)
            level += 1
            if root is None:
                nxt.persist(storage)
                blocks_made.append(nxt)
                if level % CHECKPOINT_EVERY == 0:
                    nxt.localCheckpoint()
            materialise(nxt)
            storage_used = _storage_used(sc)
            stats = acc.value
            xs = [stats.get(("x", i)) for i in range(P)]
            ms = [stats.get(("m", j)) for j in range(P)]
            if any(x is None for x in xs) or any(m is None for m in ms):
                raise EngineError("internal: a task's statistics are missing")
            for x in xs:
                sources.add(tuple(x["sources"]))
                executor_rss = max(executor_rss, x["rss_kb"])
            for m in ms:
                executor_rss = max(executor_rss, m["rss_kb"])
            gen_level = sum(x["generated"] for x in xs)
            new_total = sum(m["new"] for m in ms)
            errs = [x["error"] for x in xs if x["error"] is not None]
            expand_err = min(errs) if errs else None
            # Where the local engine would stop inside this level, if it does.
            cut_k = None
            if last_level and new_total:
                cut_k, reason = 0, "max-depth"
            elif max_states is not None and state["distinct"] + new_total > max_states:
                cut_k, reason = max_states - state["distinct"], "max-states"
            if root is not None:
                files = _blocks(stats, P)
                nxt = reader(files)
            if cut_k is not None:
                firsts = spark_job(nxt.mapPartitions(partial(_first_paths, job, cut_k + 1)).collect)
                admitted = sorted(entry for part in firsts for entry in part)
                cut = admitted[cut_k][0]
                parent, last_index = _split_last(cut)
                if expand_err is not None and expand_err[0] < parent:
                    _raise_expand_error(spec, invs, aprops, symmetry, expand_err)
                _raise_invariant_error(spec, invs, xs, ms, cut)
                counted = spark_job(blocks.mapPartitions(partial(_count_before, job, parent)).collect)
                partial_gen = sum(c[0] for c in counted)
                state["generated"] += partial_gen + last_index + 1
                cov = state["coverage"]
                for _, en, gen in counted:
                    _add(cov[0], en)
                    _add(cov[1], gen)
                _add_partial(spec, _unpath(parent), last_index, cov)
                for _, ai in admitted[:cut_k]:
                    cov[2][ai] += 1
                state["distinct"] += cut_k
                _finish(extra, sources, executor_rss)
                return result(INCOMPLETE, reason=reason)
            if expand_err is not None:
                _raise_expand_error(spec, invs, aprops, symmetry, expand_err)
            invalid = [m["invalid"] for m in ms if m["invalid"] is not None]
            if invalid:
                _raise_invalid(spec, min(invalid))
            found = _found(xs, ms, invs, aprops)
            _raise_invariant_error(spec, invs, xs, ms, None)
            state["generated"] += gen_level
            cov = state["coverage"]
            for x in xs:
                _add(cov[0], x["coverage"][0])
                _add(cov[1], x["coverage"][1])
            for m in ms:
                _add(cov[2], m["distinct_by_action"])
            state["distinct"] += new_total
            if new_total:
                state["depth"] += 1
            seconds = time.perf_counter() - started
            extra["levels"].append({
                "level": state["depth"], "seconds": time.perf_counter() - level_started, "new": new_total,
                "generated": gen_level, "distinct": state["distinct"],
                "expand_seconds": max(x["seconds"] for x in xs), "merge_seconds": max(m["seconds"] for m in ms),
                "visited_max_partition": max(m["visited"] for m in ms),
                "frontier_bytes": sum(m["frontier_bytes"] for m in ms),
                "storage_used_bytes": storage_used,
                "checkpoint_bytes": 0 if root is None else sum(f.size for f in files),
            })
            if root is not None and found is None:
                record(level, files, new_total)
            if progress:
                progress(LevelStats(state["depth"], state["distinct"], state["generated"], new_total, seconds))
            blocks.unpersist()
            blocks_made.remove(blocks)
            blocks = nxt
            if root is None and level % CHECKPOINT_EVERY == 0:
                # The levels before the checkpoint are unreachable now; a driver GC lets Spark's
                # ContextCleaner delete their shuffle files on the executors.
                try:
                    sc._jvm.System.gc()
                except Exception:
                    pass
            frontier = new_total
            if found is not None:
                name, path, _, last_fp = found
                state["depth"] = max(state["depth"], len(path))
                _finish(extra, sources, executor_rss)
                return result(VIOLATION, name, path, last_fp=last_fp)
    except KeyboardInterrupt as exc:
        _finish(extra, sources, executor_rss)
        return result(INCOMPLETE, reason=stop_reason(exc))
    _finish(extra, sources, executor_rss)
    return result(OK)


def _blocks(stats: dict, partitions: int) -> list[FileEntry]:
    """The file each merge (or initial) task wrote with --checkpoint, from the task statistics."""
    blocks = [stats.get(("m", j), {}).get("block") for j in range(partitions)]
    if any(b is None for b in blocks):
        raise EngineError("internal: a task's checkpoint block is missing from its statistics")
    return [FileEntry(*b) for b in blocks]


def _storage_used(sc: Any) -> int:
    """Bytes of the cached RDD blocks (in memory or spilled to disk) over every executor, or -1."""
    try:
        return sum(int(info.memSize()) + int(info.diskSize()) for info in sc._jsc.sc().getRDDStorageInfo())
    except Exception:
        return -1


def _finish(extra: dict, sources: set, executor_rss: int) -> None:
    extra["executor_sources"] = sorted(sources)
    extra["executor_python_peak_rss_kb"] = executor_rss
    extra["driver_peak_rss_kb"] = _rss_kb()


def _found(xs: list, ms: list, invs: list, aprops: list) -> tuple[str, list[int], tuple, tuple[int, int]] | None:
    """The violation the local engine reports for this level: (name, path, position, (fingerprint,
    path digest) of the state the path leads to) or None."""
    dead = [(x["deadlock"], x["fps"][x["deadlock"]]) for x in xs if x["deadlock"] is not None]
    if dead:
        path, fp = min(dead)
        return DEADLOCK, _unpath(path), (path, -1), fp
    cands = []
    for x in xs:
        if x["aprop"] is not None:
            path, n = x["aprop"]
            cands.append(((path, 0), aprops[n][0], path, x["fps"][path]))
    for m in ms:
        if m["invariant"] is not None:
            path, n = m["invariant"]
            cands.append(((path, 1), invs[n][0], path, m["invariant_fp"]))
    if not cands:
        return None
    pos, name, path, fp = min(cands)
    return name, _unpath(path), pos, fp


def _add(into: list[int], part: Sequence[int]) -> None:
    for ai, n in enumerate(part):
        into[ai] += n


def _add_partial(spec: Spec, path: list[int], count: int, cov: tuple[list[int], ...]) -> None:
    """Coverage of the first ``count + 1`` successors of the state at ``path`` (a bound stopped there)."""
    s = replay(spec, path).last
    left = count + 1
    for ai, act in enumerate(spec.actions()):
        c = 0
        for _ in act.fn(spec.p, s):
            c += 1
            if c == left:
                break
        if c:
            cov[0][ai] += 1
            cov[1][ai] += c
            left -= c
            if not left:
                return


def _raise_expand_error(spec: Spec, invs: list, aprops: list, symmetry: bool, err: tuple) -> None:
    """Re-run, on the driver, the expansion an executor failed on, and raise what it raises."""
    path, message = err
    if path:
        try:
            s = replay(spec, _unpath(path)).last
        except ReplayError:
            s = None
        if s is not None:
            key, _ = state_key_function(spec, s, symmetry)
            p = spec.p
            try:
                for act in spec.actions():
                    for label, t in act.fn(p, s):
                        key(t)
                        for pname, pfn in aprops:
                            flabel = format_label(act.name, label)
                            r = pfn(p, s, flabel, t)
                            if r is not True:
                                fails(r, f"action property {pname} ({flabel})", s)
            except (KafkamcError, KeyboardInterrupt):
                raise
            except Exception as exc:
                raise _classify(spec, s, exc, invs, aprops) from exc
    if message.startswith("encoding a state"):
        raise UsageError(f"a state does not match its type's annotations ({message})")
    raise EngineError(f"an executor failed expanding the state at path {_unpath(path)}: {message}")


def _raise_invariant_error(spec: Spec, invs: list, xs: list, ms: list, limit: tuple | None) -> None:
    """Raise an invariant's exception as the local engine would: unless the level is cut off
    before it (``limit``, the path of the first state not admitted) or a violation precedes it in
    breadth-first order (the local engine stops evaluating invariants once one is found)."""
    errs = [m["error"] for m in ms if m["error"] is not None]
    if not errs:
        return
    path, message = min(errs)
    if limit is not None and not path < limit:
        return
    # Raw path comparison orders events across levels L and L+1 here: a level-L deadlock path
    # differs from every level-(L+1) path before their ends.
    if any(x["deadlock"] is not None and x["deadlock"] < path for x in xs):
        return
    if any(x["aprop"] is not None and x["aprop"][0] <= path for x in xs):
        return
    if any(m["invariant"] is not None and m["invariant"][0] < path for m in ms):
        return
    t = replay(spec, _unpath(path)).last
    for name, fn in invs:
        try:
            r = fn(spec.p, t)
        except Exception as exc:
            raise SpecRaised(f"invariant {name}", t, exc) from exc
        if r is not True and fails(r, f"invariant {name}", t):
            break  # the local engine stops at a violation
    raise EngineError(f"an invariant raised on an executor but not on the driver: {message}")


def _raise_invalid(spec: Spec, invalid: tuple) -> None:
    path, message = invalid
    try:
        t = replay(spec, _unpath(path)).last
        _validate_stable(t, "state")
    except UsageError:
        raise
    except ReplayError:
        pass
    raise UsageError(message)
