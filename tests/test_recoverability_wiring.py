"""The bundled specs declare their recoverability properties, and the mirrored enum values agree."""

from __future__ import annotations

import json

from kafkamc.cli import main
from kafkamc.invariants import recoverability as rec
from kafkamc.spec.controller import Session
from kafkamc.spec.group import ClientState, GroupState
from kafkamc.spec.registry import load_spec_class


def test_mirrored_enum_values_match_the_specs():
    assert rec._SESSION_LIVE == Session.LIVE
    assert (rec._GROUP_EMPTY, rec._GROUP_PREPARING, rec._GROUP_STABLE, rec._GROUP_DEAD) == (
        GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.STABLE, GroupState.DEAD)
    assert (rec._CLIENT_STABLE, rec._CLIENT_FENCED) == (ClientState.STABLE, ClientState.FENCED)


def test_every_bundled_spec_declares_one():
    expected = {
        "controller": "controller-can-recover",
        "group": "group-can-stabilise",
        "transactions": "lso-can-advance",
        "replication": "partition-can-recover",
    }
    for spec, name in expected.items():
        assert [p.name for p in load_spec_class(spec).recoverability_properties()] == [name]


def test_check_r_on_a_bundled_spec(capsys):
    code = main(["check", "controller", "-p", "brokers=2", "-r", "controller-can-recover", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["result"] == "ok" and "controller-can-recover" in doc["invariants"]
    code = main(["check", "controller", "-r", "group-can-stabilise"])
    assert code == 2 and "unknown recoverability property" in capsys.readouterr().err
