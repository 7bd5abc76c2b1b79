"""rexec's requests (``rexec.exec``, ``rexec.write``, ``rexec.kill``, ``rexec.wait``,
``rexec.list``), as types."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

#: a process's label: a name for ``kill`` and ``wait`` besides its pid (RFC 42's)
Label = Annotated[str, Meta(min_length=1, max_length=255, pattern=r"^[^\s\x00-\x1f\x7f]+$")]


class CommandRequest(Struct, frozen=True):
    """``rexec.exec``: run ``cmd`` (argv) in ``cwd`` with ``env``; ``stdin`` keeps its
    standard input open for ``rexec.write`` (else it reads /dev/null). ``bg``: a plain
    request answered once it has started, the process left running (``waitable``: kept
    once ended until ``rexec.wait`` takes its status); ``label`` names it."""

    cmd: Annotated[list[str], Meta(min_length=1)]
    env: dict[str, str]
    cwd: str | None = None
    stdin: bool = False
    bg: bool = False
    waitable: bool = False
    label: Label | None = None


class InputRequest(Struct, frozen=True):
    """``rexec.write``: ``data`` to the standard input of process ``pid`` (``encoding``
    ``base64``: bytes that are not UTF-8); ``eof`` closes it."""

    pid: int
    data: str = ""
    eof: bool = False
    encoding: Literal["base64"] | None = None


class SignalRequest(Struct, frozen=True):
    """``rexec.kill``: send ``signum`` to process ``pid``'s process group (or, with
    ``pid`` -1, to the one ``label`` names)."""

    pid: int
    signum: Annotated[int, Meta(ge=1, le=64)]
    label: Label | None = None


class WaitRequest(Struct, frozen=True):
    """``rexec.wait``: the wait status of waitable process ``pid`` (or, with ``pid`` -1,
    of the one ``label`` names), once it has ended."""

    pid: int
    label: Label | None = None
