"""User-facing errors: one line that says what was wrong and what to do."""


class MatbenchError(Exception):
    """An error caused by the user's input or environment; the CLI prints it as one line."""


class GateFailure(MatbenchError):
    """A faithfulness gate (SPEC 2.4) failed: the numbers of this run cannot be trusted."""


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message (its type name when empty), for one-line errors."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is torch running out of accelerator memory (only a run that imported torch can)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return False
    # A kernel launch or a copy that finds the device full raises the generic accelerator error
    # (cudaErrorMemoryAllocation), not torch's allocator error: seen with several runs on one GPU.
    generic = getattr(torch, "AcceleratorError", ())
    return isinstance(exc, torch.OutOfMemoryError) or (isinstance(exc, generic) and "out of memory" in str(exc))
