"""One worker's share of a multicore search: the fingerprints it owns and the frontier states it holds.

The visited set is sharded by fingerprint, as in the Spark engine: of ``count`` shards, shard ``i``
owns the fingerprints ``f`` with ``f mod count == i`` (``f`` read as unsigned 64-bit) and keeps,
per owned state, the fingerprint of its parent and the successor index that reached it, so a
counterexample is rebuilt by asking the owners, one step back at a time.

Frontier states stay with the shard that generated them (states are pickled only when the frontier
is rebalanced). Each carries its *rank*: its position in its level in the sequential engine's
order. A successor's *key* is ``(rank of its parent << 24) | (successor index << 8) | action``
(the action is a function of the other two, so keys sort as (rank, successor index)); the
sequential engine discovers a state at its smallest key, so the owner keeps, for every new fingerprint, the
candidate with the smallest key, and sorting the level's new keys gives the next level's ranks.
Hence distinct states, generated, depth, coverage, verdict and trace are the sequential engine's
whatever the number of shards.

A level, as the coordinator (``multicore``) drives it:

1. ``expand``: run every action on the shard's frontier, check action properties, deduplicate
   locally, and sort the candidates (fingerprint, key, parent fingerprint) by owner;
2. ``merge`` (on the owner): of all candidates sent to it, drop those already visited, keep the
   smallest key per fingerprint, record them, and tell each generator which of its keys won;
3. ``keep`` (on the generator): the winners, with their ranks, become its next frontier; check
   the invariants on them in rank order.
"""

from __future__ import annotations

import pickle
import sys
from array import array
from typing import Any, Callable, Sequence

import numpy as np

from kafkamc.checker.column import Column
from kafkamc.checker.fingerprint import Fingerprinter
from kafkamc.checker.fptable import FingerprintTable
from kafkamc.checker.lineage import MAX_SUCCESSORS
from kafkamc.checker.local import _classify, tally
from kafkamc.errors import KafkamcError, SpecRaised, UsageError
from kafkamc.invariants.api import Property, fails
from kafkamc.spec.api import Spec, format_label

__all__ = ["Shard", "owner_of", "key_order", "MAX_ACTIONS"]

# A key packs the parent's rank, the successor index and the action (see above).
_RANK_SHIFT = 24
_INDEX_SHIFT = 8
_INDEX_MASK = 0xFFFF
_ACTION_MASK = 0xFF
MAX_ACTIONS = _ACTION_MASK + 1
# Successor indexes run to MAX_SUCCESSORS - 1 (65534): the record of an initial state is marked
# with 0xFFFF.
_ROOT = _INDEX_MASK
_U64 = (1 << 64) - 1
_EMPTY = np.empty(0, dtype=np.int64)


def owner_of(fp: int, count: int) -> int:
    """The shard that owns fingerprint ``fp`` (a signed 64-bit int, read as unsigned)."""
    return (fp & _U64) % count


def key_order(key: int) -> tuple[int, int]:
    """(rank of the parent, successor index) of a key: the sequential engine's order."""
    return key >> _RANK_SHIFT, (key >> _INDEX_SHIFT) & _INDEX_MASK


def _owners(fps: np.ndarray, count: int) -> np.ndarray:
    return (fps.view(np.uint64) % np.uint64(count)).astype(np.intp)


def _int64(data: bytes | array) -> np.ndarray:
    return np.frombuffer(data, dtype=np.int64).copy() if len(data) else _EMPTY


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
                 fpr: Fingerprinter, deadlock: bool) -> None:
        self.spec = spec
        self.p = spec.p
        self.actions = [(ai, a.name, a.fn) for ai, a in enumerate(spec.actions())]
        self.invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]
        self.aprops = [(pr.name, pr.fn) for pr in props if pr.kind == "action"]
        self.key = key
        self.fpr = fpr
        self.deadlock = deadlock
        self.index, self.count = 0, 1
        if len(self.actions) > MAX_ACTIONS:
            raise UsageError(f"spec {spec.name}: {len(self.actions)} actions; at most {MAX_ACTIONS} are supported")
        # The owned part of the visited set, and per fingerprint (by its index in the table) a
        # record: the parent's fingerprint and the successor index (initial state i: i and _ROOT).
        self.table = FingerprintTable()
        self.rec_parent = Column(np.int64)
        self.rec_sidx = Column(np.uint16)
        # The frontier, in rank order, with each state's rank and fingerprint.
        self.frontier: list[Any] = []
        self.ranks = _EMPTY
        self.fps = _EMPTY
        # The candidates of the last expand, in key order.
        self.cand: list[Any] = []
        self.cand_keys = _EMPTY
        self.cand_fps = _EMPTY
        self.level_cov: tuple[list[int], list[int]] = ([], [])

    def report(self, expanded: int, generated: int) -> None:
        meter = self.meter
        if meter is not None:
            meter[0] = expanded
            meter[1] = generated

    # -- the visited set -------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """Bytes of the visited set and its records."""
        return self.table.nbytes + self.rec_parent.nbytes + self.rec_sidx.nbytes

    def add_roots(self, fps: np.ndarray) -> np.ndarray:
        """Record the initial states (fingerprints in order); which are new (the first of equal ones)."""
        new = self.table.insert(fps)
        index = np.flatnonzero(new)
        self.rec_parent.extend(index)
        self.rec_sidx.extend(np.full(len(index), _ROOT, dtype=np.uint16))
        return new

    def start(self, frontier: list[Any], fps: Sequence[int]) -> None:
        """The first level: the initial states kept, in order (their ranks)."""
        self.frontier = frontier
        self.ranks = np.arange(len(frontier), dtype=np.int64)
        self.fps = np.array(fps, dtype=np.int64)

    def record(self, fp: int) -> tuple[int | None, int]:
        """(parent fingerprint, successor index) of an owned state; (None, i) for initial state i."""
        r = int(self.table.index(np.array([fp], dtype=np.int64))[0])
        if self.rec_sidx[r] == _ROOT:
            return None, self.rec_parent[r]
        return self.rec_parent[r], self.rec_sidx[r]

    def split(self, index: int, count: int) -> None:
        """Become shard ``index`` of ``count``: keep the owned fingerprints and every count-th state
        of the frontier (interleaved, so that no shard holds only the first ranks, which win ties)."""
        table = self.table
        fps = np.array([table.fingerprint(i) for i in range(len(table))], dtype=np.int64)
        mine = _owners(fps, count) == index
        self.table = FingerprintTable(capacity=int(mine.sum()))
        self.table.insert(fps[mine])
        self.rec_parent = Column(np.int64, self.rec_parent.values()[mine])
        self.rec_sidx = Column(np.uint16, self.rec_sidx.values()[mine])
        self.frontier = self.frontier[index::count]
        self.ranks = self.ranks[index::count].copy()
        self.fps = self.fps[index::count].copy()
        self.index, self.count = index, count

    # -- a level ---------------------------------------------------------------------------

    def expand(self) -> tuple[list[tuple[bytes, bytes, bytes]], int, Any, Any, tuple[list[int], list[int]]]:
        """Successors of the frontier, first occurrences only, as per-owner (fingerprints, keys,
        parent fingerprints); plus successors generated, the first action-property violation
        (rank, successor index, name, target fingerprint, source fingerprint), the first deadlock
        (rank, fingerprint) and the coverage (enabled, generated per action)."""
        p, key, aprops, constraint, fpr = self.p, self.key, self.aprops, self.spec.constraint, self.fpr
        local: set[int] = set()
        ckeys, cfps = array("q"), array("q")
        cand: list[Any] = []
        generated = 0
        cov_en = [0] * len(self.actions)
        cov_gen = [0] * len(self.actions)
        aprop_found = None
        dead_found = None
        for pos, (s, rank, pf) in enumerate(zip(self.frontier, self.ranks.tolist(), self.fps.tolist())):
            if not pos & 255:
                self.report(pos, generated)
            if constraint is not None and not constraint(p, s):
                continue
            validating = fpr.validating  # once per state; check() stops at its own quota
            base = rank << _RANK_SHIFT
            i = 0
            try:
                for ai, aname, fn in self.actions:
                    j = i
                    for label, t in fn(p, s):
                        if validating:
                            fpr.check(t)
                        k = key(t)
                        if aprops and aprop_found is None:
                            flabel = format_label(aname, label)
                            for pname, pfn in aprops:
                                r = pfn(p, s, flabel, t)
                                if r is not True and fails(r, f"action property {pname} ({flabel})", s):
                                    aprop_found = (rank, i, pname, k, pf)
                                    break
                        if k not in local:
                            local.add(k)
                            ckeys.append(base | i << _INDEX_SHIFT | ai)
                            cfps.append(k)
                            cand.append(t)
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
                dead_found = (rank, pf)
        self.cand = cand
        self.cand_keys = _int64(ckeys)
        self.cand_fps = _int64(cfps)
        self.level_cov = (cov_en, cov_gen)
        self.report(len(self.frontier), generated)
        # Each candidate's parent, by its rank (the frontier is in rank order).
        par = self.fps[np.searchsorted(self.ranks, self.cand_keys >> _RANK_SHIFT)]
        if self.count == 1:
            out = [(self.cand_fps.tobytes(), self.cand_keys.tobytes(), par.tobytes())]
        else:
            own = _owners(self.cand_fps, self.count)
            order = np.argsort(own, kind="stable")  # each owner's candidates stay in key order
            bounds = np.searchsorted(own[order], np.arange(self.count + 1))
            out = []
            for o in range(self.count):
                sel = order[bounds[o]:bounds[o + 1]]
                out.append((self.cand_fps[sel].tobytes(), self.cand_keys[sel].tobytes(), par[sel].tobytes()))
        return out, generated, aprop_found, dead_found, self.level_cov

    def merge(self, parts: Sequence[tuple[bytes, bytes, bytes]]) -> list[bytes]:
        """Of the candidates each shard sent here (``parts[g]`` from shard ``g``), record the new
        fingerprints at their smallest key; per generator, the keys it won, sorted."""
        fps = np.concatenate([_int64(f) for f, _, _ in parts])
        keys = np.concatenate([_int64(k) for _, k, _ in parts])
        par = np.concatenate([_int64(pf) for _, _, pf in parts])
        src = np.repeat(np.arange(len(parts)), [len(k) // 8 for _, k, _ in parts])
        if not len(keys):
            return [b""] * len(parts)
        # Keys are distinct (one per parent and successor index): in key order, a fingerprint's
        # first occurrence is its smallest key; np.unique reports first occurrences.
        order = np.argsort(keys)
        _, first = np.unique(fps[order], return_index=True)
        sel = order[np.sort(first)]  # the winning candidates, in key order
        winners = sel[self.table.insert(fps[sel])]  # indexed in key order, like their records
        wkeys = keys[winners]
        self.rec_parent.extend(par[winners])
        self.rec_sidx.extend(((wkeys >> _INDEX_SHIFT) & _INDEX_MASK).astype(np.uint16))
        wsrc = src[winners]
        return [wkeys[wsrc == g].tobytes() for g in range(len(parts))]

    def keep(self, won: bytes, ranks: bytes) -> tuple[int, Any, list[int], int]:
        """The candidates whose keys ``won`` (sorted), ranked ``ranks``, become the frontier; the
        first invariant violation among them in rank order (key, name, fingerprint); the states
        each action found first; the bytes of the visited set."""
        wkeys = _int64(won)
        idx = np.searchsorted(self.cand_keys, wkeys)
        cand = self.cand
        nxt = [cand[j] for j in idx.tolist()]
        dist = self._distinct(wkeys)
        self.fps = self.cand_fps[idx]
        self.ranks = _int64(ranks)
        self.frontier = nxt
        self.cand, self.cand_keys, self.cand_fps = [], _EMPTY, _EMPTY
        return len(nxt), self._first_violation(nxt, wkeys), dist, self.nbytes

    def _first_violation(self, states: list[Any], keys: np.ndarray) -> tuple[int, str, int] | None:
        """The first of ``states`` (in rank order) that violates an invariant: (key, name, fingerprint)."""
        p, invs = self.p, self.invs
        if not invs:
            return None
        pos, name, t = 0, "", None
        try:
            # Inline rather than local.first_violation per state: a call per state costs ~5%.
            for pos, t in enumerate(states):
                for name, fn in invs:
                    r = fn(p, t)
                    if r is not True and fails(r, f"invariant {name}", t):
                        return int(keys[pos]), name, int(self.fps[pos])
        except KafkamcError:
            raise
        except Exception as exc:
            raise _ranked(SpecRaised(f"invariant {name}", t, exc), int(self.ranks[pos])) from exc
        return None

    def _distinct(self, keys: np.ndarray) -> list[int]:
        """Per action, how many of these winning keys it yielded (the states it found first)."""
        return np.bincount(keys & _ACTION_MASK, minlength=len(self.actions)).tolist()

    def tally(self, cut: int, won: bytes) -> tuple[list[int], list[int], list[int]]:
        """Coverage of a level cut short by a bound at the successor with key ``cut``, as the
        sequential engine counts it: enabled and generated per action up to that successor,
        distinct among the keys ``won`` below it."""
        wkeys = _int64(won)
        dist = self._distinct(wkeys[wkeys < cut])
        cut_rank, cut_i = key_order(cut)
        before = int(np.searchsorted(self.ranks, cut_rank))  # the states expanded in full
        en, gen = tally(self.p, self.actions, self.spec.constraint, self.frontier[:before], sys.maxsize - 1)
        if before < len(self.frontier) and self.ranks[before] == cut_rank:  # the state cut short is here
            part = tally(self.p, self.actions, self.spec.constraint, self.frontier[before:before + 1], cut_i)
            en = [a + b for a, b in zip(en, part[0])]
            gen = [a + b for a, b in zip(gen, part[1])]
        return en, gen, dist

    # -- rebalancing -------------------------------------------------------------------------

    def take(self, count: int) -> bytes:
        """Give away the last ``count`` states of the frontier, with their ranks and fingerprints."""
        cut = len(self.frontier) - count
        moved = (self.frontier[cut:], self.ranks[cut:].tobytes(), self.fps[cut:].tobytes())
        self.frontier, self.ranks, self.fps = self.frontier[:cut], self.ranks[:cut].copy(), self.fps[:cut].copy()
        return pickle.dumps(moved, protocol=pickle.HIGHEST_PROTOCOL)

    def give(self, data: bytes) -> int:
        """Take states given away by another shard, keeping the frontier in rank order."""
        states, ranks, fps = pickle.loads(data)
        everything = self.frontier + states
        ranks_all = np.concatenate([self.ranks, _int64(ranks)])
        order = np.argsort(ranks_all, kind="stable")
        self.frontier = [everything[j] for j in order.tolist()]
        self.ranks = ranks_all[order]
        self.fps = np.concatenate([self.fps, _int64(fps)])[order]
        return len(self.frontier)
