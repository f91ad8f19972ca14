"""The bundled specs declare their recoverability properties, and the mirrored enum values agree."""

from __future__ import annotations

import json

from kafkamc.cli import main
from kafkamc.invariants import recoverability as rec
from kafkamc.spec.controller import Session
from kafkamc.spec.group import ClientState, GroupState
from kafkamc.spec.transactions import ClientState as ProducerState
from kafkamc.spec.registry import load_spec_class


def test_mirrored_enum_values_match_the_specs():
    assert rec._SESSION_LIVE == Session.LIVE
    assert (rec._GROUP_EMPTY, rec._GROUP_PREPARING, rec._GROUP_STABLE, rec._GROUP_DEAD) == (
        GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.STABLE, GroupState.DEAD)
    assert (rec._CLIENT_STABLE, rec._CLIENT_FENCED) == (ClientState.STABLE, ClientState.FENCED)
    assert (rec._PRODUCER_NOT_STARTED, rec._PRODUCER_FATAL) == (ProducerState.NotStarted, ProducerState.FatalError)


def test_every_bundled_spec_declares_one():
    expected = {
        "controller": ["controller-can-recover"],
        "group": ["group-can-stabilise"],
        "transactions": ["lso-can-advance", "producer-can-write"],
        "replication": ["partition-can-recover", "isr-can-recover"],
    }
    for spec, names in expected.items():
        assert [p.name for p in load_spec_class(spec).recoverability_properties()] == names


def test_check_r_on_a_bundled_spec(capsys):
    code = main(["check", "controller", "-p", "brokers=2", "-r", "controller-can-recover", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["result"] == "ok" and "controller-can-recover" in doc["invariants"]
    code = main(["check", "controller", "-r", "group-can-stabilise"])
    assert code == 2 and "unknown recoverability property" in capsys.readouterr().err


def test_check_r_text_explains_and_json_carries_counts(capsys):
    argv = ["check", "transactions", "-p", "version=tv1", "-p", "partitions=1", "-p", "producers=1",
            "-p", "max_transactions=1", "-i", "atomicity", "-r", "lso-can-advance"]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 1 and "lso-can-advance" in out and "stuck states" in out
    code = main(argv + ["--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["violated"] == "lso-can-advance"
    assert doc["recoverability"]["lso-can-advance"]["stuck_states"] > 0


def test_check_r_refuses_options_it_cannot_honour(capsys):
    code = main(["check", "controller", "-r", "controller-can-recover", "--max-depth", "3"])
    err = capsys.readouterr().err
    assert code == 2 and "--max-depth does not apply with -r" in err
