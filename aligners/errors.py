"""User-facing errors. Internal invariants use `assert`; bad input raises these."""

__all__ = ["AlignersInputError"]


class AlignersInputError(ValueError):
    """Bad user input: names the file, the 1-based line and what was expected.

    >>> str(AlignersInputError("expected 'i-j'", path="a.txt", line=3))
    "a.txt:3: expected 'i-j'"
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        self.reason = message
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
        elif line is not None:
            where = f"line {line}"
        super().__init__(f"{where}: {message}" if where else message)
