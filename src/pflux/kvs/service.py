"""The ``kvs`` service: RFC 16's key-value store for the instance, over the SQLite store.

Writes are batched. Every ``kvs.commit`` (and namespace change) that arrives in
one loop turn is queued and applied at the end of the turn in one SQLite
transaction, each commit atomic within it (a savepoint), and each request is
answered only after that transaction has committed. This is what lets
job-ingest and job-manager, which send one commit per batch of jobs, reach
thousands of jobs per second. The queue is a store's ``TurnBatch``
(``pflux.broker.turn``): its flush waits for the commits the turn's end sends,
so that a job's end is one transaction (the rule is written there). Requests
are applied in the order they arrive.

The store keeps one SQLite transaction open across turns and commits it every
``HOLD_SECONDS`` and at stop (``Store.hold``), so that a page many turns write is
written once; each turn's commits are still atomic, and answered after their
turn's work is applied and, in a durable store, in its redo log (``redo``), which
the store applies again at open. A store that need not be crash-safe (a
temporary instance's, ``journal_mode`` "memory") has no log.

A failed SQLite transaction is fatal: the requests in it get EIO, the service
refuses everything after, and the broker is told to stop (``Broker.fatal``).
Carrying on would let other services act on events that were never stored;
stopping lets a restart recover from what was. A full disk is the exception
in a durable store: a turn that finds it full was rolled back, its requests get
ENOSPC, and writes are refused with ENOSPC, untried, for a while
(``FULL_BACKOFF``, doubling while the disk stays full), so that a writer's
commits sent after a failed one fail too and it can send them again in order;
the first turn that is stored ends it. A held commit that finds it full is held
again with its turns (answered, and in the log) and tried again after the
pause, writes refused meanwhile. Reads go on.

Watches are fed from the changes each transaction reports, after it commits,
in commit order: a watcher sees every change once, with exactly the appended
text, and never polls.

An append watch (a job's output followed) keeps pace with its requester: its
value so far, and whatever is appended while the requester is not reading
(``Request.paused``: its connection's buffer is full), is read from the store a
piece at a time as the requester drains, from where the watch has got to, and
the watch follows the commits again once it has caught up. So a follower that
stops reading holds the broker to about a piece, never the value.

A plain watch wants the key's current value: while its requester is not
reading, the commits in between only replace the one value it holds, which is
sent once the requester drains (``_send_latest``). Values between are skipped,
as flux-core's kvs-watch skips those between two root versions it reports; a
writer rewriting a key fast under a stalled watcher costs the broker one value.

Reads see committed data: a read that arrives in the same turn as a commit
does not see it, so a client reads after its commit is answered.

A job's guest namespace belongs to the job's owner, who may read all of it
and write all of it but ``exec``, ``output`` and ``input``: those are the
execution service's (``exec.eventlog``, the tasks' output and input), and it
writes them as primary keys. Writing them through the namespace is EPERM for
everyone, the instance owner included, so a task cannot corrupt its own job's
record; the instance owner can still reach them through ``primary``.

Symbolic links (RFC 11's ``symlink``, a commit's ``symlink`` op) are followed on
a key's path by every read and write (a read follows the key's own link too; a
write replaces it), once there is any: until then no key is looked at. What a
link leads to is checked as the key itself would be: a guest stays in its
namespace, and nobody writes ``exec``, ``output`` or ``input`` through one.

Checkpoints (``Store.checkpoint``) run in a thread of their own, one at a
time, once the held transaction has been committed ``CHECKPOINT_COMMITS`` times
since the last one began, or a second has passed with a commit: the loop never
waits for SQLite to copy and sync the WAL, and a page many commits wrote is
copied once.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, ClassVar

from pflux.broker.config import ConfigError, Declared
from pflux.broker.router import Broker, LocalRoute, Request, Service, method
from pflux.broker.turn import TurnBatch
from pflux.errors import PfluxError
from pflux.kvs.database import JOURNAL_MODES, SYNC_MODES, StoreError, StoreFull
from pflux.kvs.keys import (
    PRIMARY,
    ROOT,
    KVSError,
    check_key,
    check_name,
    default_prefix,
    from_primary,
    quote,
    to_primary,
)
from pflux.kvs.store import (
    APPEND,
    PUT,
    SYMLINK,
    UNLINK,
    Change,
    Store,
    link_value,
)
from pflux.protocol.decode import decode
from pflux.protocol.kvs import (
    CommitRequest,
    GetReply,
    GetRequest,
    GetrootRequest,
    LsRequest,
    NamespaceCreateRequest,
    NamespaceRemoveRequest,
    ReadlinkRequest,
    WaitVersionRequest,
    WalkRequest,
    WatchCancelRequest,
    WatchRequest,
)
from pflux.spec.kvs_keys import KEY_PATTERN

log = logging.getLogger("pflux.kvs")

DB_NAME = "kvs.sqlite"
# A job's guest namespace is the job's to write (RFC 16: ``application``, ``tools.<name>``,
# other ``<service>`` keys) except these, which job-exec writes through the primary namespace
EXEC_KEYS = frozenset(("exec", "output", "input"))
WALK_BATCH = 1024  # entries per kvs.walk response
CHECKPOINT_COMMITS = 16  # commits of the held transaction after which a checkpoint is due
CHECKPOINT_INTERVAL = 1.0  # seconds after which any commit makes one due
FULL_BACKOFF = (0.1, 2.0)  # seconds writes are refused after a full disk: first, most
HOLD_SECONDS = 0.05  # the store commits the transaction it holds this often (Store.hold)
VALUE_PIECE = 1 << 20  # characters per response of a value sent in pieces
_SEQUENCES = (list, tuple)


class _Watch:
    """One ``kvs.watch`` stream."""

    __slots__ = (
        "after",
        "append",
        "before",
        "behind",
        "ending",
        "gone",
        "key",
        "namespace",
        "req",
        "sender",
        "sent",
        "started",
        "value",
    )

    def __init__(self, req: Request, key: str, namespace: str, append: bool) -> None:
        self.req = req
        self.key = key  # primary key
        self.namespace = namespace
        self.append = append
        self.started = False  # the first value has been sent
        self.value = ""  # the current value, kept for a plain watch
        self.sender: tuple[object, int] = (_sender(req), req.matchtag)
        self.gone: Any = None  # the disconnect callback
        # an append watch's place in the value: ``sent`` characters sent, of which the
        # chunks up to seq ``after`` hold ``before``; ``behind``: it is read from the store
        # (a plain watch: its latest value waits for the requester to drain)
        self.sent = 0
        self.after = -1
        self.before = 0
        self.behind = False
        self.ending = False  # canceled while behind: it ends once it has caught up


class _Pending:
    """A write waiting for the end of the loop turn."""

    __slots__ = ("args", "kind", "req")

    def __init__(self, req: Request, kind: str, args: Any) -> None:
        self.req = req
        self.kind = kind  # "commit", "namespace-create" or "namespace-remove"
        self.args = args


class KVSService(Service):
    """kvs.commit, get, ls, readlink, walk, watch, watch-cancel, dropcache and the namespace
    methods."""

    name = "kvs"
    config_keys: ClassVar[Declared] = {"kvs": ("journal_mode", "sync")}

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self._store: Store | None = None
        # the writes of this turn (and of the next, when this one's end sent more)
        self._queue: TurnBatch[list[_Pending]] = TurnBatch(broker, list, self._flush, store=True)
        self._watches: dict[str, list[_Watch]] = {}  # by primary key
        self._by_sender: dict[tuple[object, int], _Watch] = {}
        # the watches of each namespace but the primary, by sender: a job's ends with it
        self._by_namespace: dict[str, dict[tuple[object, int], _Watch]] = {}
        self._failed: str | None = None
        self._full: str | None = None  # why writes are refused (a full disk), until _full_until
        self._full_until = 0.0
        self._full_backoff = FULL_BACKOFF[0]
        self._checkpoints: ThreadPoolExecutor | None = None
        self._checkpointing: asyncio.Future[int] | None = None
        self._written = 0  # commits since the last checkpoint began
        self._checkpointed = time.monotonic()
        self._held: asyncio.TimerHandle | None = None  # commits the held transaction
        self._catching_up: set[asyncio.Task[None]] = set()  # watches waiting for a drain
        self._version_waits: list[tuple[int, Request]] = []  # kvs.wait-version's, unanswered

    @property
    def store(self) -> Store:
        """The store, while the service can serve; KVSError otherwise."""
        if self._failed is not None:
            raise KVSError(errno.EIO, f"kvs: unavailable after a failed commit: {self._failed}")
        if self._store is None:
            raise KVSError(errno.ENOSYS, "kvs: not running")
        return self._store

    async def start(self) -> None:
        state_dir = self.broker.attrs.get("state-dir")
        if not state_dir:
            raise PfluxError("kvs: the broker attribute state-dir is not set")
        config = self.broker.config.get("kvs", {})
        if not isinstance(config, dict):
            raise ConfigError("kvs", None, f"must be a table, got {quote(config)}")
        # as flux-core's content-sqlite: crash-safe where the state outlives the instance
        temporary = self.broker.attrs.get("state-dir-temporary") == "1"
        journal = _setting(config, "journal_mode", "memory" if temporary else "wal", JOURNAL_MODES)
        sync = _setting(config, "sync", "off" if journal == "memory" else "normal", SYNC_MODES)
        fresh = self.broker.attrs.get("state-dir-fresh") == "1"  # pflux start --fresh
        self._store = Store(Path(state_dir) / DB_NAME, sync=sync, journal=journal, fresh=fresh)
        log.info("kvs: %s (journal_mode=%s, sync=%s)", self._store.path, journal, sync)

    async def stop(self) -> None:
        self._queue.flush()
        if self._held is not None:
            self._held.cancel()
            self._held = None
        for watch in list(self._by_sender.values()):
            self._end(watch, errno.ENOSYS, "kvs: the instance is stopping")
        for _, req in self._version_waits:
            req.error(errno.ENOSYS, "kvs: the instance is stopping")
        self._version_waits.clear()
        if self._checkpointing is not None:
            await asyncio.wait([self._checkpointing])
        if self._checkpoints is not None:
            self._checkpoints.shutdown()
        if self._store is not None:
            self._store.close()
            self._store = None

    # --- writes -------------------------------------------------------------------------

    @method("commit", guest=True)
    def commit(self, req: Request) -> None:
        request = decode(req.topic, req.payload, CommitRequest)
        ops = request.ops
        namespace = request.namespace or PRIMARY
        if namespace == PRIMARY:
            _require_owner(req, PRIMARY)
        else:
            # keys are made primary when the namespace is known, at the end of the turn
            for i, op in enumerate(ops):
                if not isinstance(op, list) or len(op) != 3:
                    raise KVSError(errno.EINVAL, f"kvs.commit: ops[{i}]: must be [op, key, value]")
                try:
                    key = check_key(op[1])
                except KVSError as exc:
                    raise KVSError(errno.EINVAL, f"kvs.commit: ops[{i}]: {exc.errstr}") from None
                if key.partition(".")[0] in EXEC_KEYS:
                    raise KVSError(
                        errno.EPERM,
                        f"kvs.commit: ops[{i}]: key {quote(key)} in namespace {quote(namespace)}:"
                        " permission denied: exec, output and input are written by the"
                        " execution service only (use application or tools.<name>)",
                    )
        self._enqueue(req, "commit", (namespace, ops))

    @method("namespace-create")
    def namespace_create(self, req: Request) -> None:
        # decoded here: the store is never handed an owner SQLite cannot hold
        request = decode(req.topic, req.payload, NamespaceCreateRequest)
        _require_owner(req, None)
        prefix = request.prefix
        if prefix is None:
            prefix = default_prefix(check_name(request.name))
        self._enqueue(req, "namespace-create", (request.name, request.owner, prefix))

    @method("namespace-remove")
    def namespace_remove(self, req: Request) -> None:
        request = decode(req.topic, req.payload, NamespaceRemoveRequest)
        _require_owner(req, None)
        self._enqueue(req, "namespace-remove", request.name)

    def _enqueue(self, req: Request, kind: str, args: Any) -> None:
        _ = self.store  # refuse at once when there is nowhere to write
        if self._full is not None and time.monotonic() < self._full_until:
            raise KVSError(errno.ENOSPC, f"{req.topic}: not stored: {self._full}")
        self._queue.get().append(_Pending(req, kind, args))

    def _flush(self, queue: list[_Pending]) -> None:
        """Apply everything queued in one transaction, then answer and notify."""
        try:
            store = self.store
        except KVSError as exc:
            for item in queue:
                item.req.error(exc.errnum, f"{item.req.topic}: not stored: {exc.errstr}")
            return
        results: list[tuple[_Pending, KVSError | None, list[Change]]] = []
        nops = 0
        try:
            if self._held is None:
                store.hold()
                self._held = self.broker.loop.call_later(HOLD_SECONDS, self._release)
            with store.transaction():
                for item in queue:
                    try:
                        changes = self._apply(store, item)
                    except KVSError as exc:
                        results.append((item, exc, []))
                    else:
                        results.append((item, None, changes))
                        if item.kind == "commit":
                            nops += len(item.args[1])
                store.count_commits(sum(1 for i, e, _ in results if i.kind == "commit" and not e))
                store.reclaim()  # pages of purged jobs, a bounded step a transaction
        except StoreError as exc:
            self._failed_transaction(store, exc, queue)
            return
        except Exception as exc:  # a bug: what was applied is rolled back, so it is a failure
            log.exception("kvs: applying a transaction failed")
            self._fail(f"internal error: {exc!r}", queue)
            return
        log.debug("kvs: %d requests, %d ops, one transaction", len(queue), nops)
        if self._full is not None:
            self._writing_again()
        self._answer(results)
        self._versions_reached(store.version)

    # --- the root's version --------------------------------------------------------------

    @method("getroot", guest=True)
    def getroot(self, req: Request) -> None:
        """The root's version (flux's ``rootseq``): the commits stored since the database
        was made, the same for every namespace; no ``rootref`` (rows, not a tree)."""
        namespace = decode(req.topic, req.payload, GetrootRequest).namespace or PRIMARY
        owner = self._reader(req, namespace)
        req.respond({"rootseq": self.store.version, "owner": owner, "flags": 0})

    @method("wait-version", guest=True)
    def wait_version(self, req: Request) -> None:
        request = decode(req.topic, req.payload, WaitVersionRequest)
        self._reader(req, request.namespace or PRIMARY)
        if self.store.version >= request.rootseq:
            req.respond({})
            return
        waiting = (request.rootseq, req)
        self._version_waits.append(waiting)

        def gone() -> None:
            if waiting in self._version_waits:
                self._version_waits.remove(waiting)

        req.on_disconnect(gone)

    def _reader(self, req: Request, namespace: str) -> int:
        """The owner of ``namespace``, which the requester must be allowed to read."""
        if namespace == PRIMARY:
            _require_owner(req, PRIMARY)
            return self.broker.owner
        self._namespace(req, namespace)
        return self.store.namespace(namespace).owner

    def _versions_reached(self, version: int) -> None:
        """Answer the waits for a version up to ``version``."""
        if not self._version_waits:
            return
        waiting = []
        for wanted, req in self._version_waits:
            if wanted <= version:
                req.respond({})
            else:
                waiting.append((wanted, req))
        self._version_waits = waiting

    def _release(self) -> None:
        """Commit the transaction the store holds open. A durable store's that found the
        disk full is held again, its turns safe in the redo log: writes are refused for
        a while, and the commit tried again after it."""
        self._held = None
        if self._store is None or self._failed is not None:
            return
        try:
            self._store.release()
            self._written += 1
            self._checkpoint_if_due(self._store)
        except StoreFull as exc:
            if not self._store.wal:
                self._fail(str(exc), [])
                return
            self._refuse_while_full(str(exc), [])
            self._held = self.broker.loop.call_later(self._full_backoff, self._release)
        except StoreError as exc:
            self._fail(str(exc), [])

    def _checkpoint_if_due(self, store: Store) -> None:
        if self._checkpointing is not None or not store.wal:
            return
        recent = time.monotonic() - self._checkpointed < CHECKPOINT_INTERVAL
        if self._written < CHECKPOINT_COMMITS and recent:
            return
        if self._checkpoints is None:
            self._checkpoints = ThreadPoolExecutor(1, thread_name_prefix="kvs-checkpoint")
        self._written = 0
        future = self.broker.loop.run_in_executor(self._checkpoints, store.checkpoint)
        self._checkpointing = future
        future.add_done_callback(self._checkpoint_done)

    def _checkpoint_done(self, future: asyncio.Future[int]) -> None:
        self._checkpointing = None
        self._checkpointed = time.monotonic()
        if not future.cancelled() and future.exception() is not None:
            log.warning("kvs: %s", future.exception())

    def _answer(self, results: list[tuple[_Pending, KVSError | None, list[Change]]]) -> None:
        """Answer each request of a committed transaction, and feed the watches, in order."""
        for item, error, changes in results:
            if error is not None:
                item.req.error(error.errnum, f"{item.req.topic}: {error.errstr}")
                continue
            item.req.respond({})
            if changes:
                self._notify(changes)
            if item.kind == "namespace-remove":
                self._namespace_gone(item.args)

    def _apply(self, store: Store, item: _Pending) -> list[Change]:
        req = item.req
        if item.kind == "commit":
            namespace, ops = item.args
            prefix = ROOT
            if namespace != PRIMARY:
                prefix = self._namespace(req, namespace)
                ops = [(op[0], to_primary(prefix, op[1]), op[2]) for op in ops]
            # the broker's own services build well-formed ops, and make no links; only
            # clients' are checked
            local = isinstance(req.sender, LocalRoute)
            if store.links or (not local and any(_is_symlink(op) for op in ops)):
                ops = self._through_links(store, req, prefix, ops)
            return store.apply(ops, self._watches, checked=local)
        if item.kind == "namespace-create":
            store.namespace_create(*item.args)
        else:
            store.namespace_remove(item.args)
        return []

    def _through_links(self, store: Store, req: Request, prefix: str, ops: list[Any]) -> list[Any]:
        """``ops`` with the links on their keys' paths followed (not a key's own: a write
        to a link replaces it), and each symlink's value made the store's row."""
        linked: list[Any] = []
        for i, op in enumerate(ops):
            if not (type(op) in _SEQUENCES and len(op) == 3 and type(op[1]) is str):
                linked.append(op)  # the store says what is wrong with it
                continue
            kind, key, value = op
            if KEY_PATTERN.fullmatch(key) is not None:
                key = store.resolve(key, last=False)
                _check_reach(req, prefix, key, f"ops[{i}]", write=True)
            if kind == SYMLINK:
                value = self._link_value(req, prefix, i, value)
            linked.append((kind, key, value))
        return linked

    def _link_value(self, req: Request, prefix: str, i: int, value: Any) -> str:
        """A symlink op's ``{target, namespace?}`` as the store's row for it."""
        if not (
            isinstance(value, dict)
            and type(value.get("target")) is str
            and type(value.get("namespace", "")) is str
            and set(value) <= {"target", "namespace"}
        ):
            raise KVSError(
                errno.EINVAL, f"ops[{i}]: the value of symlink must be {{target, namespace?}}"
            )
        try:
            target = check_key(value["target"], root=True)
        except KVSError as exc:
            raise KVSError(errno.EINVAL, f"ops[{i}]: target: {exc.errstr}") from None
        namespace = value.get("namespace")
        where = prefix
        if namespace == PRIMARY:
            _require_owner(req, PRIMARY)
            where = ROOT
        elif namespace is not None:
            where = self._namespace(req, namespace)
        return link_value(target, namespace, to_primary(where, target))

    def _failed_transaction(self, store: Store, exc: StoreError, queue: list[_Pending]) -> None:
        """A full disk is refused for a while where the transaction was the turn's alone;
        anything else is fatal (so is a full disk under a held transaction, whose earlier
        commits were answered already)."""
        if isinstance(exc, StoreFull) and store.wal:
            self._refuse_while_full(str(exc), queue)
        else:
            self._fail(str(exc), queue)

    def _writing_again(self) -> None:
        log.warning("kvs: a transaction committed after a full disk; writing again")
        self._full = None
        self._full_backoff = FULL_BACKOFF[0]

    def _refuse_while_full(self, reason: str, queue: list[_Pending]) -> None:
        """A transaction found the disk full: ENOSPC for its requests, and writes for a while."""
        if self._full is None:
            log.error("kvs: %s; refusing writes until there is space", reason)
        else:
            self._full_backoff = min(self._full_backoff * 2, FULL_BACKOFF[1])
        self._full = reason
        self._full_until = time.monotonic() + self._full_backoff
        for item in queue:
            item.req.error(errno.ENOSPC, f"{item.req.topic}: not stored: {reason}")

    def _fail(self, reason: str, queue: list[_Pending]) -> None:
        """A transaction failed: nothing in it may be acknowledged, and the instance stops."""
        self._failed = reason
        self.broker.fatal(f"kvs: {reason}")
        for item in queue:
            item.req.error(errno.EIO, f"{item.req.topic}: not stored: {reason}")

    # --- reads -----------------------------------------------------------------------------

    @method("get", guest=True)
    def get(self, req: Request) -> Coroutine[Any, Any, None] | None:
        """The value at a key; as a streaming request, in pieces (a job's output may be
        larger than a message), one at a time as the requester reads them, then ENODATA."""
        request = decode(req.topic, req.payload, GetRequest)
        prefix = self._resolve(req, request.namespace)
        key = self._key(req, prefix, check_key(request.key, root=True))
        if req.streaming:
            self.store.chunks(key, -1, 0)  # the errors, before the stream begins
            return self._get_pieces(req, key)
        req.respond(GetReply(self.store.get(key)))
        return None

    async def _get_pieces(self, req: Request, key: str) -> None:
        after = -1
        while rows := self.store.chunks(key, after, VALUE_PIECE):
            req.respond(GetReply("".join(data for _, data in rows)))
            after = rows[-1][0]
            await req.drained()
        req.end()

    @method("ls", guest=True)
    def ls(self, req: Request) -> None:
        request = decode(req.topic, req.payload, LsRequest)
        prefix = self._resolve(req, request.namespace)
        key = self._key(req, prefix, check_key(request.key, root=True))
        req.respond({"entries": self.store.ls(key)})

    @method("readlink", guest=True)
    def readlink(self, req: Request) -> None:
        """A symbolic link's target, ``{target, namespace?}`` as it was made."""
        request = decode(req.topic, req.payload, ReadlinkRequest)
        prefix = self._resolve(req, request.namespace)
        key = self._key(req, prefix, check_key(request.key), last=False)
        req.respond(self.store.readlink(key))

    def _key(self, req: Request, prefix: str, key: str, *, last: bool = True) -> str:
        """The primary key that ``key`` in the namespace at ``prefix`` names, the links
        on its path followed (its own too, if ``last``)."""
        key = to_primary(prefix, key)
        if self.store.links:
            key = self.store.resolve(key, last=last)
            _check_reach(req, prefix, key, "key", write=False)
        return key

    @method("walk", guest=True)
    async def walk(self, req: Request) -> None:
        """Stream the values below a key, a page at a time, letting the loop run between pages
        (the restart of 100,000 jobs must not hold them all in memory at once)."""
        request = decode(req.topic, req.payload, WalkRequest)
        _require_streaming(req)
        prefix = self._resolve(req, request.namespace)
        key = to_primary(prefix, check_key(request.key, root=True))
        suffix = request.suffix
        after: str | None = None
        if request.after is not None:
            after = to_primary(prefix, check_key(request.after, root=True))
        while not req.done:
            page = list(islice(self.store.walk(key, suffix, after=after), WALK_BATCH))
            if page:
                entries = [[k if prefix == ROOT else from_primary(prefix, k), v] for k, v in page]
                req.respond({"entries": entries})
            if len(page) < WALK_BATCH:
                break
            after = page[-1][0]
            await req.drained()
            await asyncio.sleep(0)
        req.end()

    # --- watches ---------------------------------------------------------------------------

    @method("watch", guest=True)
    def watch(self, req: Request) -> None:
        request = decode(req.topic, req.payload, WatchRequest)
        _require_streaming(req)
        namespace = request.namespace or PRIMARY
        prefix = self._resolve(req, request.namespace)
        key = self._key(req, prefix, check_key(request.key, root=True))
        append = request.append
        waitcreate = request.waitcreate
        watch = _Watch(req, key, namespace, append)
        if watch.sender in self._by_sender:
            raise KVSError(errno.EEXIST, f"kvs.watch: matchtag {req.matchtag} is already watching")
        try:
            if append:
                self.store.chunks(key, -1, 0)  # the errors (it is sent by _catch_up)
            else:
                watch.value = self.store.get(key)
        except KVSError as exc:
            if exc.errnum != errno.ENOENT or not waitcreate:
                raise
        else:
            watch.started = True
            if not append:
                req.respond({"value": watch.value})
        self._watches.setdefault(key, []).append(watch)
        self._by_sender[watch.sender] = watch
        if namespace != PRIMARY:
            self._by_namespace.setdefault(namespace, {})[watch.sender] = watch
        watch.gone = partial(self._forget, watch)
        req.on_disconnect(watch.gone)
        if watch.started and append and self._read_on(watch):
            self._fall_behind(watch)  # the rest, in pieces as the requester reads

    def _fall_behind(self, watch: _Watch) -> None:
        """Send an append watch's value from the store from now on, until it catches up."""
        watch.behind = True
        task = self.broker.loop.create_task(self._catch_up(watch))
        self._catching_up.add(task)
        task.add_done_callback(self._catching_up.discard)

    async def _catch_up(self, watch: _Watch) -> None:
        """Send what an append watch has not, a piece at a time as its requester drains;
        once nothing is left, it follows the commits again."""
        more = True
        while more:
            await watch.req.drained()
            await asyncio.sleep(0)  # what was sent reaches the requester's buffer first
            if self._by_sender.get(watch.sender) is not watch:
                return
            try:
                more = self._read_on(watch)
            except KVSError as exc:
                self._end(watch, exc.errnum, exc.errstr)
                return
        watch.behind = False
        if watch.ending:
            self._end(watch, errno.ENODATA)

    def _read_on(self, watch: _Watch) -> bool:
        """Send the next piece of an append watch's value that it has not sent; True when
        a whole piece was read (more may follow)."""
        while rows := self.store.chunks(watch.key, watch.after, VALUE_PIECE):
            text = "".join([data for _, data in rows])
            skip = watch.sent - watch.before
            # only the value's last chunk grows: the chunks before it are passed for good
            last = rows if self.store.chunks(watch.key, rows[-1][0], 1) else rows[:-1]
            for seq, data in last:
                watch.after = seq
                watch.before += len(data)
            if len(text) > skip:
                watch.req.respond({"value": text[skip:]})
                watch.sent += len(text) - skip
                return len(text) >= VALUE_PIECE
            if last is not rows:
                return False
        return False

    @method("watch-cancel", guest=True)
    def watch_cancel(self, req: Request) -> None:
        matchtag = decode(req.topic, req.payload, WatchCancelRequest).matchtag
        watch = self._by_sender.get((_sender(req), matchtag))
        if watch is not None and watch.behind:
            watch.ending = True  # what was committed before the cancel is sent first
        elif watch is not None:
            self._end(watch, errno.ENODATA)
        req.respond({})

    def _notify(self, changes: list[Change]) -> None:
        """Feed one commit's changes to the watches on the keys they touch."""
        for key, kind, data in changes:
            for watch in list(self._watches.get(key, ())):
                if kind == UNLINK:
                    self._end(watch, errno.ENOENT, f"key {quote(key)}: removed")
                    continue
                assert data is not None
                if watch.append:
                    if kind == PUT and watch.started:
                        self._end(
                            watch,
                            errno.EINVAL,
                            f"key {quote(key)}: value of key watched with append overwritten",
                        )
                        continue
                    watch.started = True
                    if watch.behind:
                        continue  # in the store, where the watch reads on from
                    if watch.req.paused:
                        self._fall_behind(watch)
                        continue
                    watch.req.respond({"value": data})
                    watch.sent += len(data)
                else:
                    watch.value = watch.value + data if kind == APPEND else data
                    if not watch.behind:
                        if watch.req.paused:
                            self._hold_latest(watch)
                        else:
                            watch.req.respond({"value": watch.value})
                watch.started = True

    def _hold_latest(self, watch: _Watch) -> None:
        """Keep a plain watch's value from now on, sending the latest once its requester
        drains: values committed meanwhile replace it."""
        watch.behind = True
        task = self.broker.loop.create_task(self._send_latest(watch))
        self._catching_up.add(task)
        task.add_done_callback(self._catching_up.discard)

    async def _send_latest(self, watch: _Watch) -> None:
        await watch.req.drained()
        await asyncio.sleep(0)  # what was sent reaches the requester's buffer first
        if self._by_sender.get(watch.sender) is not watch:
            return
        watch.behind = False
        watch.req.respond({"value": watch.value})
        if watch.ending:
            self._end(watch, errno.ENODATA)

    def _end(self, watch: _Watch, errnum: int, errstr: str | None = None) -> None:
        """End a watch stream with an error (ENODATA: a normal end)."""
        self._forget(watch)
        watch.req.forget_disconnect(watch.gone)
        watch.req.error(errnum, errstr)

    def _forget(self, watch: _Watch) -> None:
        """Drop a watch from the indexes (its requester hung up, or it ended)."""
        if self._by_sender.get(watch.sender) is watch:
            del self._by_sender[watch.sender]
        held = self._by_namespace.get(watch.namespace)
        if held is not None and held.get(watch.sender) is watch:
            del held[watch.sender]
            if not held:
                del self._by_namespace[watch.namespace]
        watches = self._watches.get(watch.key)
        if watches is not None and watch in watches:
            watches.remove(watch)
            if not watches:
                del self._watches[watch.key]

    def _namespace_gone(self, name: str) -> None:
        for watch in list(self._by_namespace.get(name, {}).values()):
            self._end(watch, errno.ENOTSUP, f"namespace {quote(name)}: removed")

    @method("dropcache")
    def dropcache(self, req: Request) -> None:
        """Free the store's page cache (flux-core's ``kvs.dropcache``: its cache of objects)."""
        _require_owner(req, None)
        self.store.dropcache()
        req.respond({})

    # --- namespaces ----------------------------------------------------------------------------

    @method("namespace-list")
    def namespace_list(self, req: Request) -> None:
        primary = {"name": PRIMARY, "owner": self.broker.owner, "prefix": ROOT}
        listed = [{"name": n, "owner": o, "prefix": p} for n, o, p in self.store.namespaces()]
        req.respond({"namespaces": [primary, *listed]})

    def _resolve(self, req: Request, namespace: str | None) -> str:
        """The key prefix of the request's namespace, once the requester may use it."""
        if namespace is None or namespace == PRIMARY:
            _require_owner(req, PRIMARY)
            return ROOT
        return self._namespace(req, namespace)

    def _namespace(self, req: Request, name: str) -> str:
        ns = self.store.namespace(name)
        if not req.owner and ns.owner != req.userid:
            raise KVSError(errno.EPERM, f"namespace {quote(name)}: permission denied")
        return ns.prefix


def _sender(req: Request) -> object:
    """Who sent ``req``: its connection; None for services inside the broker.

    Matchtags are unique per connection, and unique across the broker for
    in-broker requests, so (sender, matchtag) names one request.
    """
    route = req.sender
    return None if isinstance(route, LocalRoute) else route


def _setting(config: dict[str, Any], key: str, default: str, allowed: tuple[str, ...]) -> str:
    """A ``[kvs]`` setting, case as flux writes it ("WAL") or not."""
    value = config.get(key, default)
    if not isinstance(value, str) or value.lower() not in allowed:
        why = " (a failed commit is rolled back, which needs a journal)" * (value == "off")
        rule = f"must be one of {', '.join(allowed)}, got {quote(value)}{why}"
        raise ConfigError("kvs", key, rule)
    return value.lower()


def _require_owner(req: Request, namespace: str | None) -> None:
    if not req.owner:
        what = f"namespace {quote(namespace)}" if namespace else req.topic
        raise KVSError(errno.EPERM, f"{what}: permission denied")


def _is_symlink(op: Any) -> bool:
    return type(op) in _SEQUENCES and len(op) == 3 and op[0] == SYMLINK


def _check_reach(req: Request, prefix: str, key: str, what: str, *, write: bool) -> None:
    """A key reached through links stays where its requester may go: a guest in its
    namespace, and nobody onto the execution service's keys through a namespace."""
    if prefix == ROOT:
        return
    inside = key == prefix or key.startswith(prefix + ".")
    if not inside and not req.owner:
        raise KVSError(
            errno.EPERM, f"{what}: a symbolic link leads out of the namespace: permission denied"
        )
    if write and inside and from_primary(prefix, key).partition(".")[0] in EXEC_KEYS:
        raise KVSError(
            errno.EPERM,
            f"{what}: a symbolic link leads to the execution service's keys: permission denied",
        )


def _require_streaming(req: Request) -> None:
    if not req.streaming:
        raise KVSError(errno.EPROTO, f"{req.topic}: must be a streaming request")
