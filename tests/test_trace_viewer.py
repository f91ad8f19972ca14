"""Trace files and tools: ITF writing and reading, ``kafkamc trace show|replay|html``, the viewer page."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from dataclasses import dataclass
from enum import IntEnum

import pytest

from kafkamc.checker.local import explore
from kafkamc.cli import main
from kafkamc.cli.trace import render_document
from kafkamc.counterexamples.html import infer_entities, lanes_of, page_data, render_html, write_html
from kafkamc.counterexamples.itf import (
    itf_to_document, load_trace_file, result_to_itf, write_itf,
)
from kafkamc.counterexamples.render import flatten, render_trace, result_to_json
from kafkamc.invariants.api import action_property, invariant
from kafkamc.spec.api import Param, Spec, action
from kafkamc.spec.registry import build_spec

HOSTILE = '<img src=x onerror="window.__pwned=1">'
HOSTILE_SCRIPT = "</script><script>window.__pwned=2</script>"


# -- a toy spec with per-broker tuples, a set, an enum and a string parameter in its labels ---


class Mode(IntEnum):
    Follower = 0
    Leader = 1


@dataclass(frozen=True, slots=True)
class Cluster:
    epoch: tuple[int, ...]
    log: tuple[tuple[int, ...], ...]
    mode: tuple[Mode, ...]
    isr: frozenset[int]
    leader: int
    fenced: bool


@invariant("committed-safe", "no broker has a log while the ISR is shrunk and the epochs reach the cap")
def committed_safe(p, s) -> bool:
    return len(s.isr) == p.brokers or all(not log for log in s.log) or sum(s.epoch) < p.cap


@action_property("no-shrink-under-a-leader", "the ISR shrinks only while there is no leader")
def no_shrink_under_a_leader(p, s, label, t) -> bool:
    return not (label.startswith("Shrink") and s.leader != 0)


def _put(t: tuple, i: int, v: object) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


class Brokers(Spec):
    """Elections bump a broker's epoch; the leader appends; the ISR shrinks."""

    name = "viewer-brokers"
    description = "a toy cluster for the trace viewer tests"
    parameters = (
        Param("brokers", 2, "number of brokers", min=1, max=10),
        Param("cap", 3, "epoch sum that, with a shrunk ISR and data, breaks committed-safe", min=1, max=20),
        Param("tag", "t", "a string shown in every Elect label"),
        Param("elect", True, "allow elections (off: the spec changed under a stored trace)"),
    )
    invariants = (committed_safe, no_shrink_under_a_leader)
    default_invariants = ("committed-safe",)

    def init_states(p):
        n = p.brokers
        yield Cluster((0,) * n, ((),) * n, (Mode.Follower,) * n, frozenset(range(1, n + 1)), 0, False)

    @action
    def Elect(p, s):
        if not p.elect:
            return
        for b in range(1, p.brokers + 1):
            if s.leader != b and s.epoch[b - 1] < p.cap:
                mode = tuple(Mode.Leader if i == b - 1 else Mode.Follower for i in range(p.brokers))
                yield f"Elect(b{b}, tag={p.tag})", Cluster(
                    _put(s.epoch, b - 1, s.epoch[b - 1] + 1), s.log, mode, s.isr, b, s.fenced)

    @action
    def Append(p, s):
        b = s.leader
        if b and len(s.log[b - 1]) < 2:
            yield f"Append(b{b})", Cluster(
                s.epoch, _put(s.log, b - 1, s.log[b - 1] + (s.epoch[b - 1],)), s.mode, s.isr, b, s.fenced)

    @action
    def Shrink(p, s):
        for b in sorted(s.isr):
            if b != s.leader and len(s.isr) > 1:
                yield f"Shrink(b{b})", Cluster(s.epoch, s.log, s.mode, s.isr - {b}, s.leader, True)


SPEC_REF = f"{__name__}:Brokers"


@pytest.fixture(scope="module")
def toy_result():
    result = explore(Brokers())
    # Pinned from exploring the toy once: the shortest trace elects three times, appends, shrinks.
    assert (result.result, result.violated, result.distinct_states, result.depth) == (
        "violation", "committed-safe", 113, 6)
    assert [s.action for s in result.trace.steps] == [
        None, "Elect(b1, tag=t)", "Elect(b2, tag=t)", "Elect(b1, tag=t)", "Append(b1)", "Shrink(b2)"]
    return result


@pytest.fixture(scope="module")
def toy_files(toy_result, tmp_path_factory):
    from kafkamc.cli.output import write_trace_file

    out = tmp_path_factory.mktemp("out")
    return write_trace_file(toy_result, str(out)), write_itf(toy_result, str(out))


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- ITF -------------------------------------------------------------------------------------


def test_itf_object_uses_itf_encodings_and_meta(toy_result):
    itf = result_to_itf(toy_result)
    meta = itf["#meta"]
    assert meta["format"] == "ITF"
    assert (meta["spec"], meta["invariant"], meta["engine"]) == ("viewer-brokers", "committed-safe", "local")
    assert meta["parameters"] == {"brokers": 2, "cap": 3, "tag": "t", "elect": True}
    assert meta["path"] == list(toy_result.trace.path)
    assert itf["vars"] == ["epoch", "log", "mode", "isr", "leader", "fenced"]
    assert len(itf["states"]) == len(toy_result.trace)
    first, second = itf["states"][0], itf["states"][1]
    assert first["#meta"] == {"index": 0}
    assert second["#meta"] == {"index": 1, "action": "Elect(b1, tag=t)"}
    assert first["epoch"] == {"#tup": [{"#bigint": "0"}, {"#bigint": "0"}]}
    assert first["log"] == {"#tup": [{"#tup": []}, {"#tup": []}]}
    assert first["isr"] == {"#set": [{"#bigint": "1"}, {"#bigint": "2"}]}
    assert first["mode"] == {"#tup": ["Follower", "Follower"]}
    assert second["mode"] == {"#tup": ["Leader", "Follower"]}
    assert first["leader"] == {"#bigint": "0"} and first["fenced"] is False
    # Every state defines every variable, as ITF requires.
    assert all(set(itf["vars"]) <= set(s) for s in itf["states"])


def test_itf_reads_back_to_the_json_trace(toy_result):
    doc = itf_to_document(json.loads(json.dumps(result_to_itf(toy_result))))
    expected = result_to_json(toy_result)
    assert doc["trace"] == expected["trace"]
    assert (doc["spec"], doc["params"], doc["violated"], doc["path"]) == (
        expected["spec"], expected["params"], expected["violated"], expected["path"])


def test_replication_counterexample_round_trips_through_itf(tmp_path):
    result = explore(build_spec("replication", {"replicas": 2, "truncation": "kip101"}))
    assert result.result == "violation"
    path = write_itf(result, str(tmp_path))
    assert path == str(tmp_path / f"replication-{result.violated}.itf.json")
    assert load_trace_file(path)["trace"] == result_to_json(result)["trace"]
    assert main(["trace", "replay", path]) == 0


def test_write_itf_returns_none_without_a_counterexample(tmp_path):
    result = explore(Brokers(cap=20, elect=False))
    assert result.result == "ok" and write_itf(result, str(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []


def test_foreign_itf_with_maps_and_quint_actions_is_read(tmp_path, capsys):
    foreign = {
        "#meta": {"format": "ITF", "source": "bank.qnt"},
        "vars": ["balances", "mbt::actionTaken", "n"],
        "states": [
            {"#meta": {"index": 0}, "balances": {"#map": [["bob", {"#bigint": "5"}], ["al", {"#bigint": "0"}]]},
             "mbt::actionTaken": "init", "n": 1},
            {"#meta": {"index": 1}, "balances": {"#map": [["bob", {"#bigint": "4"}], ["al", {"#bigint": "1"}]]},
             "mbt::actionTaken": "transfer", "n": {"#bigint": "123456789012345678901234567890"}},
        ],
    }
    path = tmp_path / "bank.itf.json"
    path.write_text(json.dumps(foreign))
    doc = load_trace_file(str(path))
    assert doc["spec"] == "bank.qnt" and doc["violated"] is None
    assert doc["trace"] == [
        {"action": None, "state": {"balances": {"bob": 5, "al": 0}, "n": 1}},
        {"action": "transfer", "state": {"balances": {"bob": 4, "al": 1}, "n": 123456789012345678901234567890}},
    ]
    code, out, _ = run(capsys, "trace", "show", str(path))
    assert code == 0
    assert "2. transfer" in out and "balances.bob: 5 -> 4" in out
    assert "n: 1 -> 123456789012345678901234567890" in out
    code, _, err = run(capsys, "trace", "replay", str(path))
    assert code == 2 and "no violated invariant" in err
    # A map with non-string keys keeps its pairs.
    pairs = itf_to_document({"vars": ["m"], "states": [{"m": {"#map": [[{"#bigint": "2"}, True], [1, False]]}}]})
    assert pairs["trace"][0]["state"] == {"m": [[1, False], [2, True]]}


# -- show ------------------------------------------------------------------------------------


def test_show_prints_each_action_and_only_what_changed(toy_files, capsys):
    trace_json, _ = toy_files
    code, out, _ = run(capsys, "trace", "show", trace_json)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("viewer-brokers [brokers=2 cap=3 tag=t elect=true]")
    assert lines[1] == "violation: committed-safe fails after 5 steps (trace of 6 states)"
    blocks = re.split(r"\n(?=\d+\. )", out.split("\n\n", 1)[1].rstrip())
    step = lambda n: [line.strip() for line in blocks[n - 1].splitlines()]  # noqa: E731
    assert step(1)[0] == "1. initial state"
    assert "epoch = (0, 0)" in step(1) and "isr = {1, 2}" in step(1) and "log[1] = ()" in step(1)
    assert step(2) == [
        "2. Elect(b1, tag=t)",
        "epoch: (0, 0) -> (1, 0)",
        "mode: (Follower, Follower) -> (Leader, Follower)",
        "leader: 0 -> 1",
    ]
    assert step(3) == [
        "3. Elect(b2, tag=t)",
        "epoch: (1, 0) -> (1, 1)",
        "mode: (Leader, Follower) -> (Follower, Leader)",
        "leader: 1 -> 2",
    ]
    assert step(5) == [
        "5. Append(b1)", "log[0]: appended 2"]
    assert step(6) == [
        "6. Shrink(b2)   <- committed-safe fails here", "isr: {1, 2} -> {1} (-{2})", "fenced: false -> true"]


def test_show_full_prints_every_field_and_itf_reads_the_same(toy_files, capsys):
    trace_json, trace_itf = toy_files
    code, full, _ = run(capsys, "trace", "show", "--full", trace_json)
    assert code == 0
    for name in ("epoch", "log[0]", "log[1]", "mode", "isr", "leader", "fenced"):
        assert len(re.findall(rf"^\s+{re.escape(name)} = ", full, re.M)) == 6
    code, from_itf, _ = run(capsys, "trace", "show", "--full", trace_itf)
    assert code == 0 and from_itf == full


def test_show_escapes_control_characters_from_the_trace(toy_result, tmp_path, capsys):
    doc = result_to_json(toy_result)
    doc["trace"][1]["action"] = "Elect(\x1b[2J\x1b[31mred)"
    doc["trace"][1]["state"]["leader"] = "\x07bell"
    path = tmp_path / "t.trace.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "trace", "show", str(path))
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "Elect(\\u001b[2J\\u001b[31mred)" in out


def test_flatten_opens_records_and_tuples_of_containers_only():
    assert flatten({"a": (1, 2), "b": ((1,), ()), "c": {"d": ((1, (2,)),)}, "e": {}}) == {
        "a": (1, 2), "b[0]": (1,), "b[1]": (), "c.d[0]": (1, (2,)), "e": {}}


# -- replay ----------------------------------------------------------------------------------


def test_replay_reproduces_from_json_and_itf(toy_files, capsys):
    for path in toy_files:
        code, out, _ = run(capsys, "trace", "replay", path, "--spec", SPEC_REF)
        assert code == 0, out
        assert "all 5 transitions are still legal" in out
        assert "committed-safe still fails at step 6" in out
        assert out.rstrip().endswith("reproduced")


def test_replay_without_a_loadable_spec_is_a_usage_error(toy_files, capsys):
    code, out, err = run(capsys, "trace", "replay", toy_files[0])
    assert code == 2 and out == ""
    assert err.startswith("kafkamc: error: unknown spec 'viewer-brokers'") and err.count("\n") == 1


def test_replay_matches_states_when_the_path_is_gone_or_stale(toy_result, tmp_path, capsys):
    itf = result_to_itf(toy_result)
    del itf["#meta"]["path"]
    (tmp_path / "nopath.itf.json").write_text(json.dumps(itf))
    code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "nopath.itf.json"), "--spec", SPEC_REF)
    assert code == 0 and "reproduced" in out
    doc = result_to_json(toy_result)
    doc["path"] = [0] + [0] * (len(doc["path"]) - 1)
    (tmp_path / "stale.trace.json").write_text(json.dumps(doc))
    code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "stale.trace.json"), "--spec", SPEC_REF)
    assert code == 0
    assert "the stored path no longer indexes" in out and "matched by state" in out


def test_replay_reports_a_trace_that_no_longer_reproduces(toy_result, tmp_path, capsys):
    doc = result_to_json(toy_result)
    changed = copy.deepcopy(doc)
    changed["trace"][3]["state"]["leader"] = 2
    (tmp_path / "changed.json").write_text(json.dumps(changed))
    code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "changed.json"), "--spec", SPEC_REF)
    assert code == 1
    assert "step 4 (Elect(b1, tag=t)): not a transition of the spec any more" in out

    short = copy.deepcopy(doc)
    short["trace"], short["path"] = short["trace"][:-1], short["path"][:-1]
    (tmp_path / "short.json").write_text(json.dumps(short))
    code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "short.json"), "--spec", SPEC_REF)
    assert code == 1 and "committed-safe holds at step 5 now" in out

    # The spec changed under the trace: elections are gone.
    no_elect = copy.deepcopy(doc)
    no_elect["params"]["elect"] = False
    (tmp_path / "noelect.json").write_text(json.dumps(no_elect))
    code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "noelect.json"), "--spec", SPEC_REF)
    assert code == 1 and "step 2 (Elect(b1, tag=t)): not a transition" in out

    # A parameter the spec no longer has, or a value it no longer allows; one it gained.
    for params, needle in (({"replicas": 2}, "unknown parameter 'replicas'"), ({"brokers": 11}, "out of range")):
        gone = copy.deepcopy(doc)
        gone["params"].update(params)
        (tmp_path / "gone.json").write_text(json.dumps(gone))
        code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "gone.json"), "--spec", SPEC_REF)
        assert code == 1 and "does not accept the trace's parameters any more" in out and needle in out
    older = copy.deepcopy(doc)
    del older["params"]["elect"]
    (tmp_path / "older.json").write_text(json.dumps(older))
    code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "older.json"), "--spec", SPEC_REF)
    assert code == 0 and "parameters the trace does not set take their defaults: elect" in out


def test_replay_of_a_deadlock_and_of_an_action_property(tmp_path, capsys):
    from kafkamc.cli.output import write_trace_file

    dead = explore(Brokers(elect=False), deadlock=True)
    assert dead.violated == "deadlock" and [s.action for s in dead.trace.steps] == [None, "Shrink(b1)"]
    path = write_itf(dead, str(tmp_path))
    code, out, _ = run(capsys, "trace", "show", path)
    assert "violation: a deadlock (a state with no successors) after 1 steps" in out
    assert "2. Shrink(b1)   <- no successors (deadlock) here" in out
    code, out, _ = run(capsys, "trace", "replay", path, "--spec", SPEC_REF)
    assert code == 0 and "the last state still has no successors (deadlock)" in out
    doc = load_trace_file(path)
    doc["params"]["elect"] = True
    (tmp_path / "alive.json").write_text(json.dumps(doc))
    code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "alive.json"), "--spec", SPEC_REF)
    assert code == 1 and "the last state has successors now: no deadlock" in out

    prop = explore(Brokers(), [Brokers.property_named("no-shrink-under-a-leader")])
    assert prop.violated == "no-shrink-under-a-leader"
    assert [s.action for s in prop.trace.steps] == [None, "Elect(b1, tag=t)", "Shrink(b2)"]
    path = write_trace_file(prop, str(tmp_path))
    code, out, _ = run(capsys, "trace", "replay", path, "--spec", SPEC_REF)
    assert code == 0 and "no-shrink-under-a-leader still fails at step 3" in out
    # A file that blames an invariant the last state satisfies does not reproduce.
    doc = load_trace_file(path)
    doc["violated"] = "committed-safe"
    (tmp_path / "other.json").write_text(json.dumps(doc))
    code, out, _ = run(capsys, "trace", "replay", str(tmp_path / "other.json"), "--spec", SPEC_REF)
    assert code == 1 and "committed-safe holds at step 3 now" in out


@pytest.mark.parametrize("content, needle", [
    ("not json", "invalid JSON"),
    ("[1, 2]", "is not a kafkamc trace"),
    ('{"hello": "world"}', "is not a kafkamc trace"),
    ('{"schema": 7, "trace": []}', "schema 7"),
    ('{"schema": 1, "trace": null, "result": "ok"}', "holds no counterexample"),
    ('{"schema": 1, "trace": [{"state": {}}]}', "must be an object with 'action' and 'state'"),
    ('{"vars": ["x"], "states": [{"x": {"#bigint": "12a"}}]}', "is not an integer"),
    ('{"vars": ["x"], "states": [{"y": 1}]}', "no value for variable 'x'"),
    ('{"vars": ["x"], "states": [{"x": {"#what": 1}}]}', "unknown ITF encoding"),
    ('{"vars": ["x"], "states": []}', "has no states"),
])
@pytest.mark.parametrize("command", ["show", "replay", "html"])
def test_malformed_or_foreign_files_exit_2_with_one_line(tmp_path, capsys, content, needle, command):
    path = tmp_path / "bad.json"
    path.write_text(content)
    extra = ["-o", str(tmp_path / "x.html")] if command == "html" else []
    code, out, err = run(capsys, "trace", command, str(path), *extra)
    assert code == 2 and out == ""
    assert err.startswith("kafkamc: error: ") and err.count("\n") == 1 and needle in err
    assert not (tmp_path / "x.html").exists()


def test_missing_file_and_missing_output_option(tmp_path, capsys):
    code, _, err = run(capsys, "trace", "show", str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read trace file" in err
    code, _, err = run(capsys, "trace", "html", str(tmp_path / "nope.json"))
    assert code == 2 and "-o" in err


# -- html (static checks; the browser tests are in test_viewer_browser.py) -------------------


def _embedded(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


def hostile_document() -> dict:
    state = lambda v: {  # noqa: E731
        HOSTILE: v, "label": HOSTILE_SCRIPT, "n": v, "__proto__": {"polluted": v}, "constructor": [v, v],
        "toString": {"x": v}}
    return {
        "schema": 1, "spec": HOSTILE, "params": {HOSTILE_SCRIPT: HOSTILE}, "engine": "local",
        "result": "violation", "invariants": [HOSTILE], "violated": HOSTILE_SCRIPT,
        "trace": [
            {"action": None, "state": state(1)},
            {"action": HOSTILE, "state": state(2)},
            {"action": HOSTILE_SCRIPT + "&amp;", "state": state(3)},
        ],
    }


def test_html_embeds_every_value_as_escaped_json_and_allows_only_its_own_script():
    page = render_html(hostile_document())
    assert "<img" not in page
    assert page.count("</script>") == 2 and page.count("<script") == 2
    data = _embedded(page)
    assert data["spec"] == HOSTILE and data["steps"][2]["action"] == HOSTILE_SCRIPT + "&amp;"
    assert data["params"] == {HOSTILE_SCRIPT: HOSTILE}
    # The CSP names the hash of the one script the page runs; nothing may be fetched.
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src &#x27;none&#x27;" in csp
    script = page.rsplit("<script>", 1)[1].split("</script>")[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"sha256-{digest}" in csp
    # Self-contained: no external resource of any kind.
    assert not re.search(r'\b(src|href)\s*=\s*["\']?(https?:|//)', page)
    assert "@import" not in page and "url(" not in page
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script


def test_html_data_carries_entities_lanes_and_the_failing_step(toy_result, tmp_path):
    path = write_html(toy_result, str(tmp_path / "sub" / "t.html"))
    data = _embedded(open(path, encoding="utf-8").read())
    assert data["failing"] == 6 and data["violated"] == "committed-safe"
    assert data["entities"] == [
        {"kind": "broker", "fields": ["epoch", "log", "mode"], "count": 2, "names": ["b1", "b2"]}]
    rows = [r["name"] for r in data["lanes"]["rows"]]
    assert rows == ["b1", "b2", "shared"]
    cells = data["lanes"]["cells"]
    assert cells[0] == [None, None, None]
    # Elect(b1): b1's epoch and mode change, b2's mode too; the label names b1 first.
    assert cells[1][0] == [["epoch", "mode"], True, True]
    assert cells[1][1] is None  # b2 was a follower before and after
    assert cells[1][2] == [["leader"], False, False]
    # Elect(b2): b1 steps down (its mode changes) without being named.
    assert cells[2][0] == [["mode"], False, False] and cells[2][1] == [["epoch", "mode"], True, True]
    # Shrink(b2): only the shared ISR changes; b2 is named but its own state is untouched.
    assert cells[5][1] == [[], True, True] and cells[5][2] == [["isr", "fenced"], False, False]


def test_entities_come_from_parameter_names_and_lengths():
    replication_like = {"params": {"replicas": 3}, "trace": [
        {"action": None, "state": {"hw": [0, 0, 0], "isr": [[], [], []], "quorum_isr": [1, 2, 3],
                                   "requests": [], "leader": 0}},
        {"action": "X", "state": {"hw": [0, 1, 0], "isr": [[1], [], []], "quorum_isr": [1, 2, 3],
                                  "requests": [[1, 0]], "leader": 1}},
    ]}
    assert infer_entities(replication_like) == [
        {"kind": "replica", "fields": ["hw", "isr"], "count": 3, "names": ["r1", "r2", "r3"]}]
    txn_like = {"params": {"producers": 2, "partitions": 2}, "trace": [
        {"action": None, "state": {"producers": [{"e": 0}, {"e": 0}], "partitions": [{"log": []}, {"log": []}],
                                   "network": []}}]}
    kinds = infer_entities(txn_like)
    assert [(k["kind"], k["fields"], k["names"]) for k in kinds] == [
        ("producer", ["producers"], ["producer1", "producer2"]),
        ("partition", ["partitions"], ["partition1", "partition2"])]
    assert kinds[0]["columns"] == {"producers": ["e"]} and kinds[1]["columns"] == {"partitions": ["log"]}
    lanes = lanes_of({"trace": [
        {"action": None, "state": {"producers": [1, 1], "partitions": [0, 0]}},
        {"action": "InitProducerId(producer=2) -> OK", "state": {"producers": [1, 2], "partitions": [0, 0]}},
    ]}, kinds)
    assert lanes["cells"][1][1] == [["producers"], True, True]
    # Records are compared key by key; "p1" is not producer 1 when partitions share the letter.
    lanes = lanes_of({"trace": [
        {"action": None, "state": {"producers": [{"e": 0}, {"e": 0}], "partitions": [{"log": []}, {"log": []}]}},
        {"action": "WriteTxnMarkers(p1)", "state": {"producers": [{"e": 0}, {"e": 1}],
                                                    "partitions": [{"log": [1]}, {"log": []}]}},
    ]}, kinds)
    assert lanes["cells"][1][:4] == [None, [["e"], False, False], [["log"], False, False], None]
    # A parameter that counts entities wins over one that only has the same value.
    sized = dict(replication_like, params={"log_size": 3, "replicas": 3})
    assert [k["kind"] for k in infer_entities(sized)] == ["replica"]
    # A spec's hook wins over the inference.
    hinted = infer_entities(replication_like, {"replica": ("isr",)})
    assert [k["fields"] for k in hinted] == [["isr"]]


def test_html_of_an_itf_object_and_of_a_file(toy_files, tmp_path, capsys):
    _, trace_itf = toy_files
    out = tmp_path / "v.html"
    code, stdout, _ = run(capsys, "trace", "html", trace_itf, "-o", str(out))
    assert code == 0 and str(out) in stdout
    data = _embedded(out.read_text(encoding="utf-8"))
    assert data["format"] == "itf" and len(data["steps"]) == 6
    assert page_data(load_trace_file(trace_itf))["steps"] == data["steps"]


def test_render_document_matches_check_output_layout(toy_result):
    text = render_document(result_to_json(toy_result))
    assert "\n2. Elect(b1, tag=t)\n     epoch: (0, 0) -> (1, 0)\n" in text
    assert text.endswith(render_trace(toy_result))


def test_itf_is_read_and_written_by_an_independent_itf_library(toy_result):
    itf_py = pytest.importorskip("itf_py.itf", reason="itf-py (an independent ITF library) is not installed")
    trace = itf_py.trace_from_json(json.loads(json.dumps(result_to_itf(toy_result))))
    last = trace.states[-1]
    assert last.meta == {"index": 5, "action": "Shrink(b2)"}
    assert last.values["isr"] == frozenset({1}) and last.values["epoch"] == (2, 1)
    assert last.values["mode"] == ("Leader", "Follower") and last.values["fenced"] is True
    back = itf_to_document(json.loads(json.dumps(itf_py.trace_to_json(trace))))
    assert back["trace"] == result_to_json(toy_result)["trace"]


def test_replay_of_a_spec_that_raises_exits_3_naming_the_action(tmp_path, capsys):
    doc = {"schema": 1, "spec": "raising", "params": {}, "violated": "deadlock", "trace": [
        {"action": None, "state": {"x": 0, "y": 0}},
        {"action": "Step", "state": {"x": 1, "y": 0}},
        {"action": "Step", "state": {"x": 2, "y": 0}}]}
    path = tmp_path / "raising.trace.json"
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "trace", "replay", str(path), "--spec", "toyspecs:Raising")
    assert code == 3 and "action step raised ZeroDivisionError" in err


def test_viewer_uses_the_descriptions_entities_and_sets_a_file_records():
    # A user's spec that cannot be imported here: all the viewer knows comes from the file.
    doc = {"schema": 1, "spec": "elsewhere", "spec_ref": "not_importable_module:Spec", "params": {},
           "violated": "small", "invariants": ["small"], "descriptions": {"small": "x stays small"},
           "entities": {"node": ["x"]},
           "trace": [{"action": None, "state": {"x": [0, 0], "s": []}, "sets": ["/s"]},
                     {"action": "Bump(n2)", "state": {"x": [0, 1], "s": [2]}, "sets": ["/s"]}]}
    data = page_data(doc)
    assert data["description"] == "x stays small" and data["descriptions"] == {"small": "x stays small"}
    assert [(g["kind"], g["names"]) for g in data["entities"]] == [("node", ["n1", "n2"])]
    assert [row["name"] for row in data["lanes"]["rows"]] == ["n1", "n2", "shared"]
    assert [s["sets"] for s in data["steps"]] == [["/s"], ["/s"]]
