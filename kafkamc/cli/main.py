"""The command line: ``main(argv) -> int`` is the whole CLI, testable without a subprocess.

Exit codes (a stable contract): 0 ok (prove: proved); 1 an invariant was violated (prove: a
counterexample to induction); 2 bad invocation or input; 3 the spec raised during exploration, the
engine failed, or a spec function cannot be executed symbolically; 4 incomplete (a bound, the memory
guard, Ctrl-C, SIGTERM or SIGHUP; prove: unknown).

A reader that goes away (``kafkamc check ... | head -1``) does not change the exit code: the run
completes, its files are written, the rest of its output is discarded and the exit code is the
verdict's, so ``set -o pipefail`` scripts see what was found, not that nobody read it all.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from typing import Any, Sequence

from kafkamc import __version__
from kafkamc.checker.watch import stop_reason, termination_signals
from kafkamc.errors import KafkamcError, UsageError
from kafkamc.terminal import printable

__all__ = ["main", "main_entry", "build_parser", "EXIT_OK", "EXIT_VIOLATION", "EXIT_USAGE", "EXIT_SPEC_ERROR",
           "EXIT_INCOMPLETE"]

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_SPEC_ERROR, EXIT_INCOMPLETE = 0, 1, 2, 3, 4
# One module per command, in the order `kafkamc --help` lists them; each defines
# register(subparsers) and sets ``run`` on its parser.
COMMAND_MODULES = (
    "kafkamc.cli.speclist",
    "kafkamc.cli.check",
    "kafkamc.cli.gate",
    "kafkamc.cli.trace",
    "kafkamc.cli.simulate",
    "kafkamc.cli.graph",
    "kafkamc.cli.bmc",
    "kafkamc.cli.prove",
)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and an exception instead of a printed exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkamc", description="Model checker for Apache Kafka's coordination protocols.")
    parser.add_argument("--version", action="version", version=f"kafkamc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module_name in COMMAND_MODULES:
        if importlib.util.find_spec(module_name) is not None:
            importlib.import_module(module_name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        with termination_signals():
            args = build_parser().parse_args(args_list)
            return int(args.run(args))
    except KeyboardInterrupt as exc:
        # Where no engine caught it (start-up, graph, writing output): one line, incomplete.
        print(f"kafkamc: {stop_reason(exc)}: stopped before a result", file=sys.stderr)
        return EXIT_INCOMPLETE
    except KafkamcError as exc:
        prefix = "error" if exc.exit_code == EXIT_USAGE else "the spec or engine failed"
        print(f"kafkamc: {prefix}: {printable(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0


class _ReaderGone:
    """A text stream that, once its reader has gone away, discards what is written to it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._discard()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._discard()

    def _discard(self) -> None:
        # What is still buffered goes to /dev/null too, so no later flush (nor the one at exit)
        # raises again.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self._stream.fileno())
        os.close(null)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main_entry() -> None:
    sys.stdout = _ReaderGone(sys.stdout)
    sys.stderr = _ReaderGone(sys.stderr)
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
