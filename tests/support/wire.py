"""What a message's payload is on the wire, for test doubles of services.

Within the broker's process a service sends the typed message it built
(``pflux.protocol``); a double reads it as the JSON it becomes when it
leaves the process.
"""

from __future__ import annotations

from typing import Any

import msgspec


def as_sent(payload: Any) -> Any:
    """``payload`` with every typed message in it made JSON's types."""
    return msgspec.to_builtins(payload)
