"""A broker's ``Boot`` from what started it: its configuration, a PMI-1 launcher or
Slurm (``bootstrap.detect``), with the instance certificate loaded and the PMI
server asked; None for a broker alone. ``pflux start`` calls it before anything
starts, so that a bad certificate or environment stops it with one message.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pflux.broker import bootstrap
from pflux.broker.boot import Boot, BootstrapError, Cert

__all__ = ["resolve"]


def resolve(
    env: Mapping[str, str],
    config: Mapping[str, Any],
    *,
    hostname: str | None,
    cert_path: str | None,
    fanout: int | None,
) -> Boot | None:
    """This broker's place; ``hostname`` overrides the machine's (``-S hostname``),
    ``cert_path`` ``[bootstrap] curve_cert`` (``--curve-cert``), ``fanout`` the
    source's default tree (``-S tbon.fanout``)."""
    source = bootstrap.detect(env, config)
    table = config.get("bootstrap")
    table = table if isinstance(table, Mapping) else {}
    name = hostname or socket.gethostname()
    if source == "single":
        if cert_path is not None:
            raise BootstrapError("--curve-cert: only for an instance of several brokers")
        return None
    if source == "pmi":
        from pflux.broker.pmiclient import PMIClient

        with PMIClient.from_env(env) as client:  # finalized as it closes
            return bootstrap.from_pmi(client, _reserve, name, fanout or bootstrap.DEFAULT_FANOUT)
    cert = _cert(cert_path or bootstrap.config_cert_path(table))
    if source == "config":
        return bootstrap.from_config(table, name, cert, fanout)
    return bootstrap.from_slurm(env, cert, None, fanout or bootstrap.DEFAULT_FANOUT)


def _cert(path: str | None) -> Cert | None:
    if path is None:
        return None
    from pflux.broker.cert import load_cert

    return load_cert(Path(path), os.getuid())


def _reserve(endpoint: str) -> str:
    """``tcp://ADDRESS:*`` made a port the overlay can bind: one the system gives now
    (another program could take it before the overlay binds; it then fails loudly)."""
    address = endpoint.removeprefix("tcp://").rpartition(":")[0]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        port = sock.getsockname()[1]
    return f"tcp://{address}:{port}"
