"""One way to show a trace: ``check``, ``simulate``, ``gate`` and ``trace show`` print the same text.

Every command renders the JSON trace document (a live result is turned into it first), so a trace
file reads exactly as the run that wrote it. The toy below has entities, records, a queue of
records, sets that become empty and a log that is truncated; it has a single behaviour, so the
exhaustive search and the random walks find the same counterexample.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace

from kafkamc.cli import main
from kafkamc.counterexamples.itf import itf_to_document, load_trace_file, result_to_itf
from kafkamc.counterexamples.render import render_trace, result_to_json
from kafkamc.checker.local import explore
from kafkamc.invariants.api import invariant
from kafkamc.spec.api import Param, Spec, action


@dataclass(frozen=True, slots=True)
class Node:
    log: tuple[tuple[int, int], ...]
    peers: frozenset[int]


@dataclass(frozen=True, slots=True)
class Msg:
    src: int
    dst: int


@dataclass(frozen=True, slots=True)
class Net:
    nodes: tuple[Node, ...]
    hw: tuple[int, ...]
    queue: tuple[Msg, ...]
    done: frozenset[int]
    k: int


@invariant("k-below-limit", "fewer steps than the limit have been taken")
def k_below_limit(p, s) -> bool:
    return s.k < p.limit


def _put(t: tuple, i: int, v: object) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


class Line(Spec):
    """One behaviour: n1 sends to n2, n2 receives and logs, the done set empties, n2 truncates."""

    name = "render-line"
    parameters = (Param("limit", 4, "k must stay below this", min=1, max=10),)
    invariants = (k_below_limit,)
    entities = {"node": ("nodes", "hw")}

    def init_states(p):
        yield Net((Node((), frozenset()), Node((), frozenset())), (0, 0), (), frozenset({1, 2}), 0)

    @action
    def advance(p, s):
        n1, n2 = s.nodes
        if s.k == 0:
            yield "Send(n1 -> n2)", replace(s, nodes=(replace(n1, peers=frozenset({2})), n2),
                                            queue=s.queue + (Msg(1, 2),), k=1)
        elif s.k == 1:
            yield "Recv(n2)", replace(s, nodes=(n1, replace(n2, log=((1, 0),))), queue=s.queue[1:],
                                      hw=_put(s.hw, 1, 1), k=2)
        elif s.k == 2:
            yield "Finish(n1, n2)", replace(s, done=frozenset(), k=3)
        elif s.k == 3:
            yield "Truncate(n2)", replace(s, nodes=(n1, replace(n2, log=())), k=4)


REF = f"{__name__}:Line"

EXPECTED = """\
1. initial state
     n1.nodes.log = ()
     n1.nodes.peers = set()
     n2.nodes.log = ()
     n2.nodes.peers = set()
     n1.hw = 0
     n2.hw = 0
     queue = ()
     done = {1, 2}
     k = 0
2. Send(n1 -> n2)
     n1.nodes.peers: set() -> {2}
     queue: appended {src: 1, dst: 2}
     k: 0 -> 1
3. Recv(n2)
     n2.nodes.log: appended (1, 0)
     n2.hw: 0 -> 1
     queue: truncated to 0 (dropped {src: 1, dst: 2})
     k: 1 -> 2
4. Finish(n1, n2)
     done: {1, 2} -> set()
     k: 2 -> 3
5. Truncate(n2)   <- k-below-limit fails here
     n2.nodes.log: truncated to 0 (dropped (1, 0))
     k: 3 -> 4"""


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def trace_text(out: str) -> str:
    """The rendered trace inside a command's output: from step 1 to the last step's last line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^\s*1\. initial state$", line))
    end = start + 1
    while end < len(lines) and re.match(r"^\s*(\d+\. |\s+\S)", lines[end]):
        end += 1
    return "\n".join(lines[start:end])


def test_check_simulate_gate_and_trace_show_print_the_same_trace(tmp_path, capsys):
    code, out, _ = run(capsys, "check", REF, "--workers", "1", "--out", str(tmp_path / "check"))
    assert code == 1
    from_check = trace_text(out)
    assert from_check == EXPECTED

    code, out, _ = run(capsys, "simulate", REF, "--seed", "1", "--runs", "5", "--no-database",
                       "--out", str(tmp_path / "sim"))
    assert code == 1
    assert trace_text(out) == from_check

    shown = []
    for directory in ("check", "sim"):
        for suffix in ("trace.json", "itf.json"):
            code, out, _ = run(capsys, "trace", "show", str(tmp_path / directory / f"render-line-k-below-limit.{suffix}"))
            assert code == 0
            shown.append(trace_text(out))
    assert shown == [from_check] * 4

    config = tmp_path / "kafkamc.toml"
    config.write_text(f'[checks.line]\nspec = "{REF}"\nexpect = "hold"\n')
    junit = tmp_path / "gate.xml"
    code, _, _ = run(capsys, "gate", "--config", str(config), "--junit", str(junit))
    assert code == 1
    details = ET.parse(junit).getroot().find("testsuite/testcase/system-out").text
    assert trace_text(details) == from_check


def _result():
    # A run names its spec class (spec_ref, as the CLI records it) so renderers find its hooks.
    result = explore(Line())
    return replace(result, extra={**result.extra, "spec_ref": REF})


def test_full_rendering_of_a_file_equals_the_live_one(tmp_path):
    result = _result()
    doc = json.loads(json.dumps(result_to_json(result)))
    assert render_trace(doc, full=True) == render_trace(result, full=True)
    assert render_trace(itf_to_document(json.loads(json.dumps(result_to_itf(result)))), full=True) == \
        render_trace(result, full=True)
    # Every leaf of every step, the sets as sets.
    assert render_trace(result, full=True).count("n2.nodes.peers = set()") == 5


def test_a_file_records_sets_entities_and_descriptions(tmp_path, capsys):
    run(capsys, "check", REF, "--workers", "1", "--out", str(tmp_path))
    doc = load_trace_file(str(tmp_path / "render-line-k-below-limit.trace.json"))
    assert doc["entities"] == {"node": ["nodes", "hw"]}
    assert doc["descriptions"] == {"k-below-limit": "fewer steps than the limit have been taken"}
    assert doc["trace"][0]["sets"] == ["/done", "/nodes/0/peers", "/nodes/1/peers"]
    # A file without them (an older or foreign one) shows lists as tuples, fields by index.
    for step in doc["trace"]:
        step.pop("sets", None)
    del doc["entities"]
    text = render_trace(doc)
    assert "done: truncated to 0 (dropped 1, 2)" in text and "nodes[1].log: truncated to 0 (dropped (1, 0))" in text


def test_entities_named_as_labels_name_them(capsys):
    code, out, _ = run(capsys, "check", "controller", "-p", "fencing=none", "-i", "no-stale-request-applied",
                       "--workers", "1")
    assert code == 1
    # brokers is the broker kind's only field: b1.epoch, not b1.brokers.epoch or brokers[0].epoch.
    assert "b1.epoch: 0 -> 1" in out and "brokers[" not in out
    assert "in_flight: appended {kind: UPDATE_METADATA, dest: 1" in out


def test_an_empty_set_cannot_be_read_as_a_dict_or_a_tuple():
    text = render_trace(_result())
    assert "{}" not in text and "done: {1, 2} -> set()" in text
