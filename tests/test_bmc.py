"""``kafkamc bmc``: symbolic bounded model checking finds a shortest violation, as breadth-first
``check`` does, replayable; 'none up to K' is incomplete, never ok; unsupported code is exit 3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from enum import IntEnum

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkamc import Param, Spec, action, invariant
from kafkamc.checker.local import explore
from kafkamc.cli.main import main
from kafkamc.counterexamples.trace import replay
from kafkamc.errors import SpecRaised, SymbolicUnsupported, UsageError
from kafkamc.prover.bmc import bmc
from kafkamc.spec import domain as d

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import provespecs as ps  # noqa: E402

HERE = __name__


class Light(IntEnum):
    RED = 0
    GREEN = 1


@dataclass(frozen=True, slots=True)
class Pair:
    x: int
    y: int
    light: Light
    log: tuple[int, ...]  # grows: a new shape at every append


@invariant("bmc-sum-small", "x + y stays below the limit")
def bmc_sum_small(p, s) -> bool:
    return s.x + s.y < p.limit


@invariant("bmc-log-short", "the log is shorter than 3 while the light is red")
def bmc_log_short(p, s) -> bool:
    return not (len(s.log) >= 3 and s.light == Light.RED)


@invariant("bmc-apart", "x and y differ once x has moved (a set of them: hashes each)")
def bmc_apart(p, s) -> bool:
    return s.x == 0 or len({s.x, s.y}) == 2


class Pairs(Spec):
    """x and y count up to ``bound``; y only while the light is green; the log records x."""

    name = "bmc-pairs"
    parameters = (Param("bound", 4, "largest x and y", min=1, max=10),
                  Param("limit", 5, "x + y must stay below it", min=1, max=30))
    invariants = (bmc_sum_small, bmc_log_short, bmc_apart)

    def init_states(p):
        yield Pair(0, 0, Light.RED, ())

    def domain(p):
        return d.Record(Pair, x=d.Int(0, p.bound), y=d.Int(0, p.bound), light=d.Enum(Light),
                        log=d.Bag(d.Int(0, p.bound), 3, sorted=False))

    @action
    def inc_x(p, s):
        if s.x < p.bound:
            yield "IncX", Pair(s.x + 1, s.y, s.light, s.log)

    @action
    def inc_y(p, s):
        if s.y < p.bound and s.light == Light.GREEN:
            yield "IncY", Pair(s.x, s.y + 1, s.light, s.log)

    @action
    def toggle(p, s):
        yield "Toggle", Pair(s.x, s.y, Light.GREEN if s.light == Light.RED else Light.RED, s.log)

    @action
    def record(p, s):
        if len(s.log) < 3:
            yield "Record", Pair(s.x, s.y, s.light, s.log + (s.x,))


@pytest.mark.parametrize("params, inv", [
    ({}, "bmc-sum-small"), ({"limit": 3}, "bmc-sum-small"), ({}, "bmc-log-short"), ({"bound": 2, "limit": 6}, None),
    ({}, "bmc-apart"),  # an invariant that hashes ints: its formula is made once per value of them
])
@pytest.mark.parametrize("encoding", ["classical", "context"])
def test_shortest_violation_as_breadth_first_check_finds(params, inv, encoding):
    spec = Pairs(**params)
    props = [spec.property_named(inv)] if inv else list(spec.properties())
    if encoding == "context":
        # The earlier encoding makes an invariant's formula on symbolic ints: a hash is refused.
        with pytest.raises(SymbolicUnsupported, match="hash"):
            bmc(spec, [spec.property_named("bmc-apart")], 3, encoding=encoding)
        props = [pr for pr in props if pr.name != "bmc-apart"] or [spec.property_named("bmc-sum-small")]
    bfs = explore(spec, props)
    result = bmc(spec, props, 12, encoding=encoding)
    if bfs.result == "ok":
        assert result.result == "incomplete" and result.trace is None  # never "ok"
        return
    # With several invariants, another one may fail first on another state of the same depth.
    assert result.result == "violation" and (result.violated == bfs.violated or len(props) > 1)
    assert len(result.trace) == len(bfs.trace)  # shortest, as breadth-first
    again = replay(spec, result.trace.path)
    assert [s.state for s in again.steps] == [s.state for s in result.trace.steps]
    # One step less: none up to that depth, reported as incomplete.
    short = bmc(spec, props, len(bfs.trace) - 2, encoding=encoding)
    assert short.result == "incomplete" and short.reason == "max-depth"
    assert result.extra["encoding"] == encoding


class ManyStarts(Spec):
    """``starts`` initial counters: at every depth the counter has that many values, so it stays
    symbolic, and hashing it needs one run per value."""

    name = "bmc-many-starts"
    parameters = (Param("bound", 3, "bound", min=1, max=10), Param("starts", 2, "initial counters", min=1, max=400))
    invariants = (ps.count_non_negative,)

    def init_states(p):
        for n in range(p.starts):
            yield ps.Count(n)

    def domain(p):
        return d.Record(ps.Count, n=d.Int(0, max(p.bound, p.starts - 1)))

    @action
    def step(p, s):
        if s.n < p.bound and len({s.n, 1}) > 0:
            yield "Step", ps.Count(s.n + 1)


def test_domain_spec_and_unsupported_code():
    spec = ps.Lagging()
    assert bmc(spec, [spec.property_named("y-non-negative")], 4).result == "incomplete"
    # An int with one value in every state reachable at a depth is run concretely: hashing it is fine.
    one = ps.HashSpec()
    assert bmc(one, list(one.properties())[:1], 3).result == "incomplete"
    # A few values: the shape runs once per valuation of its ints.
    few = ManyStarts(starts=3)
    assert bmc(few, list(few.properties()), 3).result == "incomplete"
    bad = ManyStarts(starts=300)
    with pytest.raises(SymbolicUnsupported, match="hash"):
        bmc(bad, list(bad.properties()), 1)
    glob = ps.GlobalSpec()
    with pytest.raises(SymbolicUnsupported, match="mutable global"):
        bmc(glob, list(glob.properties())[:1], 3)
    with pytest.raises(UsageError, match="invariants"):
        from kafkamc.spec.controller import Controller

        c = Controller()
        bmc(c, [c.property_named("controller-epoch-monotonic")], 2)


def test_cli_json_is_check_json_and_replays(tmp_path, capsys):
    ref = f"{HERE}:Pairs"
    assert main(["bmc", ref, "-i", "bmc-sum-small", "--depth", "10", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"] == "violation" and doc["violated"] == "bmc-sum-small" and doc["engine"] == "bmc"
    assert main(["check", ref, "-i", "bmc-sum-small", "--json"]) == 1
    check_doc = json.loads(capsys.readouterr().out)
    assert len(doc["trace"]) == len(check_doc["trace"])
    assert set(doc) >= set(check_doc) - {"coverage"}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    assert main(["trace", "replay", str(path), "--trust"]) == 0  # reproduces the violation
    assert main(["bmc", ref, "-i", "bmc-sum-small", "--depth", "2"]) == 4
    assert "no violation within 2 steps" in capsys.readouterr().out
    assert main(["bmc", ref, "-i", "bmc-sum-small", "--depth", "10", "--encoding", "context", "--json"]) == 1
    assert len(json.loads(capsys.readouterr().out)["trace"]) == len(check_doc["trace"])
    assert main(["bmc", ref, "-i", "bmc-sum-small", "--depth", "-1"]) == 2
    assert main(["bmc", ref, "-i", "bmc-sum-small", "--depth", "10", "--timeout", "0.000001"]) == 4
    assert "the time limit was reached" in capsys.readouterr().out
    # The JSON says why it stopped: the time limit, not a depth reached.
    assert main(["bmc", ref, "-i", "bmc-sum-small", "--depth", "10", "--timeout", "0.000001", "--json"]) == 4
    assert json.loads(capsys.readouterr().out)["reason"] == "max-time"


@dataclass(frozen=True, slots=True)
class Slots:
    log: tuple[int, ...]
    pos: int
    seen_big: bool  # set from a comparison: a symbolic bool in a successor, split by its values


@invariant("bmc-pos-small", "pos stays below the limit")
def bmc_pos_small(p, s) -> bool:
    return s.pos < p.limit


@invariant("bmc-never-big", "no value above 2 was read")
def bmc_never_big(p, s) -> bool:
    return not s.seen_big


class Reader(Spec):
    """A cursor reads a fixed log; ``log[pos]`` indexes with a state int that is in range in every
    reachable state (out of range only in states no run reaches). ``crash`` makes it read one past
    the end once pos reaches the last slot: an IndexError on a reachable state."""

    name = "bmc-reader"
    parameters = (Param("limit", 9, "pos must stay below it", min=1, max=20),
                  Param("crash", False, "read past the end"))
    invariants = (bmc_pos_small, bmc_never_big)

    def init_states(p):
        yield Slots((1, 3, 2, 5), 0, False)

    def domain(p):
        return d.Record(Slots, log=d.Const((1, 3, 2, 5)), pos=d.Int(0, 4), seen_big=d.Bool())

    @action
    def read(p, s):
        if s.pos < len(s.log) - (0 if p.crash else 1):
            v = s.log[s.pos + (1 if p.crash and s.pos == len(s.log) - 1 else 0)]
            yield "Read", Slots(s.log, s.pos + 1, s.seen_big or v > 2)


def test_index_by_state_int_and_a_stored_comparison():
    spec = Reader()
    bfs = explore(spec, [spec.property_named("bmc-never-big")])
    result = bmc(spec, [spec.property_named("bmc-never-big")], 6)
    assert result.result == "violation" and len(result.trace) == len(bfs.trace) == 3
    assert bmc(spec, [spec.property_named("bmc-pos-small")], 6).result == "incomplete"


def test_a_spec_that_raises_on_a_reachable_state_is_reported_as_check_reports_it():
    spec = Reader(crash=True)
    with pytest.raises(SpecRaised, match="IndexError"):
        explore(spec, [spec.property_named("bmc-pos-small")])
    with pytest.raises(SpecRaised, match="action read raised IndexError"):
        bmc(spec, [spec.property_named("bmc-pos-small")], 8)
    # Not reached within the depth: nothing raised, and the answer is bounded.
    assert bmc(spec, [spec.property_named("bmc-pos-small")], 2).result == "incomplete"


@settings(max_examples=12, deadline=None)
@given(bound=st.integers(1, 4), limit=st.integers(1, 9), depth=st.integers(0, 9))
def test_bmc_agrees_with_breadth_first_check_to_the_same_depth(bound, limit, depth):
    spec = Pairs(bound=bound, limit=limit)
    props = list(spec.properties())
    bfs = explore(spec, props)
    result = bmc(spec, props, depth)
    if bfs.result == "violation" and len(bfs.trace) - 1 <= depth:
        assert result.result == "violation" and len(result.trace) == len(bfs.trace)
    else:
        assert result.result == "incomplete" and result.extra["bmc_depth"] == depth


def _cpu_seconds(pid: int) -> float:
    """User+system CPU seconds of a running process (Linux /proc; 6 s of sleep elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        time.sleep(6)
        return float("inf")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_sigterm_ends_bmc_as_incomplete_with_the_depth_reached():
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkamc", "bmc", "controller", "-p", "fencing=none", "-i",
         "no-stale-request-applied", "--depth", "8"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Past start-up (interpreter, imports, signal handlers) before the signal: by CPU time, which
    # a loaded host does not stretch as it stretches wall time (a fixed 6 s sleep was not enough
    # at load 13 under nice 15).
    waited = time.monotonic()
    while _cpu_seconds(proc.pid) < 3.0 and time.monotonic() - waited < 300 and proc.poll() is None:
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, (out, err)
    # Usually while the relation is made or at a depth; on a very loaded host (load 13, nice 15)
    # possibly still at start-up, before bmc began: then the CLI's own one-line incomplete.
    assert (("stopped at depth" in out or "stopped before" in out) and "(terminated)" in out
            or "terminated: stopped before a result" in err)
    assert "Traceback" not in err


@pytest.mark.parametrize("fencing, inv, states", [
    # KAFKA-6082 before Kafka 2.1 (fencing=epoch): the zombie controller's partition write.
    ("epoch", "zk-writes-fenced", 5),
    # No fencing at all: a broker applies a request of an older controller epoch than it has seen.
    ("none", "no-stale-request-applied", 8),
])
def test_kafka_controller_violations_as_breadth_first_check_finds_them(fencing, inv, states):
    from kafkamc.spec.controller import Controller

    spec = Controller(brokers=2, fencing=fencing)
    props = [spec.property_named(inv)]
    bfs = explore(spec, props)
    result = bmc(spec, props, 7)
    assert result.result == "violation" and result.violated == inv
    assert len(result.trace) == len(bfs.trace) == states
    again = replay(spec, result.trace.path)
    assert [s.state for s in again.steps] == [s.state for s in result.trace.steps]
    # The relation is made once, per shape of the domain, not per depth.
    assert result.extra["shapes"] == 9 and 0 < result.extra["transitions"] < result.extra["paths"]


class NarrowPairs(Pairs):
    """Pairs whose declared domain stops x at 2 while the actions count it to ``bound``: a reachable
    state the encoding cannot represent."""

    name = "bmc-narrow-pairs"

    def domain(p):
        return d.Record(Pair, x=d.Int(0, 2), y=d.Int(0, p.bound), light=d.Enum(Light),
                        log=d.Bag(d.Int(0, 2), 3, sorted=False))


class NoDomain(Spec):
    name = "bmc-no-domain"
    invariants = (ps.count_non_negative,)

    def init_states(p):
        yield ps.Count(0)

    @action
    def step(p, s):
        if s.n < 3:
            yield "Step", ps.Count(s.n + 1)


def test_a_state_outside_the_domain_is_an_error_never_none_up_to_k():
    spec = NarrowPairs(limit=30)
    # Within 2 steps x stays in the domain: a bounded answer.
    assert bmc(spec, [spec.property_named("bmc-sum-small")], 2).result == "incomplete"
    # The third IncX leaves it: named, exit 3, never "no violation within 5 steps".
    with pytest.raises(SymbolicUnsupported, match="inc_x leaves the domain"):
        bmc(spec, [spec.property_named("bmc-sum-small")], 5)
    with pytest.raises(SymbolicUnsupported, match="declares no domain"):
        bmc(NoDomain(), list(NoDomain().properties()), 2)


# --- The bit-blasted unrolling (QF_FD over ranges.py's per-depth ranges) -------------------------

@dataclass(frozen=True, slots=True)
class Versioned:
    version: int  # a ZooKeeper-like version: the domain leaves it open (Int(0))
    writes: int
    log: tuple[int, ...]


@invariant("bmc-version-small", "the version stays below the limit")
def bmc_version_small(p, s) -> bool:
    return s.version < p.limit


class Versions(Spec):
    """A version the domain does not bound, moved by sums, products and a conditional: its range
    at each depth is computed from the moves (``ranges.py``), not read from the domain."""

    name = "bmc-versions"
    parameters = (Param("writes", 3, "writes before a reset", min=1, max=6),
                  Param("cap", 6, "no write once the version reaches it", min=1, max=20),
                  Param("limit", 9, "the version must stay below it", min=1, max=40))
    invariants = (bmc_version_small,)

    def init_states(p):
        yield Versioned(0, 0, ())
        yield Versioned(1, 0, ())

    def domain(p):
        return d.Record(Versioned, version=d.Int(0), writes=d.Int(0, p.writes),
                        log=d.Bag(d.Int(0, p.writes), 2, sorted=False))

    @action
    def write(p, s):
        if s.writes < p.writes and s.version < p.cap:
            yield "Write", Versioned(s.version + s.writes + 1, s.writes + 1, s.log)

    @action
    def double(p, s):
        if s.version < p.cap and s.version > 0:
            yield "Double", Versioned(s.version * 2 if s.writes > 1 else s.version + 1, s.writes, s.log)

    @action
    def reset(p, s):
        if len(s.log) < 2:
            yield "Reset", Versioned(s.version, 0, s.log + (s.writes,))


def _levels(spec, depth):
    """The states first reached at each depth, breadth-first (concretely)."""
    seen = set(spec.initial())
    levels = [list(seen)]
    for _ in range(depth):
        nxt = []
        for s in levels[-1]:
            for _a, _l, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        levels.append(nxt)
    return levels


def test_an_open_ints_range_holds_every_value_reached_at_its_depth():
    import time as _time

    import z3

    from kafkamc.checker.symbolic import Budget
    from kafkamc.prover.layout import Layout
    from kafkamc.prover.ranges import ranges
    from kafkamc.prover.relation import relate

    spec = Versions()
    props = list(spec.properties())
    lay = Layout(Versions.domain(spec.p))
    rels = relate(spec, props, lay, Budget(deadline=_time.monotonic() + 600, max_paths=10_000))
    rng = ranges(lay, [m for r in rels for m in r.moves], [lay.match(s).terms for s in spec.initial()])
    assert rng is not None and ".version" not in rng.fixed and rng.fixed[".writes"] == (0, spec.p.writes)
    reached: set[int] = set()
    for k, level in enumerate(_levels(spec, 8)):
        rng.at(k, "x")
        lo, hi = rng.depths[k][".version"]
        reached |= {s.version for s in level}
        assert lo <= min(reached) and max(reached) <= hi, (k, reached, (lo, hi))
    # A term whose interval is not computed (a remainder by a variable): no ranges, QF_LIA stays.
    from kafkamc.prover.relation import Move

    x = lay.variables
    odd = Move(0, "odd", z3.BoolVal(True), ((".version", x[".version"] % x[".writes"]),))
    assert ranges(lay, [odd], [lay.match(s).terms for s in spec.initial()]) is None


@settings(max_examples=14, deadline=None)
@given(writes=st.integers(1, 4), cap=st.integers(1, 12), limit=st.integers(1, 30), depth=st.integers(0, 8),
       which=st.sampled_from(["versions", "pairs", "narrow"]))
def test_bit_blasted_and_lia_unrollings_answer_alike_at_every_depth(writes, cap, limit, depth, which):
    spec = {"versions": lambda: Versions(writes=writes, cap=cap, limit=limit),
            "pairs": lambda: Pairs(bound=writes, limit=min(limit, 30)),
            "narrow": lambda: NarrowPairs(bound=writes + 2, limit=min(limit, 30))}[which]()
    props = list(spec.properties())[:2]
    answers = []
    for solver in ("fd", "lia"):
        try:
            r = bmc(spec, props, depth, solver=solver)
        except SymbolicUnsupported as exc:  # a successor outside the domain: the same on both
            answers.append(("error", str(exc)))
            continue
        assert r.extra["logic"] == ("QF_FD" if solver == "fd" else "QF_LIA")
        # Each solver may pick another shortest trace: the same length, each replayed concretely.
        answers.append((r.result, r.extra["bmc_depth"], r.violated, r.trace and len(r.trace)))
    assert answers[0] == answers[1]
    bfs = explore(spec, props) if which != "narrow" else None
    if bfs is not None and bfs.result == "violation" and len(bfs.trace) - 1 <= depth:
        assert answers[0][0] == "violation" and answers[0][3] == len(bfs.trace)


_slow = pytest.mark.skipif(not os.environ.get("KAFKAMC_SLOW_TESTS"), reason="slow: set KAFKAMC_SLOW_TESTS=1")


@_slow
def test_controller_three_brokers_bit_blasted_as_breadth_first_check_finds_it():
    """About a minute of CPU: the relation of 21 shapes, then depths 0 to 7 under QF_FD, whose open
    ZooKeeper versions get their ranges from the moves."""
    from kafkamc.spec.controller import Controller

    spec = Controller(fencing="none")
    props = [spec.property_named("no-stale-request-applied")]
    result = bmc(spec, props, 7)
    assert result.extra["logic"] == "QF_FD"
    assert result.result == "violation" and len(result.trace) == len(explore(spec, props).trace) == 8


@settings(max_examples=20, deadline=None)
@given(lo=st.integers(0, 6), cuts=st.lists(st.tuples(st.integers(-2, 9), st.integers(-2, 9)), min_size=2, max_size=12))
def test_a_shapes_formula_keeps_exactly_its_satisfiable_disjuncts(lo, cuts):
    import time as _time

    import z3

    from kafkamc.checker.symbolic import Budget
    from kafkamc.prover.feasible import feasible

    x, y = z3.Ints("fx fy")
    base = z3.And(x >= lo, x <= lo + 2, y >= 0, y <= 3)
    formula = z3.Or([z3.And(x == a, y == b) for a, b in cuts])
    got = feasible(base, formula, Budget(deadline=_time.monotonic() + 60, max_paths=10))
    kept = got.children() if z3.is_or(got) else [] if z3.is_false(got) else [got]
    # The same formula on the base's states, and no disjunct kept that no state of it meets.
    s = z3.Solver()
    s.add(base, got != formula)
    assert s.check() == z3.unsat
    assert all(lo <= a <= lo + 2 and 0 <= b <= 3 for k in kept for a, b in [(k.arg(0).arg(1).as_long(), k.arg(1).arg(1).as_long())])


@dataclass(frozen=True, slots=True)
class Counted:
    a: int
    log: tuple[int, ...]


@invariant("bmc-a-below-2", "a stays below 2")
def bmc_a_below_2(p, s) -> bool:
    return s.a < 2


class EmptyRange(Spec):
    """The log's entries range over ``Int(1, 0)``: no state has an entry, so the shapes with one
    are empty. Their empty interval must bound nothing (it once became a range asserted at every
    depth, which made the bit-blasted unrolling unsatisfiable or unknown)."""

    name = "bmc-empty-range"
    invariants = (bmc_a_below_2,)

    def init_states(p):
        yield Counted(0, ())

    def domain(p):
        return d.Record(Counted, a=d.Int(0, 3), log=d.Bag(d.Int(1, 0), 1, sorted=False))

    @action
    def count(p, s):
        if s.a < 3:
            yield "Count", Counted(s.a + 1, s.log)


def test_an_empty_range_of_an_empty_shape_bounds_nothing():
    spec = EmptyRange()
    bfs = explore(spec, list(spec.properties()))
    for solver in ("fd", "lia"):
        result = bmc(spec, list(spec.properties()), 4, solver=solver)
        assert result.result == "violation" and len(result.trace) == len(bfs.trace) == 3, solver


@pytest.mark.parametrize("nth", [1, 3000, 30000])
def test_a_sigterm_inside_z3s_argument_conversion_ends_bmc_as_incomplete(nth):
    # Z3's ctypes calls run Python (``from_param``) for every argument; a stop raised there comes
    # out of the call as ctypes.ArgumentError. It is the stop: incomplete, never a crash (exit 1,
    # the code of a violation).
    from kafkamc.checker.watch import termination_signals

    seen = [0]

    def tracer(frame, event, arg):
        if frame.f_code.co_name == "from_param" and frame.f_code.co_filename.endswith("z3types.py"):
            up, finalizing = frame.f_back, False
            for _ in range(3):
                finalizing = finalizing or (up is not None and up.f_code.co_name == "__del__")
                up = up.f_back if up is not None else None
            if not finalizing:  # in a __del__ Python drops it, and the stop comes again later
                seen[0] += 1
                if seen[0] == nth:
                    sys.settrace(None)
                    signal.raise_signal(signal.SIGTERM)
        return None

    spec = Pairs()
    with termination_signals():
        sys.settrace(tracer)
        try:
            result = bmc(spec, [spec.property_named("bmc-sum-small")], 6)
        finally:
            sys.settrace(None)
    assert seen[0] >= nth
    assert result.result == "incomplete" and result.reason == "terminated", (result.result, result.reason)
