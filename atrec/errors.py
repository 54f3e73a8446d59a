"""The one exception type that the command line turns into a one-line message.

Library code raises :class:`AtrecError` (or ``ValueError`` for bad arguments to a constructor)
with a message that says what is wrong *and what to do*. The CLI prints ``error: <message>`` on
standard error and exits with :attr:`AtrecError.exit_code`; it never shows a traceback for these.
"""


class AtrecError(Exception):
    """A user-facing error: bad input, missing data, a corrupt file, an unknown name.

    Parameters
    ----------
    message:
        One line: what is wrong and what to do about it.
    exit_code:
        Process exit code the CLI uses (2 = bad input or usage, 3 = data missing or corrupt,
        4 = a regression check failed).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class DataError(AtrecError):
    """A dataset file is missing, corrupt or of the wrong format."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=3)
