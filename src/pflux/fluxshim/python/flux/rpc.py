"""``flux.rpc.RPC``: the future of one request (``Flux.rpc``)."""

from __future__ import annotations

import errno
import json

from flux.constants import FLUX_NODEID_ANY, FLUX_RPC_NORESPONSE, FLUX_RPC_STREAMING
from flux.future import Future

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from flux.future import FutureHandle

    class RPCHandle(FutureHandle, Protocol):
        """What an RPC asks of its handle (``flux.Flux`` is one): to send its request
        and keep it, by matchtag, until its last response."""

        _rpcs: dict[int, RPC]  # the RPCs waiting for a response, by matchtag

        def _send_request(
            self, rpc: RPC, topic: str, payload: Any, nodeid: int, flags: int
        ) -> int: ...

        def rpc(
            self, topic: Any, payload: Any = ..., nodeid: int = ..., flags: int = ...
        ) -> RPC: ...


# what pflux's broker says of a topic nobody serves, and flux-core's words for it
_PFLUX_NO_SERVICE = "no service provides "


def _topic(topic: Any) -> str:
    if isinstance(topic, bytes):
        topic = topic.decode("utf-8")
    if not isinstance(topic, str) or not topic:
        raise OSError(errno.EINVAL, "rpc: topic must be a non-empty string")
    return topic


def _payload(topic: str, payload: Any) -> Any:
    """A JSON value: a str or bytes payload is JSON text (flux-core sends it as is); no
    payload is an empty object, which is what pflux's services take for none."""
    if payload is None:
        return {}
    if isinstance(payload, bytes):
        payload = payload.decode("utf-8")
    if isinstance(payload, str):
        try:
            return json.loads(payload)
        except ValueError as exc:
            raise OSError(errno.EPROTO, f"{topic}: payload: not JSON text: {exc}") from None
    return payload


class RPC(Future):
    """A request sent to the instance; its response(s) fulfil this future."""

    def __init__(
        self,
        flux_handle: RPCHandle,
        topic: Any,
        payload: Any = None,
        nodeid: int = FLUX_NODEID_ANY,
        flags: int = 0,
    ) -> None:
        super().__init__(flux_handle)
        self.topic = _topic(topic)
        self.flux_handle = flux_handle
        self._streaming = bool(flags & FLUX_RPC_STREAMING)
        if flags & FLUX_RPC_NORESPONSE:
            self._more = False
        payload = _payload(self.topic, payload)
        self._matchtag = flux_handle._send_request(self, self.topic, payload, nodeid, flags)

    def _on_response(self, payload: Any, errnum: int, errstr: str | None) -> None:
        """One response arrived (``_more`` already says whether it was the last)."""
        if errnum:
            if errnum == errno.ENOSYS and (errstr or "").startswith(_PFLUX_NO_SERVICE):
                errstr = f"No service matching {self.topic} is registered"
            self._fulfill_error(errnum, errstr)
        else:
            self._fulfill(payload)

    def get_matchtag(self) -> int:
        return self._matchtag

    def get_str(self) -> str | None:
        """The response's payload as JSON text (None: no payload)."""
        value = self._result()
        return None if value is None else json.dumps(value, separators=(",", ":"))

    def get(self) -> Any:
        """The response's payload, decoded (None: no payload)."""
        return self._result()


class VoidRPC(RPC):
    """An RPC whose ``get()`` says only whether it succeeded (flux-core returns None)."""

    def get(self) -> None:
        self._result()
