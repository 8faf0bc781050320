"""User-facing errors: one line that says what was wrong and what to do."""


class MatbenchError(Exception):
    """An error caused by the user's input or environment; the CLI prints it as one line."""


class GateFailure(MatbenchError):
    """A faithfulness gate (SPEC 2.4) failed: the numbers of this run cannot be trusted."""
