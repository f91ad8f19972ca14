"""Output files: checked before exploring (exit 2, one line), written atomically, never through a
symbolic link or over a device, and no temporary file left behind on any failure."""

from __future__ import annotations

import json
import os

import pytest

from kafkamc.cli import main
from kafkamc.safewrite import write_file

VIOLATES = ["toyspecs:Counters", "-p", "limit=2"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def trace_file(tmp_path, capsys):
    code, _, _ = run(capsys, "check", *VIOLATES, "--out", str(tmp_path / "t"))
    assert code == 1
    (path,) = [p for p in (tmp_path / "t").iterdir() if p.name.endswith(".trace.json")]
    return str(path)


def _commands(tmp_path, trace_file, target, kind):
    """Every command that writes a file, pointed at ``target`` (a file, or a directory's path)."""
    if kind == "file":
        return [
            ["check", *VIOLATES, "--html", target],
            ["simulate", *VIOLATES, "--runs", "5", "--seed", "1", "--no-database", "--html", target],
            ["trace", "html", trace_file, "-o", target],
            ["graph", "toyspecs:Counters", "--out", target + ".json" if not target.endswith(".json") else target],
            ["gate", "--config", str(tmp_path / "gate.toml"), "--junit", target],
        ]
    return [
        ["check", *VIOLATES, "--out", target],
        ["simulate", *VIOLATES, "--runs", "5", "--seed", "1", "--no-database", "--out", target],
        ["gate", "--config", str(tmp_path / "gate.toml"), "--out", target],
    ]


@pytest.fixture
def gate_config(tmp_path):
    (tmp_path / "gate.toml").write_text('[checks.c]\nspec = "toyspecs:Counters"\nexpect = "hold"\n')


def _no_temporaries(*dirs):
    for d in dirs:
        if os.path.isdir(d):
            assert not [n for n in os.listdir(d) if n.endswith(".tmp")], os.listdir(d)


@pytest.mark.parametrize("index", [0, 1, 2, 4])  # graph refuses /dev/null for its extension already
def test_a_device_is_refused_before_exploring(capsys, tmp_path, trace_file, gate_config, index, monkeypatch):
    called = []
    monkeypatch.setattr("kafkamc.checker.multicore.explore_multicore",
                        lambda *a, **k: called.append(1) or pytest.fail("explored"))
    argv = _commands(tmp_path, trace_file, os.devnull, "file")[index]
    code, out, err = run(capsys, *argv)
    assert code == 2 and "is a device" in one_line(err) and not called
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)


@pytest.mark.parametrize("index", range(5))
def test_a_symlink_is_refused_and_left_alone(capsys, tmp_path, trace_file, gate_config, index):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    argv = _commands(tmp_path, trace_file, str(link), "file")[index]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "is a symbolic link" in one_line(err)
    assert link.is_symlink() and victim.read_text() == "keep me"
    _no_temporaries(tmp_path)


@pytest.mark.parametrize("index", range(5))
def test_a_fifo_and_a_directory_are_refused(capsys, tmp_path, trace_file, gate_config, index):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    code, _, err = run(capsys, *_commands(tmp_path, trace_file, str(fifo), "file")[index])
    assert code == 2 and "is a FIFO" in one_line(err)
    directory = tmp_path / "adir.json"
    directory.mkdir()
    code, _, err = run(capsys, *_commands(tmp_path, trace_file, str(directory), "file")[index])
    assert code == 2 and "is a directory" in one_line(err)


@pytest.mark.parametrize("index", range(3))
def test_an_output_directory_that_cannot_be_made_is_refused_before_exploring(capsys, tmp_path, trace_file,
                                                                               gate_config, index):
    plain = tmp_path / "plain.txt"
    plain.write_text("")
    for target, needle in ((plain, "exists and is not a directory"), (plain / "sub", "is not a directory")):
        code, out, err = run(capsys, *_commands(tmp_path, trace_file, str(target), "dir")[index])
        assert code == 2 and needle in one_line(err)
        assert "violation" not in out and "PASS" not in out  # refused before any work


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_directory_is_refused_before_exploring(capsys, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        code, _, err = run(capsys, "check", *VIOLATES, "--html", str(ro / "x.html"))
        assert code == 2 and "cannot write in" in one_line(err)
    finally:
        ro.chmod(0o700)


def test_a_failed_write_leaves_no_temporary_and_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_text("old")

    def broken(fh):
        fh.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(Exception) as info:
        write_file(str(target), broken)
    assert "No space left on device" in str(info.value) and str(target) in str(info.value)
    assert target.read_text() == "old"
    _no_temporaries(tmp_path)
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(13, "Permission denied")))
    with pytest.raises(Exception, match="Permission denied"):
        write_file(str(target), "new")
    assert target.read_text() == "old"
    _no_temporaries(tmp_path)


def test_written_files_are_whole_and_readable(tmp_path, capsys):
    code, out, _ = run(capsys, "check", *VIOLATES, "--out", str(tmp_path / "d"), "--html", str(tmp_path / "v.html"))
    assert code == 1
    names = sorted(os.listdir(tmp_path / "d"))
    assert names == ["counters-x-below-limit.itf.json", "counters-x-below-limit.trace.json"]
    doc = json.loads((tmp_path / "d" / names[1]).read_text())
    assert doc["violated"] == "x-below-limit"
    assert (tmp_path / "v.html").read_text().startswith("<!DOCTYPE html>")
    assert oct((tmp_path / "v.html").stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    _no_temporaries(tmp_path, tmp_path / "d")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("command", ["check", "simulate"])
def test_a_write_that_fails_after_the_run_keeps_the_verdict(capsys, tmp_path, monkeypatch, command):
    real = os.replace

    def full(src, dst):
        if str(dst).endswith(".html"):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", full)
    extra = ["--runs", "5", "--seed", "1", "--no-database"] if command == "simulate" else []
    code, out, err = run(capsys, command, *VIOLATES, *extra, "--html", str(tmp_path / "v.html"))
    assert code == 2 and "No space left on device" in one_line(err)
    assert "violation: x-below-limit fails after 2 steps" in out  # the verdict is printed all the same
    _no_temporaries(tmp_path)


def test_an_output_file_is_written_without_setting_the_umask(tmp_path, monkeypatch):
    # Setting it to 0 and back left it 0 when a stop landed between the two calls.
    import stat

    current = os.umask(0o022)
    os.umask(current)

    def refuse(mask):
        raise AssertionError("the umask was set")

    monkeypatch.setattr(os, "umask", refuse)
    path = write_file(str(tmp_path / "out.json"), "{}")
    monkeypatch.undo()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~current
