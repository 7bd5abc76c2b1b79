"""A module process's link to the broker: what happens once the broker has gone."""

from __future__ import annotations

import asyncio
import errno
import os
import socket

import pytest

from pflux.broker.module import Link
from pflux.broker.router import Broker
from pflux.errors import RPCError


def test_a_request_after_the_broker_went_away_fails_at_once() -> None:
    """A service stopping after the broker died (job-list's last journal-sync) must not
    wait for an answer nobody will send."""

    async def scenario() -> int:
        mine, broker_end = socket.socketpair()
        link = Link(Broker(os.getuid()))
        await asyncio.get_running_loop().create_unix_connection(lambda: link, sock=mine)
        broker_end.close()  # the broker is gone
        await asyncio.wait_for(link.closed, 5)
        with pytest.raises(RPCError) as info:
            await asyncio.wait_for(link.call("job-manager.journal-sync", {}), 5)
        assert info.value.errstr == "the link to the broker is closed"
        return info.value.errnum

    assert asyncio.run(scenario()) == errno.ECONNRESET
