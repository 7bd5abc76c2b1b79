"""rexec's requests (``rexec.exec``, ``rexec.write``, ``rexec.kill``), as types."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct


class CommandRequest(Struct, frozen=True):
    """``rexec.exec``: run ``cmd`` (argv) in ``cwd`` with ``env``; ``stdin`` keeps its
    standard input open for ``rexec.write`` (else it reads /dev/null)."""

    cmd: Annotated[list[str], Meta(min_length=1)]
    env: dict[str, str]
    cwd: str | None = None
    stdin: bool = False


class InputRequest(Struct, frozen=True):
    """``rexec.write``: ``data`` to the standard input of process ``pid`` (``encoding``
    ``base64``: bytes that are not UTF-8); ``eof`` closes it."""

    pid: int
    data: str = ""
    eof: bool = False
    encoding: Literal["base64"] | None = None


class SignalRequest(Struct, frozen=True):
    """``rexec.kill``: send ``signum`` to process ``pid``'s process group."""

    pid: int
    signum: Annotated[int, Meta(ge=1, le=64)]
