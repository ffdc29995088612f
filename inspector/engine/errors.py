"""The one exception the engine raises for input it cannot read."""

from __future__ import annotations


class InvalidTranscript(ValueError):
    """The input is not a list of canonical messages (SPEC §2).

    ``index`` is the position of the offending message in the input list, or
    ``None`` when the problem is the list itself; ``problem`` says what is
    wrong in plain words. ``str(error)`` combines both, for example
    ``message 3: role 'bot' is not one of system, user, assistant, tool``.
    """

    def __init__(self, problem: str, index: int | None = None) -> None:
        self.problem = problem
        self.index = index
        super().__init__(problem if index is None else f"message {index}: {problem}")
