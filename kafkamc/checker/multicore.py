"""The local engine on several cores, with results identical to the sequential engine.

The visited set is sharded by fingerprint across the worker processes, as in the Spark engine:
worker ``i`` of ``N`` owns the fingerprints ``f`` with ``f mod N == i`` and records their parents
(see ``kafkamc.checker.shard``, which also says how the order of the sequential engine is kept).
The parent process, the coordinator, holds no per-state data. Per level it

1. asks every worker to expand its frontier: each returns its candidates sorted by owner;
2. tells each owner how many candidates every worker left for it (in files in the frontier's
   directory: the candidates never pass through the coordinator); each owner keeps the new
   fingerprints at their smallest key and answers, per generator, the keys that won;
3. merges the owners' sorted keys (numpy) into the next level's ranks and sends each generator
   its winners with their ranks; the generators check the invariants on them.

So the serial part of a level is moving bytes and one sort of the level's new keys, and states
cross processes only when the frontier is rebalanced. Distinct states, generated, depth,
coverage, verdict and counterexample equal the sequential engine's whatever the number of
workers; a counterexample's path is read back from the owners of its states.

Workers are forked (they inherit the spec and the first levels without pickling) once a level is
big enough to pay for them; small models never leave the parent process.
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
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from kafkamc.checker.checkpoint import Boundary, Checkpointer
from kafkamc.checker.fptable import MAX_STATES, FingerprintTable
from kafkamc.checker.frontier import FrontierStore
from kafkamc.checker.lineage import Lineage
from kafkamc.checker.local import Progress, explore, first_violation, gc_paused, insert_initial, state_key_function
from kafkamc.checker.resources import die_with_parent
from kafkamc.checker.shard import Abandoned, KeyLayout, Shard
from kafkamc.checker.watch import PROGRESS_EVERY, Watch, stop_reason
from kafkamc.result import DEADLOCK, INCOMPLETE, OK, VIOLATION, CheckResult, LevelStats, coverage_of
from kafkamc.counterexamples.checked import checked_replay
from kafkamc.errors import EngineError, KafkamcError, SpecError, SpecRaised, UsageError
from kafkamc.invariants.api import Property
from kafkamc.spec.api import Spec

__all__ = ["explore_multicore", "available_cores", "FORK_THRESHOLD", "LevelTiming"]

# A level with fewer states than this is expanded in the parent: forking costs more than it saves.
FORK_THRESHOLD = 2000
# How long a stopped run waits for its workers to set their level aside and write their part of the
# checkpoint's frontier (seconds); a worker stuck longer in a spec's function is killed, and the
# checkpoint is the last one written at a level boundary.
ABANDON_WAIT = 5.0


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class LevelTiming:
    """What expanding one level cost: wall seconds, the coordinator's CPU seconds (serial: the
    workers wait for it, or it expands the level itself before forking) and each worker's CPU
    seconds (none before the fork)."""

    level: int
    wall: float
    serial: float
    parallel: tuple[float, ...]


# -- worker processes --------------------------------------------------------------------------

# What a worker answers; everything else it is sent is an engine bug.
_OPS = frozenset({"expand", "merge", "keep", "tally", "take", "give", "record", "columns", "scatter", "dump"})


def _serve(conn: Any, shard: Shard, index: int, count: int, parent_pid: int) -> None:
    """A worker process: become shard ``index`` of ``count``, answer the parent until told to stop."""
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
        shard.split(index, count)
        while True:
            msg = conn.recv()
            op = msg[0]
            if op == "stop":
                return
            try:
                if op not in _OPS:
                    raise RuntimeError(f"unknown request {op!r}")
                out = getattr(shard, op)(*msg[1:])
                conn.send(("ok", out, time.process_time()))
            except KeyboardInterrupt:
                return
            except Abandoned:
                shard.drop_candidates()
                conn.send(("abandoned",))
            except SpecRaised as exc:
                conn.send(("raised", exc.where, _portable(exc.state), type(exc.error).__name__, str(exc.error),
                           getattr(exc, "rank", None)))
            except UsageError as exc:
                conn.send(("usage", str(exc)))
            except SpecError as exc:
                conn.send(("spec", str(exc)))
            except Exception as exc:  # the engine's own bug: report it, do not hang the parent
                conn.send(("raised", "the engine worker", None, type(exc).__name__, str(exc), None))
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


class _Handle:
    """The parent's view of a shard: requests are sent, then their results collected."""

    pid: int | None = None
    meter: Any
    expanding = False
    cpu = 0.0  # the shard's process CPU seconds at its last answer (0: the parent's own shard)

    def pending(self) -> tuple[int, int]:
        """(states expanded, successors generated) of a level expanded but not yet merged."""
        return (self.meter[0], self.meter[1]) if self.expanding else (0, 0)

    def send(self, *msg: Any) -> None:
        raise NotImplementedError

    def result(self) -> Any:
        raise NotImplementedError

    def call(self, *msg: Any) -> Any:
        self.send(*msg)
        return self.result()

    def abandon(self) -> None:
        """Make the shard drop the request it works on and wait until it is idle."""

    def stop(self) -> None:
        pass

    def join(self, deadline: float) -> None:
        pass


class _Remote(_Handle):
    """A forked worker process owning one shard."""

    def __init__(self, ctx: Any, shard: Shard, index: int, count: int) -> None:
        self.conn, child = ctx.Pipe()
        shard.meter = ctx.RawArray("q", 3)  # expanded, generated, abandon
        self.meter = shard.meter
        self.waiting = False
        self._reply: Any = None
        self.proc = ctx.Process(target=_serve, args=(child, shard, index, count, os.getpid()), daemon=True)
        self.proc.start()
        self.pid = self.proc.pid
        child.close()

    def send(self, *msg: Any) -> None:
        # Whole or not at all: a message cut by a signal would leave the pipe out of step; and
        # `waiting` says exactly whether a request is out (abandon() waits for its reply).
        with _signals_held():
            self.conn.send(msg)
            if msg[0] == "expand":
                self.expanding = True
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
            self.cpu = reply[2]
            return reply[1]
        if reply[0] == "usage":
            raise UsageError(reply[1])
        if reply[0] == "spec":
            raise SpecError(reply[1])
        _, where, state, ename, text, rank = reply
        exc = SpecRaised(where, state, type(ename, (Exception,), {})(text))
        exc.rank = rank  # type: ignore[attr-defined]
        raise exc

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


class _Local(_Handle):
    """The parent's own shard, before any worker is forked."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        shard.meter = self.meter = array("q", [0, 0, 0])
        self._out: Any = None
        self._error: BaseException | None = None

    def send(self, *msg: Any) -> None:
        if msg[0] == "expand":
            self.expanding = True
        try:
            self._out = getattr(self.shard, msg[0])(*msg[1:])
        except KafkamcError as exc:
            self._error = exc

    def result(self) -> Any:
        out, error, self._out, self._error = self._out, self._error, None, None
        if error is not None:
            raise error
        return out

    def abandon(self) -> None:
        self._out = self._error = None


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold off the signals that stop a run (they are delivered when this ends).

    ``pthread_sigmask`` runs the handlers of pending signals before it returns: the mask is read
    first (blocking nothing) and blocked inside the ``try``, so that a stop raised by the blocking
    call itself still finds the mask restored (else those signals stayed blocked for good)."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, _FORK_BLOCKED)
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _round(handles: list[_Handle], msgs: Iterable[tuple[Any, ...]]) -> list[Any]:
    """Send one request to each shard and collect every answer; of the shards that failed, raise
    the error of the first state in breadth-first order (the same whatever the number of shards).
    ``msgs`` may be a generator: each request is then built when it is sent, and dropped once
    sent (a level's requests are tens of MB a worker at 10^8 states)."""
    msg: tuple[Any, ...] | None = None
    for h, msg in zip(handles, msgs):
        h.send(*msg)
    msg = None
    out: list[Any] = []
    errors: list[KafkamcError] = []
    for h in handles:
        try:
            out.append(h.result())
        except KafkamcError as exc:
            errors.append(exc)
            out.append(None)
    if errors:
        raise min(errors, key=lambda e: (getattr(e, "rank", None) is None, getattr(e, "rank", None) or 0))
    return out


def _stop_workers(handles: list[_Handle]) -> None:
    """``_stop_all`` at the end of a run, which a stop does not cut short: one delivered meanwhile
    is taken (the run is over, and its answer stands) and the stopping made whole."""
    while True:
        try:
            with _signals_held():
                _stop_all(handles)
            return
        except KeyboardInterrupt as exc:
            stop_reason(exc)


def _stop_all(handles: list[_Handle]) -> None:
    """Stop every worker within a second in all (a worker mid-level is killed at once)."""
    for h in handles:
        h.stop()
    deadline = time.monotonic() + 1.0
    for h in handles:
        h.join(deadline)


# -- the coordinator ---------------------------------------------------------------------------


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
    timings: list[LevelTiming] | None = None,
) -> CheckResult:
    """Like ``local.explore`` (same results), on ``workers`` processes once levels are large.

    ``max_memory`` bounds the memory of the parent and its workers together. ``frontier_memory``
    (None: no limit) is split evenly across the workers: past its share, a worker writes its
    frontier and the successors it holds until their owners decide to files in a temporary
    directory made in ``frontier_dir``, removed at the end (see ``shard`` and ``frontier``). With
    ``checkpoint``, each worker writes a part of the frontier into the checkpoint. ``timings``, if given, gets a LevelTiming per level
    (``benchmarks/multicore_scaling.py`` reads them).
    """
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return explore(spec, properties, max_depth=max_depth, max_states=max_states, symmetry=symmetry,
                       deadlock=deadlock, progress=progress, max_memory=max_memory, progress_every=progress_every,
                       frontier_memory=frontier_memory, frontier_dir=frontier_dir, checkpoint=checkpoint)
    with gc_paused(), Watch(progress, max_memory=max_memory, every=progress_every) as watch, \
            FrontierStore(frontier_memory, frontier_dir) as store:
        return watch.annotate(_explore_multicore(
            spec, properties, workers=workers, max_depth=max_depth, max_states=max_states, symmetry=symmetry,
            deadlock=deadlock, progress=watch.progress, fork_threshold=fork_threshold, watch=watch,
            checkpoint=checkpoint, timings=timings, store=store,
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
    timings: list[LevelTiming] | None = None,
    store: FrontierStore | None = None,
) -> CheckResult:
    props = tuple(spec.default_properties() if properties is None else properties)
    p = spec.p
    started = time.perf_counter()
    inits = spec.initial()
    key, fpr = state_key_function(spec, inits[0], symmetry)
    invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]

    distinct = 0
    generated = len(inits)
    depth = 1
    violated: str | None = None
    bad_path: list[int] | None = None
    bad_expected: Callable[[int, int], bool] | None = None
    reason: str | None = None
    names = [a.name for a in spec.actions()]
    layout = KeyLayout.of(len(names))
    cov = ([0] * len(names), [0] * len(names), [0] * len(names))  # enabled, generated, distinct

    store = store if store is not None else FrontierStore(None)
    root = Shard(spec, props, key, fpr, deadlock, store)
    root.keeps_base = checkpoint is not None
    level_start = 0  # the index of the frontier's first state
    resumed = checkpoint.resume() if checkpoint is not None else None
    frontier = store.new()
    # A state past --max-states stays in the table: the run ends there, and counts `distinct`.
    for i in root.add_roots(insert_initial(spec, inits if resumed is None else [], key, fpr, root.table)):
        if max_states is not None and distinct >= max_states:
            reason = "max-states"
            break
        distinct += 1
        frontier.extend([inits[i]])
        if violated is None:
            violated = first_violation(p, inits[i], invs)
            if violated is not None:
                bad_path, bad_expected = [i], _expected([key(inits[i])], None)
    if resumed is not None:
        table, lineage, distinct, depth, level_start, generated = resumed.restore(cov, fpr, frontier, watch)
        root.restore(table, lineage, distinct, frontier)
        del table, lineage
        started -= resumed.boundary.seconds
    else:
        root.start(frontier)
    visited = [root.nbytes]  # per shard, as last reported
    spilled = [0]  # bytes each shard wrote to its frontier files, as last reported
    handles: list[_Handle] = [_Local(root)]
    del root, frontier  # after the fork the parent keeps no per-state data
    sizes = [len(handles[0].shard.frontier)]  # type: ignore[attr-defined]

    def result(kind: str) -> CheckResult:
        return CheckResult(
            spec=spec.name, params=p.as_dict(), engine="local", result=kind,
            invariants=tuple(pr.name for pr in props) + ((DEADLOCK,) if deadlock else ()),
            violated=violated, distinct_states=distinct, states_generated=generated,
            depth=depth if bad_path is None else max(depth, len(bad_path)),
            seconds=time.perf_counter() - started,
            trace=None if bad_path is None else checked_replay(
                spec, bad_path, violated, props, key=key, expected=bad_expected),
            reason=reason, symmetry=symmetry, extra={"workers": len(handles), "visited_bytes": sum(visited),
                                                     "frontier_bytes_written": sum(spilled)},
            coverage=coverage_of(names, *cov),
        )

    if watch is not None:
        watch.workers = lambda: [h.pid for h in handles if h.pid is not None]

        def probe() -> LevelStats | None:
            if reason is not None:  # the run is over (stopping its workers): no more lines
                return None
            done = [h.pending() for h in handles]
            return LevelStats(depth + 1, distinct, generated + sum(g for _, g in done), sum(sizes),
                              time.perf_counter() - started, within_level=True, expanded=sum(e for e, _ in done))

        watch.probe = probe
    def boundary() -> Boundary:
        return Boundary(depth, level_start, distinct, generated, *(tuple(c) for c in cov), fpr.validate_left,
                        time.perf_counter() - started)

    # The last level boundary, and which frontier of the workers is its: "frontier" until the
    # level's keep is sent, "base" (what the level's expand started from) from then on until
    # the next boundary. One assignment each, so a stop between two bytecodes sees a pair that
    # belongs together.
    mark = (boundary(), "frontier") if checkpoint is not None else None
    if progress:
        progress(LevelStats(depth, distinct, generated, sum(sizes), time.perf_counter() - started))
    if violated is not None:  # among the initial states, before --max-states was reached
        reason = None
        return result(VIOLATION)
    if reason is not None:
        return result(INCOMPLETE)
    ctx = multiprocessing.get_context("fork")
    try:
        while sum(sizes) > 0:
            if len(handles) == 1 and sizes[0] >= fork_threshold:
                # Held until the handles are the run's: a stop delivered as the forking ends
                # finds the workers in ``handles`` to stop.
                with _signals_held():
                    handles, sizes = _fork(ctx, handles[0], workers)  # type: ignore[arg-type]
            level, wall0, cpu0, wcpu0 = depth, time.perf_counter(), time.process_time(), [h.cpu for h in handles]
            last_level = max_depth is not None and depth >= max_depth
            n = len(handles)
            expanded = _round(handles, [("expand",)] * n)
            merged = _round(handles, [("merge", [expanded[g][0][o] for g in range(n)], level_start)
                                      for o in range(n)])
            # Per generator, the keys it won (each owner's list is sorted); all of them, sorted,
            # are the next level in the sequential engine's order.
            # (kind="stable" is a merge sort, which merges the already sorted runs.)
            won = [np.sort(np.concatenate([np.frombuffer(merged[o][g], dtype=np.int64) for o in range(n)]),
                           kind="stable") for g in range(n)]
            everything = np.sort(np.concatenate(won), kind="stable")
            new = len(everything)
            found: tuple[Any, ...] | None = None  # (order, name, index, successor index, target)
            dead: int | None = None  # the index of the first deadlock
            for _, _, aprop, drank, _ in expanded:
                if drank is not None and (dead is None or level_start + drank < dead):
                    dead = level_start + drank
                if aprop is not None:
                    order = (aprop[0], aprop[1], 0)
                    if found is None or order < found[0]:
                        found = (order, aprop[2], level_start + aprop[0], aprop[1], aprop[3])
            cut = None
            if new and last_level:
                cut = 0
            elif max_states is not None and distinct + new > max_states:
                cut = max_states - distinct
            if cut is not None:
                # The level's coverage up to the successor the bound stopped at, as local counts it.
                at = int(everything[cut])
                for en, gen, dist in _round(handles, [("tally", at, w.tobytes()) for w in won]):
                    _add_coverage(cov, (en, gen, dist))
                    generated += sum(gen)
                for h in handles:
                    h.expanding = False
                distinct += cut
                reason = "max-depth" if last_level else "max-states"
                return result(INCOMPLETE)
            for h in handles:
                h.expanding = False
            if distinct + new > MAX_STATES:
                # State indexes are 32-bit in the shards' records, as in the sequential engine.
                raise EngineError(f"the multicore engine records at most {MAX_STATES:,} distinct states; this run "
                                  "needs more (bound it with --max-states)")
            generated += sum(e[1] for e in expanded)
            if mark is not None:
                mark = (mark[0], "base")
            # The next level's states get the indexes from `distinct` on, in rank order; each
            # owner recorded its new states in key order.
            owned = [np.sort(np.concatenate([np.frombuffer(b, dtype=np.int64) for b in merged[o]]), kind="stable")
                     for o in range(n)]
            del merged
            kept = _round(handles, _keeps(won, owned, everything, distinct))
            del won, owned, everything
            level_start = distinct
            distinct += new
            visited = [v for _, _, _, v, _ in kept]
            spilled = [b for _, _, _, _, b in kept]
            for e, (_, inv, dist, _, _) in zip(expanded, kept):
                _add_coverage(cov, (*e[4], dist))
                if inv is not None:
                    order = (*layout.order(inv[0]), 1)
                    if found is None or order < found[0]:
                        found = (order, inv[1], level_start + inv[2], None, None)
            sizes = [c for c, _, _, _, _ in kept]
            if sum(sizes):
                depth += 1
            # The finding before the level's line: a stop while it is printed must find it.
            if dead is not None:
                violated = DEADLOCK
            elif found is not None:
                violated = found[1]
            if progress:
                progress(LevelStats(depth, distinct, generated, sum(sizes), time.perf_counter() - started))
            # The path and what its states must be are set in one assignment, once whole: a stop
            # handler that sees a path replays it.
            if dead is not None:
                path, chain = _path(handles, dead)
                bad_expected, bad_path = _expected(chain, None), path
            elif found is not None:
                path, chain = _path(handles, found[2])
                if found[3] is not None:  # an action property: the transition from the state found
                    path.append(found[3])
                bad_expected, bad_path = _expected(chain, found[4]), path
            if violated is not None:
                assert bad_path is not None
                return result(VIOLATION)
            if len(handles) > 1:
                sizes = _rebalance(handles, sizes)
            if checkpoint is not None and sum(sizes):
                mark = (boundary(), "frontier")
                if checkpoint.due():
                    _save(checkpoint, mark, handles)
            if timings is not None:
                timings.append(LevelTiming(level, time.perf_counter() - wall0, time.process_time() - cpu0,
                                           tuple(h.cpu - c for h, c in zip(handles, wcpu0) if h.pid is not None)))
    except KeyboardInterrupt as exc:
        reason = stop_reason(exc)
        if violated is not None and bad_path is not None:
            # Stopped while the trace of a violation found was replayed: replayed again (a walk
            # of its length), the run's answer is the violation. Stopped while its path was
            # asked of the workers, it stays incomplete, its finding named (render.py).
            reason = None
            return result(VIOLATION)
        # The work done in the level cut short: successors generated so far (as the workers last
        # reported them, at most 256 states ago); their new states were not merged yet.
        generated += sum(g for _, g in (h.pending() for h in handles))
        stopped = result(INCOMPLETE)
        if checkpoint is not None and mark is not None:
            _save_stopped(checkpoint, mark, handles)
        return stopped
    finally:
        _stop_workers(handles)
    return result(OK)


def _keeps(won: list[np.ndarray], owned: list[np.ndarray], everything: np.ndarray,
           distinct: int) -> Iterator[tuple[Any, ...]]:
    """The level's ``keep`` requests, one per shard as it is sent: the keys it won with their
    ranks (positions in ``everything``, the level's new keys sorted), and the indexes of the
    states it owns. Each shard's arrays are let go once its request is built."""
    for w in range(len(won)):
        request = ("keep", won[w].tobytes(), np.searchsorted(everything, won[w]).tobytes(),
                   (distinct + np.searchsorted(everything, owned[w])).tobytes())
        won[w] = owned[w] = everything[:0]
        yield request
        del request


def _save(checkpoint: Checkpointer, mark: tuple[Boundary, str], handles: list[_Handle]) -> None:
    """Checkpoint the boundary ``mark`` as the sequential engine would: the visited states in
    index order, gathered from their owners, and the frontier in rank order, one part per shard
    (each writes the ranks of its part, which the others send it)."""
    b, which = mark
    began = time.perf_counter()
    gen = checkpoint.next_generation()
    count = b.distinct - b.level_start
    n = len(handles)
    bounds = [count * w // n for w in range(n + 1)]
    parts = _round(handles, [("scatter", bounds, which)] * n)
    files = _round(handles, [("dump", checkpoint.directory, checkpoint.frontier_name(gen, w),
                              [parts[g][w] for g in range(n)]) for w in range(n)])
    if sum(c for _, c in files) != count:
        raise SpecRaised("the engine", None, RuntimeError(
            f"internal: the workers hold {sum(c for _, c in files)} frontier states, the level boundary {count}"))
    fps = np.empty(b.distinct, dtype=np.int64)
    parent = np.empty(b.distinct, dtype=np.int32)
    sidx = np.empty(b.distinct, dtype=np.uint16)
    filled = 0
    for index, f, pa, si in _round(handles, [("columns", b.distinct)] * n):
        at = np.frombuffer(index, dtype=np.int32)
        fps[at] = np.frombuffer(f, dtype=np.int64)
        parent[at] = np.frombuffer(pa, dtype=np.int32)
        sidx[at] = np.frombuffer(si, dtype=np.uint16)
        filled += len(at)
    if filled != b.distinct:
        raise SpecRaised("the engine", None, RuntimeError(
            f"internal: the shards hold {filled} of the boundary's {b.distinct} visited states"))
    checkpoint.save(b, FingerprintTable.of(fps), Lineage.of(parent, sidx), frontier_files=[e for e, _ in files],
                    generation=gen, began=began)


def _save_stopped(checkpoint: Checkpointer, mark: tuple[Boundary, str], handles: list[_Handle]) -> None:
    """A stopped run's checkpoint: the workers drop the level cut short, and the last boundary
    is saved (its states are those with an index below its count). A worker that does not answer
    in time, or any failure, leaves the last checkpoint written (``checkpoint.saved`` says which)."""
    try:
        for h in handles:
            h.abandon()
        _save(checkpoint, mark, handles)
    except (KafkamcError, TimeoutError, OSError, EOFError, ValueError) as exc:
        checkpoint.failure = str(exc) or type(exc).__name__


def _path(handles: list[_Handle], index: int) -> tuple[list[int], list[int]]:
    """The successor-index path to the state with this index and the fingerprints along it, from
    the records of their owners (each shard is asked: an index does not say its owner)."""
    path: list[int] = []
    chain: list[int] = []
    while index >= 0:
        (fp, parent, sidx), = [r for r in _round(handles, [("record", index)] * len(handles)) if r is not None]
        chain.append(fp)
        path.append(sidx)
        index = parent
    path.reverse()
    chain.reverse()
    return path, chain


def _expected(chain: list[int], last: int | None) -> Callable[[int, int], bool]:
    """For ``checked_replay``: the fingerprints the search recorded along the trace; ``last`` is
    the target of an action property's bad transition (a state maybe first reached elsewhere)."""
    return lambda j, fp: fp == chain[j] if j < len(chain) else fp == last


def _add_coverage(total: tuple[list[int], ...], part: tuple[list[int], ...]) -> None:
    for into, add in zip(total, part):
        for ai, n in enumerate(add):
            into[ai] += n


def _fork(ctx: Any, local: _Local, workers: int) -> tuple[list[_Handle], list[int]]:
    """Fork ``workers`` processes from the parent's shard; each keeps its share of it. Called
    with the stop signals held (``_signals_held``)."""
    handles: list[_Handle] = []
    local.shard.store.share()  # every worker writes its files there; the parent removes it
    local.shard.frontier.seal()
    try:
        for w in range(workers):
            handles.append(_Remote(ctx, local.shard, w, workers))
    except BaseException:
        _stop_all(handles)
        raise
    size = len(local.shard.frontier)
    return handles, [len(range(w, size, workers)) for w in range(workers)]


def _rebalance(handles: list[_Handle], sizes: list[int]) -> list[int]:
    """Move states from the largest frontiers to the smallest when one holds far more than its share."""
    total = sum(sizes)
    if total < FORK_THRESHOLD:
        return sizes
    count = len(sizes)
    target = [total * (w + 1) // count - total * w // count for w in range(count)]
    if max(abs(s - t) for s, t in zip(sizes, target)) * count * 8 < total:
        return sizes  # within ~12%: moving states costs more than the imbalance
    sizes = list(sizes)
    givers = [w for w in range(count) if sizes[w] > target[w]]
    takers = [w for w in range(count) if sizes[w] < target[w]]
    while givers and takers:
        g, t = givers[-1], takers[-1]
        moved = min(sizes[g] - target[g], target[t] - sizes[t])
        handles[t].call("give", handles[g].call("take", moved))
        sizes[g] -= moved
        sizes[t] += moved
        if sizes[g] == target[g]:
            givers.pop()
        if sizes[t] == target[t]:
            takers.pop()
    return sizes

