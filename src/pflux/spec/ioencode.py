"""RFC 24's ioencode of standard input: what a client sends as ``job-exec.stdin`` and
job-exec appends to a job's guest ``input`` eventlog as a ``data`` event.

Pure and small, so that the API encodes stdin without loading the job shell's modules.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["data_context"]


def data_context(ranks: str, data: bytes, eof: bool) -> dict[str, Any]:
    """One ``data`` event's context: ``data`` as text, or base64 where it is not UTF-8;
    ``eof`` closes the stream of the tasks ``ranks`` names (``all`` or an idset)."""
    context: dict[str, Any] = {"stream": "stdin", "rank": ranks}
    if data:
        try:
            context["data"] = data.decode()
        except UnicodeDecodeError:
            import base64

            context["encoding"] = "base64"
            context["data"] = base64.b64encode(data).decode()
    if eof:
        context["eof"] = True
    return context
