"""A client method's requests, described once for both clients.

Each request method of the API is a generator (an ``Exchange``): it yields a batch
of ``Call``s, all sent at once and in flight together, is sent back their
answers in order, and returns the method's value. It does no I/O, so the
blocking ``Client`` and the asyncio ``AsyncClient`` each drive the same
description their own way (``Client._run``, ``AsyncClient._run``): a method is
written once, in the module of what it asks (``submission``, ``jobs``,
``jobqueue``, ``instance``, ``kvs``), and declared in each client with one line
(``kill = blocking(jobs.kill)``). A refusal (RPCError) is thrown into the
generator, which may turn it into another error, unless the request is
``tolerant``: then the refusal is the answer.
"""

from __future__ import annotations

# the class collections.abc re-exports, without the collections package (a command
# that loads it pays for OrderedDict, Counter, ChainMap...)
from _collections_abc import Generator

from pflux.protocol.message import NODEID_ANY

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from inspect import Signature
    from typing import Any, TypeVar

    T = TypeVar("T")
else:
    Any = T = object  # what run-time subscripts take: only the type checker reads them


class Call:
    """One request: its topic and payload, and how its answer is waited for.

    ``wait``: the answer comes when something happens (a job ends), so it has no
    limit unless ``timeout`` gives one; otherwise the limit is ``timeout``, else the
    client's. ``streaming``: the answer is every response's payload, in a list, up
    to the stream's end. ``tolerant``: a refusal is the answer, not raised.
    ``cached``: the answer cannot change while the client is connected, so a client
    asks once and keeps it, by topic (alone in its batch).
    (A plain class: one is made for each of thousands of submissions.)
    """

    __slots__ = (
        "cached",
        "nodeid",
        "payload",
        "streaming",
        "timeout",
        "tolerant",
        "topic",
        "wait",
    )

    def __init__(
        self,
        topic: str,
        payload: Any,
        *,
        wait: bool = False,
        timeout: float | None = None,
        nodeid: int = NODEID_ANY,
        streaming: bool = False,
        tolerant: bool = False,
        cached: bool = False,
    ) -> None:
        self.topic = topic
        self.payload = payload
        self.wait = wait
        self.timeout = timeout
        self.nodeid = nodeid
        self.streaming = streaming
        self.tolerant = tolerant
        self.cached = cached


#: what a request method is: batches of requests out, their answers in, its value at the end
Exchange = Generator[list[Call], list[Any], T]


def ask(
    topic: str,
    payload: Any,
    *,
    wait: bool = False,
    timeout: float | None = None,
    nodeid: int = NODEID_ANY,
    streaming: bool = False,
) -> Exchange[Any]:
    """One request alone: its answer."""
    call = Call(topic, payload, wait=wait, timeout=timeout, nodeid=nodeid, streaming=streaming)
    (answer,) = yield [call]
    return answer


def method_of(
    method: Callable[..., Any], describe: Callable[..., Any], owner: str, doc: str
) -> None:
    """Name and document a client's ``method`` after the request method ``describe``:
    its name, ``doc``, and its signature with ``self`` first, returning what the
    exchange returns."""
    method.__name__ = describe.__name__
    method.__qualname__ = f"{owner}.{describe.__name__}"
    method.__doc__ = doc
    method.__wrapped__ = _Described(describe)  # type: ignore[attr-defined]


class _Described:
    """What ``inspect.signature`` finds behind a client's method (its ``__wrapped__``):
    the request method's signature as the method's, worked out only when asked for,
    so that loading the clients does not load ``inspect``."""

    __slots__ = ("describe",)

    def __init__(self, describe: Callable[..., Any]) -> None:
        self.describe = describe

    @property
    def __signature__(self) -> Signature:
        return _signature(self.describe)


_SIGNATURES: dict[Callable[..., Any], Signature] = {}


def _signature(describe: Callable[..., Any]) -> Signature:
    """``describe``'s signature as a method's: ``self`` first, and for ``Exchange[T]``
    (an annotation as text) returning ``T``; made once (without functools, which a
    short command does not load)."""
    made = _SIGNATURES.get(describe)
    if made is None:
        made = _SIGNATURES[describe] = _make_signature(describe)
    return made


def _make_signature(describe: Callable[..., Any]) -> Signature:
    from inspect import Parameter, signature

    sig = signature(describe)
    exchange = str(sig.return_annotation)
    assert exchange.startswith("Exchange["), describe
    returns = exchange.removeprefix("Exchange[").removesuffix("]")
    this = Parameter("self", Parameter.POSITIONAL_OR_KEYWORD)
    return sig.replace(parameters=[this, *sig.parameters.values()], return_annotation=returns)
