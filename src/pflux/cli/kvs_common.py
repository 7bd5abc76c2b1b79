"""What the ``kvs`` sub-commands share: the client, the namespace, keys, and failures.

A failure is one line on stderr and exit status 1: as flux-core's ``flux-kvs``
words it when the command runs as ``flux`` (``flux-kvs: KEY: No such file or
directory``), else pflux's (``pflux-kvs: ERROR: ...``, the KVS's own message
for a lookup).
"""

from __future__ import annotations

import argparse
import os

from pflux.cli import base
from pflux.errors import PfluxError, RPCError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux import Client

ROOT = "."
#: the job's guest namespace in a job's tasks: pflux's name, then flux-core's
NAMESPACE_ENVS = ("PFLUX_KVS_NAMESPACE", "FLUX_KVS_NAMESPACE")


class Failure(PfluxError):
    """A sub-command failed: ``str(self)`` is the line that says why."""


def as_flux() -> bool:
    """Whether the command runs as ``flux``, with flux-core's messages."""
    return base.PROG == "flux"


def client(args: argparse.Namespace) -> Client:
    from pflux import Client

    return Client(args.uri)


def namespace(args: argparse.Namespace, name: str | None = None) -> str | None:
    """``name`` if given, else ``-N``, else the environment's, else None (primary)."""
    if name:
        return name
    given: str | None = getattr(args, "namespace", None)
    if given:
        return given
    for env in NAMESPACE_ENVS:
        if os.environ.get(env):
            return os.environ[env]
    return None


def normalize(key: str) -> str:
    """``key`` as flux-core's KVS reads it: empty components dropped; dots alone: the root."""
    return ".".join(part for part in key.split(".") if part) or ROOT


def lookup_failure(key: str, exc: RPCError) -> PfluxError:
    """What a failed read of ``key`` reports: ``KEY: strerror`` as flux, the KVS's words
    as pflux."""
    if as_flux():
        return Failure(f"{key}: {os.strerror(exc.errnum)}")
    return exc


def commit_failure(what: str, exc: RPCError) -> Failure:
    """What a refused commit reports: the KVS's words (they name the key and the rule),
    after ``what`` as flux (``flux_kvs_commit``)."""
    return Failure(f"{what}: {exc.errstr}" if as_flux() else exc.errstr)
