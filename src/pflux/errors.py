"""The exceptions pflux raises, as one small tree.

    PfluxError                    anything pflux raises on purpose
    ├── SpecError (ValueError)    input that breaks a specification
    │   ├── JobspecError          RFC 25; carries every problem found, not only the first
    │   ├── JobIDError            RFC 19 FLUID text that decodes in no encoding
    │   ├── EventlogError         RFC 18; names the line, flags a partial last line
    │   ├── IdsetError            RFC 22
    │   ├── HostlistError
    │   ├── ResourceError         RFC 20 (R)
    │   ├── DependencyError       RFC 26 command-line URI or object
    │   ├── DurationError         Flux Standard Duration
    │   └── SizeError             a size in bytes (flux-core's parse_size grammar)
    ├── ConfigError               a configuration table or key that cannot be used
    ├── CertError                 a CURVE certificate file that cannot be used
    ├── BootstrapError            where a broker stands cannot be learned (Slurm, PMI)
    ├── UsageError                a command line that cannot be acted on
    ├── NoInstanceError           no instance named, or nothing answers as one there
    ├── ProtocolError             bytes on a connection that are not a message
    └── RPCError                  an error response: ``errnum`` and ``errstr``
        └── RPCTimeout            no response within the time asked for (ETIMEDOUT)

Callers at a boundary (the CLI, an RPC handler) catch PfluxError and print or
send its message; anything else escaping is a bug. A client meets the last four
only through ``pflux.client``, which turns what the socket does into them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on every command
if TYPE_CHECKING:
    from collections.abc import Iterable


class PfluxError(Exception):
    """Base of every error pflux raises on purpose."""


class SpecError(PfluxError, ValueError):
    """Input that does not satisfy a specification."""


class JobspecError(SpecError):
    """An invalid jobspec, with every problem found.

    ``problems`` holds ``(path, message)`` pairs; a path is dotted and indexed
    from the document root, e.g. ``resources[0].with[0].count``, and is empty
    for a problem with the document as a whole (such as a YAML syntax error).
    """

    def __init__(self, problems: Iterable[tuple[str, str]]) -> None:
        self.problems: list[tuple[str, str]] = list(problems) or [("", "invalid jobspec")]
        super().__init__("; ".join(f"{p}: {m}" if p else m for p, m in self.problems))


class JobIDError(SpecError):
    """A job id that cannot be parsed or encoded, or a FLUID generator misused."""


class EventlogError(SpecError):
    """A malformed eventlog or event.

    ``lineno`` is the 1-based line of the problem (None for a single event);
    ``partial`` is true when the problem is an unterminated last line, which a
    reader following a live eventlog may wait on rather than reject.
    """

    def __init__(self, message: str, *, lineno: int | None = None, partial: bool = False) -> None:
        self.lineno = lineno
        self.partial = partial
        super().__init__(f"line {lineno}: {message}" if lineno is not None else message)


class IdsetError(SpecError):
    """Text that is not an RFC 22 idset."""


class HostlistError(SpecError):
    """Text that is not a hostlist."""


class ResourceError(SpecError):
    """An invalid RFC 20 resource set (R)."""


class DependencyError(SpecError):
    """An RFC 26 dependency that cannot be parsed."""


class DurationError(SpecError):
    """Text that is not a Flux Standard Duration."""


class SizeError(SpecError):
    """A value that is not a size in bytes (``pflux.spec.size``)."""


class ConfigError(PfluxError):
    """A configuration table or key that cannot be used, and why: ``[table] key: rule``."""

    def __init__(self, table: str, key: str | None, rule: str) -> None:
        where = f"[{table}]" if key is None else f"[{table}] {key}"
        super().__init__(f"{where}: {rule}")


class UsageError(PfluxError):
    """A command line or option value that cannot be acted on."""


class NoInstanceError(PfluxError):
    """No instance was named, or the named one is not there or does not answer as one."""


class ProtocolError(PfluxError):
    """Bytes on a connection that are not a message; the connection cannot go on."""


class RPCError(PfluxError):
    """An error response: ``errnum`` (an errno value) and ``errstr``, a message for people."""

    def __init__(self, errnum: int, errstr: str | None = None) -> None:
        self.errnum = errnum
        self.errstr = errstr or _strerror(errnum)
        super().__init__(self.errstr)


def _strerror(errnum: int) -> str:
    import os

    return os.strerror(errnum) if errnum else "unknown error"


class RPCTimeout(RPCError):
    """No response to ``what`` within ``seconds``: an RPCError with errnum ETIMEDOUT."""

    def __init__(self, what: str, seconds: float) -> None:
        import errno

        super().__init__(errno.ETIMEDOUT, f"timed out after {seconds:g} s waiting for {what}")
