"""The command line, one module per command, above the engines, the prover and the renderers.

Nothing below this package imports it.
"""

from kafkamc.cli.main import (
    EXIT_INCOMPLETE, EXIT_OK, EXIT_SPEC_ERROR, EXIT_USAGE, EXIT_VIOLATION, main, main_entry,
)

__all__ = ["main", "main_entry", "EXIT_OK", "EXIT_VIOLATION", "EXIT_USAGE", "EXIT_SPEC_ERROR", "EXIT_INCOMPLETE"]
