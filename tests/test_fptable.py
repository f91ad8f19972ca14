"""The numpy fingerprint table and the lineage columns against a Python dict, the model they replace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkamc.checker.column import Column
from kafkamc.checker.fptable import FingerprintTable
from kafkamc.checker.lineage import Lineage

INT64 = st.integers(-(2**63), 2**63 - 1)
# Small values collide in the table's home slots; extremes test the sign and the mixing.
KEYS = st.one_of(st.integers(-3, 40), st.sampled_from([-(2**63), 2**63 - 1, 2**61 - 1, -1, -2]), INT64)


def insert_like_a_dict(d: dict[int, int], keys: list[int]) -> list[bool]:
    out = []
    for k in keys:
        out.append(k not in d)
        d.setdefault(k, len(d))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(KEYS, max_size=300), max_size=12), st.integers(0, 5000))
def test_batches_match_a_dict_first_occurrence_and_indexes(batches, capacity):
    table = FingerprintTable(capacity=capacity)
    d: dict[int, int] = {}
    for batch in batches:
        new = table.insert(np.array(batch, dtype=np.int64))
        assert new.tolist() == insert_like_a_dict(d, batch)
        assert len(table) == len(d)
    keys = np.array(list(d), dtype=np.int64)
    assert table.index(keys).tolist() == list(d.values())
    assert all(table.fingerprint(i) == k for k, i in d.items())
    absent = np.array([k for k in (-7, 12345, 2**62) if k not in d], dtype=np.int64)
    assert not table.contains(absent).any()
    assert (table.index(absent) == -1).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(KEYS, max_size=300), max_size=6), st.integers(1, 7))
def test_a_batch_inserted_in_parts_is_one_batch(batches, part):
    """A batch past ``_LOAD_BATCH`` is inserted in parts (bounded scratch): same masks, indexes."""
    import kafkamc.checker.fptable as fptable

    whole, parts = FingerprintTable(), FingerprintTable()
    saved = fptable._LOAD_BATCH
    for batch in batches:
        keys = np.array(batch, dtype=np.int64)
        expected = whole.insert(keys)
        fptable._LOAD_BATCH = part
        try:
            got = parts.insert(keys)
        finally:
            fptable._LOAD_BATCH = saved
        assert got.tolist() == expected.tolist()
    assert parts.fingerprints().tolist() == whole.fingerprints().tolist()


def test_growth_by_doubling_keeps_every_key_and_bounds_the_bytes():
    rng = np.random.default_rng(7)
    keys = rng.integers(-(2**63), 2**63 - 1, size=300_000, dtype=np.int64)
    table = FingerprintTable()
    for start in range(0, len(keys), 7_000):
        assert table.insert(keys[start:start + 7_000]).all()
    assert len(table) == len(keys)
    assert table.contains(keys).all()
    assert (table.index(keys) == np.arange(len(keys))).all()
    assert not table.insert(keys[::3]).any()
    # 4-byte slots at most half full plus the 8-byte column with at most an eighth of slack.
    assert table.nbytes / len(table) <= 8 * 1.125 + 16


def test_a_batch_of_one_key_many_times_adds_it_once_at_its_first_position():
    table = FingerprintTable()
    table.insert(np.array([5, 6], dtype=np.int64))
    new = table.insert(np.array([9, 5, 9, 9, 7, 7], dtype=np.int64))
    assert new.tolist() == [True, False, False, False, True, False]
    assert table.index(np.array([9, 7], dtype=np.int64)).tolist() == [2, 3]
    assert table.insert(np.array([], dtype=np.int64)).tolist() == []


def test_save_and_load_round_trip(tmp_path):
    table = FingerprintTable()
    keys = np.array([3, -1, 2**63 - 1, 17, -(2**63)], dtype=np.int64)
    table.insert(keys)
    table.save(tmp_path)
    again = FingerprintTable.load(tmp_path)
    assert len(again) == len(table)
    assert again.index(keys).tolist() == list(range(len(keys)))
    assert not again.insert(keys).any()
    assert again.insert(np.array([4], dtype=np.int64)).tolist() == [True]
    assert [p.name for p in tmp_path.iterdir()] == ["fingerprints.npy"]  # no temporary left behind


def test_load_refuses_a_missing_or_damaged_file(tmp_path):
    with pytest.raises(ValueError, match="missing"):
        FingerprintTable.load(tmp_path)
    (tmp_path / "fingerprints.npy").write_bytes(b"not numpy")
    with pytest.raises(ValueError, match="damaged"):
        FingerprintTable.load(tmp_path)
    np.save(tmp_path / "fingerprints.npy", np.array([1.5]))
    with pytest.raises(ValueError, match="1-D int64"):
        FingerprintTable.load(tmp_path)
    np.save(tmp_path / "fingerprints.npy", np.array([1, 2, 1], dtype=np.int64))
    with pytest.raises(ValueError, match="twice"):
        FingerprintTable.load(tmp_path)


def test_lineage_paths_and_save_load(tmp_path):
    lin = Lineage()
    lin.append(-1, 0)
    lin.append(-1, 1)
    lin.extend(np.array([0, 1, 2]), np.array([4, 0, 65535]))
    assert lin.chain(4) == [0, 2, 4]
    assert lin.path(4) == [0, 4, 65535]
    assert lin.path(3) == [1, 0]
    assert lin.path(0) == [0]
    lin.save(tmp_path)
    again = Lineage.load(tmp_path)
    assert [again.path(i) for i in range(len(again))] == [lin.path(i) for i in range(len(lin))]
    np.save(tmp_path / "parent.npy", np.array([-1, 5, 0, 1, 2], dtype=np.int32))
    with pytest.raises(ValueError, match="earlier state"):
        Lineage.load(tmp_path)
    np.save(tmp_path / "parent.npy", np.array([-1], dtype=np.int32))
    with pytest.raises(ValueError, match="1 parents but 5"):
        Lineage.load(tmp_path)


def test_column_grows_in_place_by_an_eighth():
    col = Column(np.int32)
    for i in range(5000):
        col.append(i)
    col.extend(np.arange(5000, 100_000))
    assert col.values().tolist() == list(range(100_000))
    assert col.nbytes <= 4 * 100_000 * 1.125 + 4 * 1024
    assert col[99_999] == 99_999
    with pytest.raises(IndexError):
        col[100_000]
    col.set_length(10)
    assert len(col) == 10 and col.values().tolist() == list(range(10))


class Stop(BaseException):
    pass


class Interrupted(FingerprintTable):
    """A table whose ``countdown``-th probing round is interrupted, before or after it writes the
    slots: as the memory guard's stop, raised from a signal handler, lands anywhere."""

    def __init__(self, capacity: int, countdown: int, after: bool) -> None:
        super().__init__(capacity)
        self.countdown, self.after = countdown, after

    def _probe(self, *args, **kwargs):
        self.countdown -= 1
        if self.countdown == 0 and not self.after:
            raise Stop
        out = super()._probe(*args, **kwargs)
        if self.countdown == 0:
            raise Stop
        return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(KEYS, max_size=300), min_size=1, max_size=10), st.integers(0, 3000),
       st.integers(1, 12), st.booleans())
def test_an_interrupted_insertion_or_growth_leaves_the_table_as_before_it(batches, capacity, countdown, after):
    # The local engine reads the table after a stop (its size for the result, its fingerprints
    # for a checkpoint); a run resumed from that checkpoint goes on inserting and looking up.
    table = Interrupted(capacity, countdown, after)
    d: dict[int, int] = {}
    for batch in batches:
        try:
            new = table.insert(np.array(batch, dtype=np.int64))
        except Stop:
            assert len(table) == len(d) and table.nbytes > 0
            assert table.fingerprints().tolist() == list(d)
            assert table.index(np.array(batch, dtype=np.int64)).tolist() == [d.get(k, -1) for k in batch]
            # Resumed: the same successors again.
            new = table.insert(np.array(batch, dtype=np.int64))
        assert new.tolist() == insert_like_a_dict(d, batch)
    table.countdown = -1
    keys = np.array(list(d), dtype=np.int64)
    assert table.index(keys).tolist() == list(d.values())
    more = [k for k in (-7, 12345, 2**62, 3, 4) if k not in d]
    assert not table.contains(np.array(more, dtype=np.int64)).any()
    assert table.insert(np.array(more, dtype=np.int64)).all()
