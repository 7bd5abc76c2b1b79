"""The instance's start log: a ``start`` event in the KVS eventlog ``admin.eventlog``
at each start, a ``finish`` at each clean stop (flux-core's, which ``flux startlog``
reads). A start not preceded by a finish tells of a crash."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from pflux.broker.router import Broker
from pflux.errors import RPCError
from pflux.protocol.kvs import CommitRequest

KEY = "admin.eventlog"

log = logging.getLogger("pflux.broker")


async def post(broker: Broker, name: str, context: dict[str, Any]) -> None:
    """Append event ``name`` once the KVS has it durably (an instance without a KVS: none)."""
    if "kvs" not in broker.services:
        return
    entry = {"timestamp": time.time(), "name": name, "context": context}
    line = json.dumps(entry, separators=(",", ":")) + "\n"
    try:
        await broker.call("kvs.commit", CommitRequest([["append", KEY, line]]))
    except RPCError as exc:
        log.error("%s: the %s event was not recorded: %s", KEY, name, exc.errstr)
