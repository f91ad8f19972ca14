"""The local engine on several cores, with results identical to the sequential engine.

The parent process owns the one fingerprint set and the parent/successor-index arrays. Each worker
process owns a contiguous segment of the frontier, in breadth-first order, and never sends states:
per level it expands its segment, deduplicates successors locally, and sends back only their
fingerprints with (parent position, successor index, generation ordinal). The parent merges the
workers' lists in segment order (which is exactly the sequential engine's discovery order), decides
which fingerprints are new, and tells each worker which of its candidates to keep as its next
segment. Workers then check invariants on their new states. So distinct states, generated, depth,
verdict and counterexample equal the sequential engine's, whatever the number of workers.

Workers are forked (they inherit the spec and the frontier without pickling) once a level is big
enough to pay for them; small models never leave the parent process.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
import signal
import time
from array import array
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from kafkamc.checker.checkpoint import Boundary, Checkpointer, chunked, write_frontier
from kafkamc.checker.fingerprint import Fingerprinter
from kafkamc.checker.fptable import FingerprintTable
from kafkamc.checker.lineage import MAX_SUCCESSORS, Lineage
from kafkamc.checker.local import (
    Progress, _classify, explore, first_violation, gc_paused, insert_initial, recorded, state_key_function, tally,
    violated_action_property,
)
from kafkamc.checker.manifest import FileEntry
from kafkamc.checker.resources import die_with_parent
from kafkamc.checker.watch import PROGRESS_EVERY, Watch, stop_reason
from kafkamc.result import DEADLOCK, INCOMPLETE, OK, VIOLATION, CheckResult, LevelStats, coverage_of
from kafkamc.counterexamples.checked import checked_replay
from kafkamc.errors import KafkamcError, SpecError, SpecRaised, UsageError
from kafkamc.invariants.api import Property
from kafkamc.spec.api import Spec

__all__ = ["explore_multicore", "available_cores", "FORK_THRESHOLD"]

# A level with fewer states than this is expanded in the parent: forking costs more than it saves.
FORK_THRESHOLD = 2000
# How long a stopped run waits for its workers to set their level aside and write their part of the
# checkpoint's frontier (seconds); a worker stuck longer in a spec's function is killed, and the
# checkpoint is the last one written at a level boundary.
ABANDON_WAIT = 5.0


class _Abandoned(Exception):
    """Raised in a worker, at a state boundary, when the parent abandons the current request."""


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class _Segment:
    """A worker's slice of the frontier and what it knows about the level being built."""

    # Where expand() reports (states expanded, successors generated) as it goes: shared memory
    # the parent reads for progress lines and for the counts of an interrupted level.
    meter: Any = None

    def report(self, expanded: int, generated: int) -> None:
        meter = self.meter
        if meter is not None:
            meter[0] = expanded
            meter[1] = generated
            if meter[2]:
                raise _Abandoned()

    def __init__(self, spec: Spec, props: Sequence[Property], key: Callable[[Any], int],
                 fpr: Fingerprinter, deadlock: bool, frontier: list[Any]) -> None:
        self.spec = spec
        self.p = spec.p
        self.actions = [(ai, a.name, a.fn) for ai, a in enumerate(spec.actions())]
        self.invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]
        self.aprops = [(pr.name, pr.fn) for pr in props if pr.kind == "action"]
        self.key = key
        self.fpr = fpr
        self.deadlock = deadlock
        self.frontier = frontier
        # The segment the last expand() started from: the level boundary's, until the next
        # expand(), whatever keep() and rebalancing did since (a stopped run's checkpoint).
        self.base = frontier
        self.cand: list[Any] = []
        self.cand_where: array = array("q")  # (parent position << 16) | successor index
        self.cand_action: array = array("H")  # the action that yielded each candidate
        self.level_cov: tuple[list[int], list[int]] = ([], [])  # enabled, generated of the last expand

    def expand(self) -> tuple[bytes, bytes, bytes, int, Any, Any, tuple[list[int], list[int]]]:
        """Successors of the segment: first occurrences only. Returns arrays as bytes plus findings
        and the segment's coverage (enabled, generated per action)."""
        p, key, aprops, constraint, fpr = self.p, self.key, self.aprops, self.spec.constraint, self.fpr
        self.base = self.frontier
        local: dict[int, int] = {}
        keys = array("q")
        where = array("q")
        ordinal = array("q")
        cact = array("H")
        cand: list[Any] = []
        generated = 0
        cov_en = [0] * len(self.actions)
        cov_gen = [0] * len(self.actions)
        aprop_found = None  # (parent position, successor index, name, fingerprint of the target)
        dead_found = None  # parent position
        for pos, s in enumerate(self.frontier):
            if not pos & 255:
                self.report(pos, generated)
            if constraint is not None and not constraint(p, s):
                continue
            validating = fpr.validating  # once per state; check() stops at its own quota
            i = 0
            try:
                for ai, aname, fn in self.actions:
                    j = i
                    for label, t in fn(p, s):
                        if validating:
                            fpr.check(t)
                        k = key(t)
                        if aprops and aprop_found is None:
                            pname = violated_action_property(p, aprops, s, aname, label, t)
                            if pname is not None:
                                aprop_found = (pos, i, pname, k)
                        if k not in local:
                            local[k] = len(cand)
                            keys.append(k)
                            where.append((pos << 16) | i)
                            ordinal.append(generated + i)
                            cact.append(ai)
                            cand.append(t)
                        i += 1
                    if i != j:
                        cov_en[ai] += 1
                        cov_gen[ai] += i - j
            except (KafkamcError, KeyboardInterrupt):
                raise
            except Exception as exc:
                raise _classify(self.spec, s, exc, self.invs, self.aprops) from exc
            if i > MAX_SUCCESSORS:
                raise UsageError(f"spec {self.spec.name}: a state has {i} successors; at most {MAX_SUCCESSORS} are supported")
            generated += i
            if i == 0 and self.deadlock and dead_found is None:
                dead_found = pos
        self.cand = cand
        self.cand_where = where
        self.cand_action = cact
        self.level_cov = (cov_en, cov_gen)
        return (keys.tobytes(), where.tobytes(), ordinal.tobytes(), generated, aprop_found, dead_found,
                self.level_cov)

    def _distinct(self, idx: array) -> list[int]:
        """Per action, how many of the chosen candidates it yielded (the states it found first)."""
        dist = [0] * len(self.actions)
        cact = self.cand_action
        for j in idx:
            dist[cact[j]] += 1
        return dist

    def tally(self, upto: int | None, chosen: bytes) -> tuple[list[int], list[int], list[int]]:
        """Coverage of a level cut short by a bound: enabled and generated per action counting the
        successors up to ordinal ``upto`` (None: all of them), distinct among ``chosen``."""
        idx = array("q")
        idx.frombytes(chosen)
        dist = self._distinct(idx)
        if upto is None:
            return self.level_cov[0], self.level_cov[1], dist
        return (*tally(self.p, self.actions, self.spec.constraint, self.frontier, upto), dist)

    def keep(self, chosen: bytes) -> tuple[int, Any, list[int]]:
        """Keep the chosen candidates as the next segment; check invariants on them."""
        idx = array("q")
        idx.frombytes(chosen)
        cand = self.cand
        nxt = [cand[j] for j in idx]
        dist = self._distinct(idx)
        self.cand = []
        p = self.p
        found = None  # (position in nxt, name)
        invs = self.invs
        for pos, t in enumerate(nxt):
            if not pos & 255 and self.meter is not None and self.meter[2]:
                raise _Abandoned()
            name = first_violation(p, t, invs)
            if name is not None:
                found = (pos, name)
                break
        self.frontier = nxt
        return len(nxt), found, dist

    def take(self, count: int, from_tail: bool) -> bytes:
        """Give away ``count`` states from one end (rebalancing keeps segments contiguous)."""
        if from_tail:
            moved, self.frontier = self.frontier[len(self.frontier) - count:], self.frontier[: len(self.frontier) - count]
        else:
            moved, self.frontier = self.frontier[:count], self.frontier[count:]
        return pickle.dumps(moved, protocol=pickle.HIGHEST_PROTOCOL)

    def give(self, data: bytes, at_front: bool) -> int:
        moved = pickle.loads(data)
        self.frontier = moved + self.frontier if at_front else self.frontier + moved
        return len(self.frontier)

    def dump(self, directory: str, name: str, which: str) -> tuple[FileEntry, int]:
        """Write the segment (``frontier``, or ``base``: the one the last expand started from)
        as a checkpoint's frontier file; its entry and how many states it holds."""
        states = self.base if which == "base" else self.frontier
        return write_frontier(directory, name, chunked(states)), len(states)


def _serve(conn: Any, segment: _Segment, parent_pid: int) -> None:
    """A worker process: answer the parent's requests until told to stop."""
    # Ctrl-C and a hang-up reach the whole process group, and so does SIGTERM from `timeout` or
    # systemd; only the parent decides what they mean (incomplete, with the statistics so far),
    # then kills the workers (SIGKILL). A worker dying first would turn that into "a worker
    # exited unexpectedly". The watch's SIGALRM is the parent's own. Signals stay blocked from
    # before the fork until this is set up (see _fork).
    for sig in _FORK_BLOCKED:
        signal.signal(sig, signal.SIG_IGN)
    # A parent killed outright (SIGKILL, the OOM killer) must not leave workers behind holding
    # memory and the pipes of whoever reads the parent's output.
    die_with_parent(parent_pid)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORK_BLOCKED)
    gc.disable()  # see local.gc_paused; a worker lives only for one exploration
    try:
        while True:
            msg = conn.recv()
            op = msg[0]
            try:
                if op == "expand":
                    out = segment.expand()
                    segment.report(len(segment.frontier), out[3])
                    conn.send(("ok", out))
                elif op == "keep":
                    conn.send(("ok", segment.keep(msg[1])))
                elif op == "take":
                    conn.send(("ok", segment.take(msg[1], msg[2])))
                elif op == "give":
                    conn.send(("ok", segment.give(msg[1], msg[2])))
                elif op == "tally":
                    conn.send(("ok", segment.tally(msg[1], msg[2])))
                elif op == "dump":
                    conn.send(("ok", segment.dump(msg[1], msg[2], msg[3])))
                elif op == "stop":
                    return
            except KeyboardInterrupt:
                return
            except _Abandoned:
                segment.cand = []
                conn.send(("abandoned",))
            except SpecRaised as exc:
                conn.send(("raised", exc.where, _portable(exc.state), type(exc.error).__name__, str(exc.error)))
            except UsageError as exc:
                conn.send(("usage", str(exc)))
            except SpecError as exc:
                conn.send(("spec", str(exc)))
            except Exception as exc:  # the engine's own bug: report it, do not hang the parent
                conn.send(("raised", "the engine worker", None, type(exc).__name__, str(exc)))
    except (EOFError, KeyboardInterrupt):
        return


def _portable(state: Any) -> Any:
    try:
        pickle.dumps(state)
        return state
    except Exception:
        return repr(state)


# Blocked in the parent across a fork, so that a forked worker gets none of them before it has
# set its own handlers (it ignores them all).
_FORK_BLOCKED = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM") if hasattr(signal, name)}


class _Remote:
    """The parent's handle on one worker process."""

    def __init__(self, ctx: Any, segment: _Segment) -> None:
        self.conn, child = ctx.Pipe()
        segment.meter = ctx.RawArray("q", 3)  # expanded, generated, abandon
        self.meter = segment.meter
        self.expanding = False
        self.waiting = False
        self._reply: Any = None
        self.proc = ctx.Process(target=_serve, args=(child, segment, os.getpid()), daemon=True)
        self.proc.start()
        child.close()

    @property
    def pid(self) -> int | None:
        return self.proc.pid

    def pending(self) -> tuple[int, int]:
        """(states expanded, successors generated) of a level expanded but not yet kept."""
        return (self.meter[0], self.meter[1]) if self.expanding else (0, 0)

    def call(self, *msg: Any) -> Any:
        self.send(*msg)
        return self.result()

    def send(self, *msg: Any) -> None:
        # Whole or not at all: a message cut by a signal would leave the pipe out of step; and
        # `waiting` says exactly whether a request is out (abandon() waits for its reply).
        with _signals_held():
            self.conn.send(msg)
            if msg[0] in ("expand", "keep"):
                self.expanding = msg[0] == "expand"
            self.waiting = True

    def _receive(self, timeout: float | None = None) -> Any:
        """The reply to the request sent, kept until taken: the wait can be interrupted (nothing is
        read), the read cannot (a reply half read would leave the pipe out of step)."""
        if self._reply is None:
            if not self.conn.poll(timeout):
                raise TimeoutError()
            with _signals_held():
                try:
                    self._reply = self.conn.recv()
                except EOFError:
                    raise SpecRaised("a worker process", None, RuntimeError("worker exited unexpectedly")) from None
                self.waiting = False
        return self._reply

    def abandon(self) -> None:
        """Make the worker drop what it is doing (at its next state) and wait for it to be idle;
        its reply, or one received but not yet taken, is dropped."""
        if self.waiting:
            self.meter[2] = 1
            try:
                self._receive(ABANDON_WAIT)
            finally:
                self.meter[2] = 0
        self._reply = None

    def result(self) -> Any:
        reply = self._receive()
        self._reply = None
        if reply[0] == "ok":
            return reply[1]
        if reply[0] == "usage":
            raise UsageError(reply[1])
        if reply[0] == "spec":
            raise SpecError(reply[1])
        _, where, state, ename, text = reply
        raise SpecRaised(where, state, type(ename, (Exception,), {})(text))

    def stop(self) -> None:
        """Ask an idle worker to exit; kill one still working (the run was cut short)."""
        if self.waiting:
            self.proc.kill()
            return
        try:
            self.conn.send(("stop",))
        except (OSError, BrokenPipeError):
            self.proc.kill()

    def join(self, deadline: float) -> None:
        self.proc.join(timeout=max(0.0, deadline - time.monotonic()))
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=1)


class _Local:
    """The same interface as _Remote for the segment the parent expands itself."""

    pid = None

    def __init__(self, segment: _Segment) -> None:
        self.segment = segment
        self._pending: Any = None
        segment.meter = self.meter = array("q", [0, 0, 0])
        self.expanding = False

    def pending(self) -> tuple[int, int]:
        return (self.meter[0], self.meter[1]) if self.expanding else (0, 0)

    def send(self, *msg: Any) -> None:
        op = msg[0]
        if op in ("expand", "keep"):
            self.expanding = op == "expand"
        self._pending = getattr(self.segment, op)(*msg[1:])
        if op == "expand":
            self.segment.report(len(self.segment.frontier), self._pending[3])

    def result(self) -> Any:
        out, self._pending = self._pending, None
        return out

    def call(self, *msg: Any) -> Any:
        self.send(*msg)
        return self.result()

    def stop(self) -> None:
        pass

    def abandon(self) -> None:
        self._pending = None

    def join(self, deadline: float) -> None:
        pass


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold off the signals that stop a run (they are delivered when this ends)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _FORK_BLOCKED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _stop_all(handles: list[Any]) -> None:
    """Stop every worker within a second in all (a worker mid-level is killed at once)."""
    for h in handles:
        h.stop()
    deadline = time.monotonic() + 1.0
    for h in handles:
        h.join(deadline)


def explore_multicore(
    spec: Spec,
    properties: Sequence[Property] | None = None,
    *,
    workers: int = 2,
    max_depth: int | None = None,
    max_states: int | None = None,
    symmetry: bool = False,
    deadlock: bool = False,
    progress: Progress | None = None,
    fork_threshold: int = FORK_THRESHOLD,
    max_memory: int | None = None,
    progress_every: float = PROGRESS_EVERY,
    frontier_memory: int | None = None,
    frontier_dir: str | os.PathLike[str] | None = None,
    checkpoint: Checkpointer | None = None,
) -> CheckResult:
    """Like ``local.explore`` (same results), on ``workers`` processes once levels are large.

    ``max_memory`` bounds the memory of the parent and its workers together. ``frontier_memory``
    and ``frontier_dir`` apply with one worker (``local.explore``); several keep their slices of
    the frontier in memory. With ``checkpoint``, each worker writes its segment of the frontier
    into the checkpoint.
    """
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return explore(spec, properties, max_depth=max_depth, max_states=max_states, symmetry=symmetry,
                       deadlock=deadlock, progress=progress, max_memory=max_memory, progress_every=progress_every,
                       frontier_memory=frontier_memory, frontier_dir=frontier_dir, checkpoint=checkpoint)
    with gc_paused(), Watch(progress, max_memory=max_memory, every=progress_every) as watch:
        return watch.annotate(_explore_multicore(
            spec, properties, workers=workers, max_depth=max_depth, max_states=max_states, symmetry=symmetry,
            deadlock=deadlock, progress=watch.progress, fork_threshold=fork_threshold, watch=watch,
            checkpoint=checkpoint,
        ))


def _explore_multicore(
    spec: Spec,
    properties: Sequence[Property] | None,
    *,
    workers: int,
    max_depth: int | None,
    max_states: int | None,
    symmetry: bool,
    deadlock: bool,
    progress: Progress | None,
    fork_threshold: int,
    watch: Watch | None = None,
    checkpoint: Checkpointer | None = None,
) -> CheckResult:
    props = tuple(spec.default_properties() if properties is None else properties)
    p = spec.p
    started = time.perf_counter()
    inits = spec.initial()
    key, fpr = state_key_function(spec, inits[0], symmetry)
    invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]

    table = FingerprintTable()
    lineage = Lineage()
    n = 0  # distinct states (a level cut short by a bound leaves more fingerprints in the table)
    generated = len(inits)
    depth = 1
    violated: str | None = None
    bad_path: list[int] | None = None
    bad_at: tuple[int, int | None] = (-1, None)  # see local.recorded
    reason: str | None = None
    names = [a.name for a in spec.actions()]
    cov_en = [0] * len(names)
    cov_gen = [0] * len(names)
    cov_new = [0] * len(names)
    frontier: list[Any] = []
    level_start = 0
    resumed = checkpoint.resume() if checkpoint is not None else None
    for i in insert_initial(spec, inits if resumed is None else [], key, fpr, table):
        if max_states is not None and n >= max_states:
            reason = "max-states"
            break
        lineage.append(-1, i)
        n += 1
        frontier.append(inits[i])
        if violated is None:
            violated = first_violation(p, inits[i], invs)
            if violated is not None:
                bad_path = lineage.path(n - 1)
                bad_at = (n - 1, None)
    if resumed is not None:
        table, lineage, n, depth, level_start, generated = resumed.restore(
            (cov_en, cov_gen, cov_new), fpr, frontier, watch)
        started -= resumed.boundary.seconds

    def result(kind: str) -> CheckResult:
        return CheckResult(
            spec=spec.name, params=p.as_dict(), engine="local", result=kind,
            invariants=tuple(pr.name for pr in props) + ((DEADLOCK,) if deadlock else ()),
            violated=violated, distinct_states=n, states_generated=generated, depth=depth,
            seconds=time.perf_counter() - started,
            trace=None if bad_path is None else checked_replay(
                spec, bad_path, violated, props, key=key, expected=recorded(table, lineage, *bad_at)),
            reason=reason, symmetry=symmetry,
            extra={"workers": len(handles) if handles else 1, "visited_bytes": table.nbytes + lineage.nbytes},
            coverage=coverage_of(names, cov_en, cov_gen, cov_new),
        )

    handles: list[Any] = [_Local(_Segment(spec, props, key, fpr, deadlock, frontier))]
    sizes = [len(frontier)]
    del frontier  # the segments hold it from now on

    def boundary() -> Boundary:
        return Boundary(depth, level_start, level_start + sum(sizes), generated, tuple(cov_en), tuple(cov_gen),
                        tuple(cov_new), fpr.validate_left, time.perf_counter() - started)

    # The last level boundary, and where the workers hold its frontier: "frontier" until the
    # level's keep is sent, "base" (what the level's expand started from) from then on until
    # the next boundary. One assignment each, so a stop between two bytecodes sees a pair that
    # belongs together.
    mark = (boundary(), "frontier") if checkpoint is not None else None
    if watch is not None:
        watch.workers = lambda: [h.pid for h in handles if h.pid is not None]

        def probe() -> LevelStats | None:
            if reason is not None:  # the run is over (stopping its workers): no more lines
                return None
            done = [h.pending() for h in handles]
            return LevelStats(depth + 1, n, generated + sum(g for _, g in done), sum(sizes),
                              time.perf_counter() - started, within_level=True, expanded=sum(e for e, _ in done))

        watch.probe = probe
    if progress:
        progress(LevelStats(depth, n, generated, sum(sizes), time.perf_counter() - started))
    if reason is not None:
        return result(INCOMPLETE)
    if violated is not None:
        return result(VIOLATION)
    ctx = multiprocessing.get_context("fork")
    try:
        while sum(sizes) > 0:
            if len(handles) == 1 and sizes[0] >= fork_threshold:
                handles, sizes = _fork(ctx, handles[0].segment, workers)
            last_level = max_depth is not None and depth >= max_depth
            for h in handles:
                h.send("expand")
            replies = [h.result() for h in handles]
            chosen: list[np.ndarray] = []
            found: tuple[Any, ...] | None = None  # (order key, name, path, (index, target fingerprint))
            dead: tuple[int, int] | None = None
            offset = level_start
            gen_before = generated
            stop: str | None = None
            cut: tuple[int, int] | None = None  # (worker, ordinal of the successor a bound stopped at)
            for w, (kb, wb, ob, gen, aprop, dpos, _) in enumerate(replies):
                keep = np.zeros(0, dtype=np.int64)
                if dpos is not None and dead is None:
                    dead = (w, offset + dpos)
                if aprop is not None:
                    order = (offset + aprop[0], aprop[1], 0)
                    if found is None or order < found[0]:
                        found = (order, aprop[2], lineage.path(offset + aprop[0]) + [aprop[1]],
                                 (offset + aprop[0], aprop[3]))
                if stop is None:
                    # The worker's candidates are distinct and in its discovery order: which are
                    # new is one vectorised insertion.
                    keep = np.flatnonzero(table.insert(np.frombuffer(kb, dtype=np.int64)))
                    bound = 0 if last_level else None if max_states is None else max_states - n
                    if bound is not None and bound < len(keep):
                        # The successor that would be one state too many stops the run.
                        stop = "max-depth" if last_level else "max-states"
                        ordinal = int(np.frombuffer(ob, dtype=np.int64)[keep[bound]])
                        generated = gen_before + ordinal + 1
                        cut = (w, ordinal)
                        keep = keep[:bound]
                        n += bound
                    else:
                        wh = np.frombuffer(wb, dtype=np.int64)[keep]
                        lineage.extend(offset + (wh >> 16), wh & 0xFFFF)
                        n += len(keep)
                        gen_before += gen
                chosen.append(keep)
                offset += sizes[w]
            if stop is not None and cut is not None:
                # The level's coverage up to the successor the bound stopped at, as local counts it.
                for w in range(cut[0] + 1):
                    handles[w].send("tally", cut[1] if w == cut[0] else None, chosen[w].tobytes())
                for w in range(cut[0] + 1):
                    _add_coverage((cov_en, cov_gen, cov_new), handles[w].result())
            if stop is not None:
                reason = stop
                return result(INCOMPLETE)
            generated = gen_before
            if mark is not None:
                mark = (mark[0], "base")
            for h, keep in zip(handles, chosen):
                h.send("keep", keep.tobytes())
            kept = [h.result() for h in handles]
            for reply, (_, _, dist) in zip(replies, kept):
                _add_coverage((cov_en, cov_gen, cov_new), (*reply[6], dist))
            base = level_start + sum(sizes)
            for (count, inv, _), keep, w in zip(kept, chosen, range(len(handles))):
                if inv is not None:
                    gidx = base + inv[0]
                    wh = lineage.parent(gidx), lineage.successor_index(gidx)
                    order = (wh[0], wh[1], 1)
                    if found is None or order < found[0]:
                        found = (order, inv[1], lineage.path(gidx), (gidx, None))
                base += count
            level_start += sum(sizes)
            sizes = [c for c, _, _ in kept]
            if sum(sizes):
                depth += 1
            if progress:
                progress(LevelStats(depth, n, generated, sum(sizes), time.perf_counter() - started))
            if dead is not None:
                violated, bad_path, bad_at = DEADLOCK, lineage.path(dead[1]), (dead[1], None)
            elif found is not None:
                violated, bad_path, bad_at = found[1], found[2], found[3]
            if violated is not None:
                depth = max(depth, len(bad_path))
                return result(VIOLATION)
            if len(handles) > 1:
                sizes = _rebalance(handles, sizes)
            if checkpoint is not None and sum(sizes):
                mark = (boundary(), "frontier")
                if checkpoint.due():
                    _save(checkpoint, mark, handles, table, lineage)
    except KeyboardInterrupt as exc:
        reason = stop_reason(exc)
        # The work done in the level cut short: successors generated so far (as the workers last
        # reported them, at most 256 states ago); their new states were not merged yet.
        generated += sum(g for _, g in (h.pending() for h in handles))
        stopped = result(INCOMPLETE)
        if checkpoint is not None and mark is not None:
            _save_stopped(checkpoint, mark, handles, table, lineage)
        return stopped
    finally:
        _stop_all(handles)
    return result(OK)


def _save(checkpoint: Checkpointer, mark: tuple[Boundary, str], handles: list[Any], table: FingerprintTable,
          lineage: Lineage) -> None:
    """Checkpoint the boundary ``mark``: each worker writes its segment, the parent the rest."""
    b, which = mark
    began = time.perf_counter()
    gen = checkpoint.next_generation()
    for part, h in enumerate(handles):
        h.send("dump", checkpoint.directory, checkpoint.frontier_name(gen, part), which)
    parts = [h.result() for h in handles]
    if sum(count for _, count in parts) != b.distinct - b.level_start:
        raise SpecRaised("the engine", None, RuntimeError(
            f"internal: the workers hold {sum(c for _, c in parts)} frontier states, the level boundary "
            f"{b.distinct - b.level_start}"))
    checkpoint.save(b, table, lineage, frontier_files=[entry for entry, _ in parts], generation=gen, began=began)


def _save_stopped(checkpoint: Checkpointer, mark: tuple[Boundary, str], handles: list[Any],
                  table: FingerprintTable, lineage: Lineage) -> None:
    """A stopped run's checkpoint: the workers drop the level cut short, and the last boundary
    is saved (the first ``distinct`` entries of the table and lineage are the boundary's). A
    worker that does not answer in time, or any failure, leaves the last checkpoint written
    (``checkpoint.saved`` says which)."""
    try:
        for h in handles:
            h.abandon()
        _save(checkpoint, mark, handles, table, lineage)
    except (KafkamcError, TimeoutError, OSError, EOFError) as exc:
        checkpoint.failure = str(exc) or type(exc).__name__


def _add_coverage(total: tuple[list[int], ...], part: tuple[list[int], ...]) -> None:
    for into, add in zip(total, part):
        for ai, n in enumerate(add):
            into[ai] += n


def _fork(ctx: Any, segment: _Segment, workers: int) -> tuple[list[Any], list[int]]:
    """Split the parent's segment into contiguous slices, one forked worker each."""
    frontier = segment.frontier
    size = len(frontier)
    bounds = [size * w // workers for w in range(workers + 1)]
    handles: list[Any] = []
    sizes = []
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _FORK_BLOCKED)
    try:
        for w in range(workers):
            part = frontier[bounds[w]:bounds[w + 1]]
            child = _Segment(segment.spec, (), segment.key, segment.fpr, segment.deadlock, part)
            child.invs, child.aprops = segment.invs, segment.aprops
            handles.append(_Remote(ctx, child))
            sizes.append(len(part))
    except BaseException:
        _stop_all(handles)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    segment.frontier = []
    return handles, sizes


def _rebalance(handles: list[Any], sizes: list[int]) -> list[int]:
    """Move states between neighbouring segments when one holds far more than its share."""
    total = sum(sizes)
    if total < FORK_THRESHOLD:
        return sizes
    target = [total * (w + 1) // len(sizes) - total * w // len(sizes) for w in range(len(sizes))]
    if max(abs(s - t) for s, t in zip(sizes, target)) * len(sizes) * 8 < total:
        return sizes  # within ~12%: moving states costs more than the imbalance
    sizes = list(sizes)
    for w in range(len(sizes) - 1):
        surplus = sizes[w] - target[w]
        surplus = max(surplus, -sizes[w + 1])
        if surplus > 0:
            data = handles[w].call("take", surplus, True)
            handles[w + 1].call("give", data, True)
        elif surplus < 0:
            data = handles[w + 1].call("take", -surplus, False)
            handles[w].call("give", data, False)
        sizes[w] -= surplus
        sizes[w + 1] += surplus
    return sizes
