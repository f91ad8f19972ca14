"""Argument types and option groups shared by several commands."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kafkamc.checker.resources import format_size, parse_size
from kafkamc.result import LevelStats

__all__ = ["int_at_least", "seconds", "memory_size", "add_check_arguments", "print_progress", "ENGINES", "NO_LIMIT"]

ENGINES = ("local", "spark")


def int_at_least(minimum: int) -> Any:
    """An argparse type: an integer >= ``minimum``, with the allowed range in the error."""
    allowed = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; allowed: {allowed}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is not allowed; allowed: {allowed}")
        return value

    parse.__name__ = "positive integer" if minimum == 1 else f"integer >= {minimum}"
    return parse


_positive = int_at_least(1)


def seconds(text: str) -> float:
    """An argparse type: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; allowed: seconds > 0") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not allowed; allowed: seconds > 0")
    return value


# What ``--max-memory none`` parses to: no memory guard.
NO_LIMIT = 0


def memory_size(text: str) -> int:
    """An argparse type: a memory size (``800M``, ``4G``, ``50%``) in bytes, or ``none``."""
    if text.strip().lower() == "none":
        return NO_LIMIT
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}, or none") from None


memory_size.__name__ = "memory size"


def add_check_arguments(chk: argparse.ArgumentParser) -> None:
    """The options of ``check`` (shared with commands that run a check the same way)."""
    chk.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                     help="set a spec parameter (repeatable)")
    chk.add_argument("-i", "--invariant", action="append", default=[], metavar="NAME",
                     help="check this invariant or action property (repeatable; 'all' for every one)")
    chk.add_argument("-r", "--recoverability", action="append", default=[], metavar="NAME",
                     help="check this recoverability property (AG EF good) on the state graph (repeatable)")
    chk.add_argument("-l", "--liveness", action="append", default=[], metavar="NAME",
                     help="check this liveness property under fairness on the state graph (repeatable; 'all')")
    chk.add_argument("--fair", action="append", default=[], metavar="ACTION",
                     help="with -l: assume ACTION weakly fair (WF) besides the spec's declared fairness (repeatable)")
    chk.add_argument("--strong-fair", action="append", default=[], metavar="ACTION",
                     help="with -l: assume ACTION strongly fair (SF) (repeatable)")
    chk.add_argument("--no-fairness", action="store_true",
                     help="with -l: drop the spec's declared fairness (--fair and --strong-fair still add)")
    # None until the command resolves it: local, or with --resume the engine that wrote the checkpoint.
    chk.add_argument("--engine", default=None, choices=ENGINES, help="exploration engine (default: local)")
    chk.add_argument("--master", default=None, help="Spark master URL (engine spark; default local[*])")
    chk.add_argument("--partitions", type=_positive, default=None, help="Spark partitions P (engine spark)")
    chk.add_argument("--workers", type=_positive, default=None, metavar="N",
                     help="processes for the local engine (default: the cores available); results do not depend on it")
    chk.add_argument("--max-depth", type=_positive, default=None, metavar="N", help="explore at most N levels")
    chk.add_argument("--max-states", type=_positive, default=None, metavar="N", help="explore at most N states")
    chk.add_argument("--symmetry", action="store_true", help="reduce by the spec's symmetry representative")
    chk.add_argument("--deadlock", action="store_true", help="report a state with no successors as a violation")
    chk.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    chk.add_argument("--out", metavar="DIR", default=None,
                     help="write the counterexample to DIR (kafkamc JSON and ITF)")
    chk.add_argument("--html", nargs="?", const="", default=None, metavar="FILE",
                     help="on a violation, write the HTML trace viewer (default DIR or ./<spec>-<invariant>.html)")
    chk.add_argument("--progress", action="store_true",
                     help="print a progress line on stderr per level, and at least every 10 s within a long level")
    chk.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE",
                     help="stop as incomplete (reason max-memory) when the engine's processes use more than SIZE "
                     "(800M, 4G, 50%%; default 80%% of the machine's memory; 'none': no limit; local engine only)")
    chk.add_argument("--frontier-memory", type=memory_size, default=None, metavar="SIZE",
                     help="keep a breadth-first level's states in memory up to SIZE, write the rest to files "
                     "(default 2G, split evenly between --workers; 'none': all in memory)")
    chk.add_argument("--frontier-dir", default=None, metavar="DIR",
                     help="where a frontier past --frontier-memory goes: a temporary directory made in DIR "
                     "(default: in --out DIR, else the system's temporary directory), removed at the end")


def print_progress(stats: LevelStats) -> None:
    print(progress_line(stats), file=sys.stderr, flush=True)


def progress_line(stats: LevelStats) -> str:
    rate = stats.rate
    if rate is None:
        rate = stats.states_generated / stats.seconds if stats.seconds > 0 else 0.0
    growth = f" (x{stats.growth:.2f})" if stats.growth is not None else ""
    if stats.within_level:
        where = f"level {stats.level} in progress: {stats.distinct_states:,} distinct"
        if stats.new is not None:
            ratio = f": x{stats.growth:.2f} the {stats.frontier:,} of level {stats.level - 1}" if stats.growth is not None else ""
            where += f" ({stats.new:,} new so far{ratio})"
        where += f", {stats.states_generated:,} generated"
        if stats.expanded is not None:
            where += f", {stats.expanded:,} of {stats.frontier:,} states of level {stats.level - 1} expanded"
    else:
        where = (f"level {stats.level}: {stats.distinct_states:,} distinct, {stats.states_generated:,} generated, "
                 f"frontier {stats.frontier:,}{growth}")
    memory = f", memory {format_size(stats.memory)}" if stats.memory is not None else ""
    return f"{where}, {stats.seconds:.1f} s, {rate:,.0f} states/s{memory}"
