"""One worker's share of a multicore search: the fingerprints it owns and the frontier states it holds.

The visited set is sharded by fingerprint, as in the Spark engine: of ``count`` shards, shard ``i``
owns the fingerprints ``f`` with ``f mod count == i`` (``f`` read as unsigned 64-bit) and keeps,
per owned state, the fingerprint of its parent and the successor index that reached it, so a
counterexample is rebuilt by asking the owners, one step back at a time.

Every state also has its *index*, its position in the sequential engine's discovery order (the
index of the first state of its level plus its rank), and the records are kept by index, so that
a checkpoint (``kafkamc.checker.checkpoint``) holds exactly what the sequential engine's would.

Frontier states stay with the shard that generated them (states are pickled only when the frontier
is rebalanced, or written to the shard's files past its memory budget: the frontier it expands and
the successors it holds until their owners decide are ``frontier.Frontier`` sequences, read back in
the order they were written). Each carries its *rank*: its position in its level in the sequential engine's
order. A successor's *key* packs the rank of its parent, the successor index (16 bits) and the
action (as many bits as the spec's actions need; see ``KeyLayout``): the action is a function of
the other two, so keys sort as (rank, successor index); the
sequential engine discovers a state at its smallest key, so the owner keeps, for every new fingerprint, the
candidate with the smallest key, and sorting the level's new keys gives the next level's ranks.
Hence distinct states, generated, depth, coverage, verdict and trace are the sequential engine's
whatever the number of shards.

A level, as the coordinator (``multicore``) drives it:

1. ``expand``: run every action on the shard's frontier, check action properties, deduplicate
   locally, and write the candidates (fingerprint, key) of each owner to a file for it (the
   coordinator only hears how many);
2. ``merge`` (on the owner): of all candidates left for it, drop those already visited, keep the
   smallest key per fingerprint, record them, and tell each generator which of its keys won;
3. ``keep`` (on the generator): the winners, with their ranks, become its next frontier; check
   the invariants on them in rank order.
"""

from __future__ import annotations

import pickle
import sys
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from kafkamc.checker.checkpoint import chunked, write_frontier
from kafkamc.checker.column import Column
from kafkamc.checker.fingerprint import Fingerprinter
from kafkamc.checker.fptable import FingerprintTable
from kafkamc.checker.frontier import SPILL_CHUNK, Frontier, FrontierStore
from kafkamc.checker.lineage import MAX_SUCCESSORS, Lineage
from kafkamc.checker.manifest import FileEntry
from kafkamc.checker.local import CHUNK, _classify, tally, violated_action_property
from kafkamc.errors import KafkamcError, SpecRaised, UsageError
from kafkamc.invariants.api import Property, fails
from kafkamc.spec.api import Spec

__all__ = ["Shard", "Abandoned", "KeyLayout"]

_INDEX_BITS = 16  # successor indexes are uint16, as in the lineage
_INDEX_MASK = (1 << _INDEX_BITS) - 1
_EMPTY = np.empty(0, dtype=np.int64)
# The merge looks up and inserts an owner's candidates this many at a time (bounded scratch).
_PART = 1 << 18


def _states(frontier: Frontier) -> Iterator[Any]:
    for chunk in frontier.chunks(SPILL_CHUNK):
        yield from chunk


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """How a key packs (parent rank, successor index, action) into a signed 64-bit int: the action
    in the low ``action_bits`` bits (as many as the spec's actions need), the successor index in
    the next 16, the rank above (2^39 states a level even with 256 actions)."""

    action_bits: int

    @classmethod
    def of(cls, actions: int) -> "KeyLayout":
        return cls(max(actions - 1, 0).bit_length())

    @property
    def rank_shift(self) -> int:
        return self.action_bits + _INDEX_BITS

    @property
    def action_mask(self) -> int:
        return (1 << self.action_bits) - 1

    def order(self, key: int) -> tuple[int, int]:
        """(rank of the parent, successor index) of a key: the sequential engine's order."""
        return key >> self.rank_shift, (key >> self.action_bits) & _INDEX_MASK


def _owners(fps: np.ndarray, count: int) -> np.ndarray:
    return (fps.view(np.uint64) % np.uint64(count)).astype(np.intp)


def _int64(data: bytes | array) -> np.ndarray:
    return np.frombuffer(data, dtype=np.int64).copy() if len(data) else _EMPTY


class Abandoned(Exception):
    """Raised in a shard, at a state boundary, when the coordinator abandons the current request
    (a stopped run that writes its checkpoint)."""


def _ranked(exc: SpecRaised, rank: int) -> SpecRaised:
    # Several shards may fail in one level: the coordinator reports the first in breadth-first order.
    exc.rank = rank  # type: ignore[attr-defined]
    return exc


class Shard:
    """The fingerprints one worker owns (with their parent records) and the frontier it expands."""

    # Where expand() reports (states expanded, successors generated) as it goes: shared memory
    # the coordinator reads for progress lines and for the counts of an interrupted level.
    meter: Any = None

    def __init__(self, spec: Spec, props: Sequence[Property], key: Callable[[Any], int],
                 fpr: Fingerprinter, deadlock: bool, store: FrontierStore | None = None) -> None:
        self.spec = spec
        self.p = spec.p
        self.actions = [(ai, a.name, a.fn) for ai, a in enumerate(spec.actions())]
        self.invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]
        self.aprops = [(pr.name, pr.fn) for pr in props if pr.kind == "action"]
        self.key = key
        self.fpr = fpr
        self.deadlock = deadlock
        self.index, self.count = 0, 1
        self.layout = KeyLayout.of(len(self.actions))
        # Where the frontier and the candidates go past their budget (split gives each worker a
        # store of its own, with its share of the budget).
        self.store = store if store is not None else FrontierStore(None)
        # The owned part of the visited set, and per fingerprint (by its position in the table) a
        # record as the sequential engine's lineage has it: the parent's index (-1 for an initial
        # state) and the successor index (the initial state's position for one); and the state's
        # own index, which the coordinator sends once the level is ranked (so ``rec_index`` may
        # lag behind by the level being built; it is sorted). Indexes fit 32 bits: the
        # coordinator stops a run at fptable.MAX_STATES distinct states.
        self.table = FingerprintTable()
        self.rec_parent = Column(np.int32)
        self.rec_sidx = Column(np.uint16)
        self.rec_index = Column(np.int32)
        # The frontier, in rank order, with each state's rank; ``base``: the same for the frontier
        # the last expand started from, kept only for checkpoints (a stopped run's holds it; it
        # costs a level's states until the next expand).
        self.frontier: Frontier = self.store.new()
        self.ranks = _EMPTY
        self.keeps_base = False
        self.base: tuple[Frontier, np.ndarray] = (self.frontier, _EMPTY)
        # The candidates of the last expand, in key order.
        self.cand: Frontier = self.store.new()
        self.cand_keys = _EMPTY
        self.cand_fps = _EMPTY
        # Without workers (one shard), the candidates the last expand kept for its own merge.
        self.inbox: tuple[np.ndarray, np.ndarray] = (_EMPTY, _EMPTY)
        self.level_cov: tuple[list[int], list[int]] = ([], [])

    def report(self, expanded: int, generated: int) -> None:
        meter = self.meter
        if meter is not None:
            meter[0] = expanded
            meter[1] = generated
            if meter[2]:
                raise Abandoned()

    # -- the visited set -------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """Bytes of the visited set and its records."""
        return self.table.nbytes + self.rec_parent.nbytes + self.rec_sidx.nbytes + self.rec_index.nbytes

    def add_roots(self, positions: list[int]) -> list[int]:
        """Record the initial states just inserted into the table (``local.insert_initial``: their
        positions among the initial states, in order); returns ``positions``."""
        self.rec_parent.extend(np.full(len(positions), -1, dtype=np.int32))
        self.rec_sidx.extend(np.array(positions, dtype=np.uint16))
        self.rec_index.extend(np.arange(len(positions)))
        return positions

    def drop_candidates(self) -> None:
        """Forget the candidates of an expand (an abandoned level)."""
        self.cand.discard()
        self.cand = self.store.new()
        self.inbox = (_EMPTY, _EMPTY)

    def restore(self, table: FingerprintTable, lineage: Lineage, distinct: int, frontier: Frontier) -> None:
        """Continue from a checkpoint: its ``distinct`` visited states and their lineage, and the
        frontier (its last states, in order)."""
        self.table = table
        parent, sidx = lineage.columns()
        self.rec_parent = Column(np.int32, parent[:distinct])
        self.rec_sidx = Column(np.uint16, sidx[:distinct])
        self.rec_index = Column(np.int32, np.arange(distinct))
        self.frontier = frontier
        self.ranks = np.arange(len(frontier), dtype=np.int64)

    def start(self, frontier: Frontier) -> None:
        """The first level: the initial states kept, in order (their ranks)."""
        self.frontier = frontier
        self.ranks = np.arange(len(frontier), dtype=np.int64)

    def record(self, index: int) -> tuple[int, int, int] | None:
        """(fingerprint, parent index, successor index) of the state with this index, if owned here."""
        indexes = self.rec_index.values()
        r = int(np.searchsorted(indexes, index))
        if r == len(indexes) or indexes[r] != index:
            return None
        return self.table.fingerprint(r), self.rec_parent[r], self.rec_sidx[r]

    def columns(self, upto: int) -> tuple[bytes, bytes, bytes, bytes]:
        """The records of the states with an index below ``upto``: their indexes, fingerprints,
        parent indexes and successor indexes (for a checkpoint)."""
        indexes = self.rec_index.values()
        n = int(np.searchsorted(indexes, upto))
        return (indexes[:n].tobytes(), self.table.fingerprints()[:n].tobytes(),
                self.rec_parent.values()[:n].tobytes(), self.rec_sidx.values()[:n].tobytes())

    def split(self, index: int, count: int) -> None:
        """Become shard ``index`` of ``count``: keep the owned fingerprints and every count-th state
        of the frontier (interleaved, so that no shard holds only the first ranks, which win ties)."""
        n = len(self.rec_index)  # a fork comes between levels: every record has its index
        fps = self.table.fingerprints()[:n]
        mine = _owners(fps, count) == index
        self.table = FingerprintTable.of(fps[mine])
        self.rec_parent = Column(np.int32, self.rec_parent.values()[:n][mine])
        self.rec_sidx = Column(np.uint16, self.rec_sidx.values()[:n][mine])
        self.rec_index = Column(np.int32, self.rec_index.values()[:n][mine])
        budget = self.store.budget
        self.store = self.store.forked(f"w{index}", None if budget is None else max(1, budget // count))
        mine_states = self.store.new()
        at = 0
        for chunk in self.frontier.chunks(SPILL_CHUNK):
            mine_states.extend(chunk[(index - at) % count::count])
            at += len(chunk)
        self.frontier = mine_states  # the parent's frontier and its files stay the parent's
        self.base = (mine_states, _EMPTY)
        self.cand = self.store.new()
        self.ranks = self.ranks[index::count].copy()
        self.index, self.count = index, count

    # -- a level ---------------------------------------------------------------------------

    def expand(self) -> tuple[list[tuple[bytes, bytes]], int, Any, Any, tuple[list[int], list[int]]]:
        """Successors of the frontier, first occurrences only, left for their owners (in a file per
        owner in the store's shared directory; kept here without workers): returns how many each
        owner gets;
        plus successors generated, the first action-property violation (rank, successor index,
        name, target fingerprint), the rank of the first deadlock and the coverage (enabled,
        generated per action)."""
        p, key, aprops, constraint, fpr = self.p, self.key, self.aprops, self.spec.constraint, self.fpr
        rank_shift, index_shift = self.layout.rank_shift, self.layout.action_bits
        if self.keeps_base:
            if self.base[0] is not self.frontier:
                self.base[0].discard()
            self.base = (self.frontier, self.ranks)
        # This level's candidates so far (a table, not a set of Python ints: a third of the
        # memory at the widest level), and the successors of one batch of frontier states,
        # looked up together.
        seen = FingerprintTable()
        cand = self.store.new()
        ckeys, cfps = Column(np.int64), Column(np.int64)
        generated = 0
        cov_en = [0] * len(self.actions)
        cov_gen = [0] * len(self.actions)
        aprop_found = None
        dead_found = None
        pos = 0
        for chunk in self.frontier.chunks(CHUNK):
            bt: list[Any] = []
            bk, bf = array("q"), array("q")
            tapp, kapp, fapp = bt.append, bk.append, bf.append
            for s, rank in zip(chunk, self.ranks[pos:pos + len(chunk)].tolist()):
                if not pos & 255:
                    self.report(pos, generated)
                pos += 1
                if constraint is not None and not constraint(p, s):
                    continue
                validating = fpr.validating  # once per state; check() stops at its own quota
                base = rank << rank_shift
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
                                    aprop_found = (rank, i, pname, k)
                            tapp(t)
                            kapp(base | i << index_shift | ai)
                            fapp(k)
                            i += 1
                        if i != j:
                            cov_en[ai] += 1
                            cov_gen[ai] += i - j
                except (KafkamcError, KeyboardInterrupt) as exc:
                    if isinstance(exc, SpecRaised):
                        raise _ranked(exc, rank)
                    raise
                except Exception as exc:
                    raise _ranked(_classify(self.spec, s, exc, self.invs, self.aprops), rank) from exc
                if i > MAX_SUCCESSORS:
                    raise UsageError(f"spec {self.spec.name}: a state has {i} successors; at most {MAX_SUCCESSORS} are supported")
                generated += i
                if i == 0 and self.deadlock and dead_found is None:
                    dead_found = rank
            if not bt:
                continue
            fps = _int64(bf)
            # A successor this shard owns and has visited is dropped here rather than by the
            # merge (the same decision: the table does not change until the merge), and of the
            # rest only a fingerprint's first occurrence in the level, its smallest key, is kept.
            mine = _owners(fps, self.count) == self.index
            fresh = np.ones(len(fps), dtype=bool)
            fresh[mine] = ~self.table.contains(fps[mine])
            sel = np.flatnonzero(fresh)
            sel = sel[seen.insert(fps[sel])]
            ckeys.extend(_int64(bk)[sel])
            cfps.extend(fps[sel])
            cand.extend(list(map(bt.__getitem__, sel.tolist())))
        del seen
        self.cand.discard()
        self.cand = cand
        self.cand_keys = ckeys.values()
        self.cand_fps = cfps.values()
        self.level_cov = (cov_en, cov_gen)
        self.report(len(self.frontier), generated)
        if self.count == 1:
            out = [len(self.cand_fps)]
            self.inbox = (self.cand_fps, self.cand_keys)
        else:
            # Each owner's candidates go to a file of their own that the owner reads straight
            # into its arrays: through the coordinator's pipes they were pickled, copied and
            # held by three processes at once, the largest transient of a level at 10^8 states.
            own = _owners(self.cand_fps, self.count)
            out = []
            for o in range(self.count):
                sel = np.flatnonzero(own == o)  # in key order, as the owner expects
                with open(self._exchange(self.index, o), "wb") as f:
                    self.cand_fps[sel].tofile(f)
                    self.cand_keys[sel].tofile(f)
                out.append(len(sel))
                del sel
            del own
        self.cand_fps = _EMPTY  # the owners have them now
        return out, generated, aprop_found, dead_found, self.level_cov

    def _exchange(self, sender: int, owner: int) -> Path:
        """The file in which shard ``sender`` leaves shard ``owner`` its candidates of a level."""
        return self.store.shared(f"w{sender}-to-w{owner}.candidates")

    def _received(self, sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """The candidates each shard sent here in the last expand (``sizes[g]`` from shard ``g``):
        fingerprints and keys, each sender's part after the previous one's, and where each part
        ends."""
        if self.count == 1:
            fps, keys = self.inbox
            self.inbox = (_EMPTY, _EMPTY)
            if len(fps) != sizes[0]:
                raise RuntimeError(f"internal: {len(fps)} candidates kept, {sizes[0]} announced")
            return fps, keys, [len(fps)]
        total = sum(sizes)
        fps = np.empty(total, dtype=np.int64)
        keys = np.empty(total, dtype=np.int64)
        at = 0
        for g, size in enumerate(sizes):
            path = self._exchange(g, self.index)
            with open(path, "rb") as f:
                got = f.readinto(memoryview(fps[at:at + size]).cast("B")) + \
                    f.readinto(memoryview(keys[at:at + size]).cast("B"))
                if got != 16 * size or f.read(1):
                    raise RuntimeError(f"internal: {path.name} does not hold the {size} candidates announced")
            path.unlink()
            at += size
        return fps, keys, np.cumsum(sizes).tolist()

    def merge(self, sizes: Sequence[int], level_start: int) -> list[bytes]:
        """Of the candidates each shard sent here in the last expand (``sizes[g]`` from shard
        ``g``), record the new fingerprints at their smallest key (the level expanded starts at
        index ``level_start``); per generator, the keys it won, sorted."""
        fps, keys, ends = self._received(sizes)
        if not len(keys):
            return [b""] * len(sizes)
        # Keys are distinct (one per parent and successor index), so in key order a fingerprint's
        # first occurrence is its smallest key, and the table's insert keeps first occurrences and
        # numbers the new ones in that order, like their records. In parts: the gathered
        # fingerprints and the table's scratch stay a quarter million keys however wide the level.
        order = np.argsort(keys, kind="stable")  # each sender's part is sorted: merged runs
        parts = [order[at:at + _PART][self.table.insert(fps[order[at:at + _PART]])]
                for at in range(0, len(order), _PART)]
        del fps, order
        winners = np.concatenate(parts)  # positions of the winning candidates, in key order
        del parts
        wkeys = keys[winners]
        self.rec_parent.extend((level_start + (wkeys >> self.layout.rank_shift)).astype(np.int32))
        self.rec_sidx.extend(((wkeys >> self.layout.action_bits) & _INDEX_MASK).astype(np.uint16))
        wsrc = np.searchsorted(np.array(ends), winners, side="right")
        return [wkeys[wsrc == g].tobytes() for g in range(len(sizes))]

    def keep(self, won: bytes, ranks: bytes, owned: bytes) -> tuple[int, Any, list[int], int, int]:
        """The candidates whose keys ``won`` (sorted), ranked ``ranks``, become the frontier; the
        states this shard recorded in the last merge get the indexes ``owned``. Returns the
        frontier's size, its first invariant violation in rank order (key, name, rank), the states
        each action found first, the bytes of the visited set and the bytes written to the
        shard's files so far."""
        # Read-only views of the request's bytes, not copies: the request is a level's width.
        self.rec_index.extend(np.frombuffer(owned, dtype=np.int64))
        wkeys = np.frombuffer(won, dtype=np.int64)
        wranks = np.frombuffer(ranks, dtype=np.int64)
        idx = np.searchsorted(self.cand_keys, wkeys)  # ascending: both are in key order
        if not self.keeps_base:  # a checkpoint may still need it (scatter "base")
            self.frontier.discard()
        nxt = self.store.new()
        bad = None
        at = 0
        for chunk in self.cand.chunks(SPILL_CHUNK):
            lo, hi = np.searchsorted(idx, [at, at + len(chunk)]).tolist()
            part = list(map(chunk.__getitem__, (idx[lo:hi] - at).tolist()))
            nxt.extend(part)
            if bad is None:
                bad = self._first_violation(part, wkeys[lo:hi], wranks[lo:hi], lo)
            at += len(chunk)
        dist = self._distinct(wkeys)
        self.ranks = wranks
        self.frontier = nxt
        self.cand.discard()
        self.cand, self.cand_keys, self.cand_fps = self.store.new(), _EMPTY, _EMPTY
        return len(nxt), bad, dist, self.nbytes, self.store.bytes_written

    def _first_violation(self, states: list[Any], keys: np.ndarray, ranks: np.ndarray,
                         done: int) -> tuple[int, str, int] | None:
        """The first of ``states`` (in rank order, after ``done`` others of the level) that
        violates an invariant: (key, name, rank)."""
        p, invs = self.p, self.invs
        if not invs:
            return None
        pos, name, t = 0, "", None
        try:
            # Inline rather than local.first_violation per state: a call per state costs ~5%.
            meter = self.meter
            for pos, t in enumerate(states):
                if not (done + pos) & 255 and meter is not None and meter[2]:
                    raise Abandoned()
                for name, fn in invs:
                    r = fn(p, t)
                    if r is not True and fails(r, f"invariant {name}", t):
                        return int(keys[pos]), name, int(ranks[pos])
        except (KafkamcError, Abandoned):
            raise
        except Exception as exc:
            raise _ranked(SpecRaised(f"invariant {name}", t, exc), int(ranks[pos])) from exc
        return None

    def _distinct(self, keys: np.ndarray) -> list[int]:
        """Per action, how many of these winning keys it yielded (the states it found first)."""
        return np.bincount(keys & self.layout.action_mask, minlength=len(self.actions)).tolist()

    def tally(self, cut: int, won: bytes) -> tuple[list[int], list[int], list[int]]:
        """Coverage of a level cut short by a bound at the successor with key ``cut``, as the
        sequential engine counts it: enabled and generated per action up to that successor,
        distinct among the keys ``won`` below it."""
        wkeys = _int64(won)
        dist = self._distinct(wkeys[wkeys < cut])
        cut_rank, cut_i = self.layout.order(cut)
        before = int(np.searchsorted(self.ranks, cut_rank))  # the states expanded in full
        en = [0] * len(self.actions)
        gen = [0] * len(self.actions)
        at = 0
        for chunk in self.frontier.chunks(SPILL_CHUNK):
            if at > before:
                break
            whole = chunk[:before - at]
            parts = [tally(self.p, self.actions, self.spec.constraint, whole, sys.maxsize - 1)]
            if at <= before < at + len(chunk) and self.ranks[before] == cut_rank:  # the state cut short
                parts.append(tally(self.p, self.actions, self.spec.constraint, chunk[before - at:before - at + 1], cut_i))
            for e, g in parts:
                en = [a + b for a, b in zip(en, e)]
                gen = [a + b for a, b in zip(gen, g)]
            at += len(chunk)
        return en, gen, dist

    # -- checkpoints -------------------------------------------------------------------------

    def scatter(self, bounds: Sequence[int], which: str) -> list[bytes]:
        """The frontier (``frontier``, or ``base``: the one the last expand started from) cut by
        rank at ``bounds``: part ``w`` holds its states of ranks ``bounds[w]`` to ``bounds[w + 1]``,
        with their ranks, for the shard that writes that part of a checkpoint."""
        states, ranks = self.base if which == "base" else (self.frontier, self.ranks)
        cuts = np.searchsorted(ranks, bounds).tolist()
        parts: list[list[Any]] = [[] for _ in range(len(cuts) - 1)]
        at, w = 0, 0
        for chunk in states.chunks(SPILL_CHUNK):
            end = at + len(chunk)
            while w < len(parts):
                a, b = max(cuts[w], at), min(cuts[w + 1], end)
                if a < b:
                    parts[w].extend(chunk[a - at:b - at])
                if cuts[w + 1] > end:
                    break
                w += 1
            at = end
        return [pickle.dumps((part, ranks[a:b].tobytes()), protocol=pickle.HIGHEST_PROTOCOL)
                for part, a, b in zip(parts, cuts, cuts[1:])]

    def dump(self, directory: str, name: str, parts: Sequence[bytes]) -> tuple[FileEntry, int]:
        """Write the states ``scatter`` sent here, in rank order, as a checkpoint's frontier file."""
        states: list[Any] = []
        ranks = []
        for data in parts:
            part, r = pickle.loads(data)
            states.extend(part)
            ranks.append(_int64(r))
        order = np.argsort(np.concatenate(ranks) if ranks else _EMPTY, kind="stable").tolist()
        ordered = [states[j] for j in order]
        return write_frontier(directory, name, chunked(ordered)), len(ordered)

    # -- rebalancing -------------------------------------------------------------------------

    def take(self, count: int) -> bytes:
        """Give away the last ``count`` states of the frontier, with their ranks."""
        cut = len(self.frontier) - count
        kept = self.store.new()
        moved: list[Any] = []
        at = 0
        for chunk in self.frontier.chunks(SPILL_CHUNK):
            if at < cut:
                kept.extend(chunk[:cut - at])
            moved.extend(chunk[max(cut - at, 0):])
            at += len(chunk)
        data = pickle.dumps((moved, self.ranks[cut:].tobytes()), protocol=pickle.HIGHEST_PROTOCOL)
        self.frontier.discard()
        self.frontier, self.ranks = kept, self.ranks[:cut].copy()
        return data

    def give(self, data: bytes) -> int:
        """Take states given away by another shard, keeping the frontier in rank order."""
        states, ranks = pickle.loads(data)
        ranks_all = np.concatenate([self.ranks, _int64(ranks)])
        order = np.argsort(ranks_all, kind="stable")
        mine = len(self.ranks)
        merged = self.store.new()
        own = _states(self.frontier)
        batch: list[Any] = []
        # Both are in rank order: the merged order takes each in its own order.
        for j in order.tolist():
            batch.append(next(own) if j < mine else states[j - mine])
            if len(batch) == SPILL_CHUNK:
                merged.extend(batch)
                batch = []
        merged.extend(batch)
        self.frontier.discard()
        self.frontier, self.ranks = merged, ranks_all[order]
        return len(merged)
