"""Text that is safe to print: what a spec or a file supplies cannot drive the terminal.

Labels, exception messages, parameter values and trace files may hold control characters (an
ANSI escape can recolour, move the cursor, clear the screen or set the window title), other
non-printables, or a lone surrogate that no terminal encoding can carry. Every text output
escapes them the way JSON writes them (``\\x1b`` becomes ``\\u001b``), so they stay visible and
inert; ``--json`` output is escaped by ``json.dumps`` already.
"""

from __future__ import annotations

import json

__all__ = ["printable", "printable_lines"]


def printable(text: str) -> str:
    """``text`` on one line with every non-printable character (newlines too) escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in text)


def printable_lines(text: str) -> str:
    """Like ``printable``, but the line breaks of a multi-line rendering stay line breaks."""
    return "\n".join(printable(line) for line in text.split("\n"))
