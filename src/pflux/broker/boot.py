"""Where a broker stands in its instance: its rank, the tree's shape, its keys.

A broker learns this once, before it starts, from one of the bootstrap sources
(``pflux start --test-size``, Slurm's environment, a PMI-1 launcher, or a
``[bootstrap]`` config); the overlay (``pflux.broker.overlay``) is built from it
alone, so the overlay knows nothing of where it came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from pflux.errors import PfluxError

__all__ = ["Boot", "BootstrapError", "Cert", "CertError"]


class CertError(PfluxError):
    """A CURVE certificate file that cannot be used: ``FILE: rule``."""


class BootstrapError(PfluxError):
    """A broker's place in its instance cannot be learned from Slurm's environment or PMI."""


@dataclass(frozen=True)
class Cert:
    """A CURVE key pair, each key in Z85 text (40 characters); ``secret`` may be empty
    for a peer's certificate, of which only the public key is known."""

    public: str
    secret: str = ""


@dataclass(frozen=True)
class Boot:
    """One broker's place: rank ``rank`` of ``size``; ``hostnames[r]`` is rank r's host.

    ``bind`` is the ZeroMQ endpoint this broker listens on for its children (None
    for a leaf), ``parent`` the endpoint of its parent (None for rank 0).
    ``cert`` is this broker's own key pair; ``parent_key`` the public key the
    parent must prove (CURVE server key); ``allowed`` the public keys a child may
    connect with. With one instance certificate, as flux-core's system instance
    has, all three are that certificate's.
    """

    rank: int
    size: int
    hostnames: tuple[str, ...]
    fanout: int
    bind: str | None
    parent: str | None
    cert: Cert
    parent_key: str
    allowed: frozenset[str]

    def parent_rank(self) -> int | None:
        """The parent's rank in a k-ary tree of fanout ``fanout`` rooted at 0."""
        return None if self.rank == 0 else (self.rank - 1) // self.fanout

    def children(self) -> range:
        """The ranks of this broker's children."""
        first = self.rank * self.fanout + 1
        return range(min(first, self.size), min(first + self.fanout, self.size))
