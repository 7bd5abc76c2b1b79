"""An instance: a state directory, a broker, its services, and an optional initial program.

The state directory holds the socket (``local``), the KVS database and the log.
Without ``--state-dir`` a temporary one is made and removed at exit; with one
that already holds an instance's data, the services restart from it. The socket
may be elsewhere (``pflux start -S local-uri``: the system instance's is in
/run/pflux, which others may enter), in a directory the instance makes 0755 or
finds to be its own, writable by no one else. Under systemd (``NOTIFY_SOCKET``)
the instance says when it is ready and when it stops (``pflux.broker.sdnotify``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import importlib
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pflux import __version__, fluxshim
from pflux.broker import access, bootstrap, private, startlog
from pflux.broker.attrset import AttrService
from pflux.broker.boot import Boot
from pflux.broker.config import check_known
from pflux.broker.connector import Connection, Provider, serve
from pflux.broker.event import EventService
from pflux.broker.heap import release_large_buffers
from pflux.broker.logbuf import LogRing, LogService
from pflux.broker.nodeinfo import hello
from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.sdnotify import Notifier
from pflux.broker.testsize import RankProcesses, Tbon, boot_to_json, test_size_boots
from pflux.errors import PfluxError, RPCError
from pflux.protocol.broker import ServiceAddRequest, ServiceRemoveRequest
from pflux.protocol.decode import decode
from pflux.protocol.uri import uri_for
from pflux.spec import hostlist
from pflux.spec.idset import IdSet

if TYPE_CHECKING:
    from pflux.broker.overlay import Overlay

log = logging.getLogger("pflux.broker")

# Loaded in this order, stopped in reverse: each service may call those before it.
SERVICES: tuple[str, ...] = (
    "pflux.kvs.service:KVSService",
    "pflux.manager.service:JobManager",
    "pflux.ingest.service:IngestService",
    "pflux.sched.service:Scheduler",
    "pflux.exec.service:ExecService",
    "pflux.info.service:JobInfoService",
    "pflux.rexec.service:RexecService",
)

# Loaded last when the configuration has [simulator]: it overrides job-exec (RFC 32).
SIMULATOR = "pflux.sim.service:Simulator"

# Services that run in processes of their own (see broker/module.py): job-list does
# as much work per job as the job manager, and in its own process it uses the second
# core. They start before the broker's services, so that what they prepare alone
# (job-list's cache) overlaps the job manager's replay; each is linked to the broker
# by a socket pair, whose end the broker serves once its services have started.
MODULES: dict[str, str] = {"job-list": "pflux.joblist:JobList"}

# The garbage collector's defaults (700 allocations per young collection) make a
# busy broker spend a fifth of its time collecting, mostly rescanning the
# long-lived jobs it holds. pflux makes few reference cycles: collect rarely, and
# never rescan what exists once start-up (a restart's replay) is done.
GC_THRESHOLDS = (100_000, 50, 100)


def tune_gc() -> None:
    """Collect young objects rarely (call at start-up)."""
    gc.set_threshold(*GC_THRESHOLDS)


def freeze_gc() -> None:
    """Exempt everything alive now (the replayed jobs, the code) from future collections."""
    gc.collect()
    gc.freeze()


MODULE_START_TIMEOUT = 60.0

# At shutdown: the note of the exception each running job gets, and how long the
# instance waits for them to end (their shells' SIGTERM, then SIGKILL, takes less)
SHUTDOWN_NOTE = "instance shutdown"
CLEANUP_TIMEOUT = 60.0
RUN_STATE = 0x10  # RFC 21's RUN bit (job-manager.raiseall's states mask)

# What an instance's initial program does not inherit (flux-core's broker's list): what
# a job's tasks have of the instance running the job, and of PMI and other managers.
# In a job, FLUX_ENCLOSING_ID names the job instead.
NOT_INHERITED = frozenset(
    (
        "FLUX_JOB_ID",
        "FLUX_ENCLOSING_ID",
        "FLUX_JOB_SIZE",
        "FLUX_JOB_NNODES",
        "FLUX_JOB_TMPDIR",
        "FLUX_JOB_ID_PATH",
        "FLUX_TASK_RANK",
        "FLUX_TASK_LOCAL_ID",
        "FLUX_KVS_NAMESPACE",
        "PFLUX_KVS_NAMESPACE",
        "FLUX_PROXY_REMOTE",
        "FLUX_PMI_LIBRARY_PATH",
        "I_MPI_PMI_LIBRARY",
        "NOTIFY_SOCKET",
    )
)
NOT_INHERITED_PREFIXES = ("PMI_", "PMIX_", "SLURM_", "PALS_")

# what every rank's broker says as rank 0 does (the rest are its own)
SHARED_ATTRS = frozenset(
    (
        "instance-owner",
        "security.owner",
        "version",
        "hostlist",
        "instance-level",
        "jobid-path",
        "jobid",
        "parent-uri",
        "tbon.fanout",
        "tbon.heartbeat",
        "tbon.timeout",
        "broker.quorum-timeout",
    )
)

SOCKET_NAME = "local"
PROBE_TIMEOUT = 5.0  # seconds: whether an instance already serves at a socket path
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL


class ConfigService(Service):
    """The instance's configuration as loaded (``config.get``), as flux-core's broker
    serves it: tools read tables such as ``queues`` from it."""

    name = "config"

    @method("get", guest=True)
    def get(self, req: Request) -> None:
        req.respond(self.broker.config)


class ModuleService(Service):
    """``module.list``: what pflux runs where flux-core loads broker modules: the broker's
    services, in the order loaded, then the service processes (job-list)."""

    name = "module"

    def __init__(self, broker: Broker, processes: Mapping[str, str] | None = None) -> None:
        super().__init__(broker)
        self.processes = dict(processes or {})  # name -> path

    @method("list")
    def list(self, req: Request) -> None:
        mods = [
            {"name": name, "path": _path(service), "status": "R", "process": False}
            for name, service in self.broker.services.items()
        ]
        for name, path in self.processes.items():
            status = "R" if name in self.broker.remote else "I"  # restarting
            mods.append({"name": name, "path": path, "status": status, "process": True})
        req.respond({"mods": mods})


def _path(service: Service) -> str:
    cls = type(service)
    return f"{cls.__module__}:{cls.__qualname__}"


class BrokerBasics(Service):
    """What every broker answers of itself, whatever its rank: ping, attributes."""

    name = "broker"

    @method("ping", guest=True)
    def ping(self, req: Request) -> None:
        req.respond(self.broker.pong(req))

    @method("attrs", guest=True)
    def attrs(self, req: Request) -> None:
        req.respond({"attrs": self.broker.attrs})


class BrokerService(BrokerBasics):
    """Rank 0's broker methods: those of every broker, shutdown, service-add and -remove.

    A client may provide a service of its own (flux's ``service_register``), never
    one the instance provides: a service of the broker's, a name a broker method
    is registered under, or a module process's (which may add it again after a
    restart, over its own link)."""

    def __init__(self, broker: Broker, stop: asyncio.Event) -> None:
        super().__init__(broker)
        self._stop = stop
        self.added: dict[str, asyncio.Event] = {}  # services awaited from module processes

    @method("shutdown")
    def shutdown(self, req: Request) -> None:
        req.respond({})
        self._stop.set()

    @method("service-add")
    def service_add(self, req: Request) -> None:
        """A process connected to this broker provides ``service`` from now on."""
        service = decode(req.topic, req.payload, ServiceAddRequest).service
        if not isinstance(req.sender, Connection) or not req.owner:
            raise RPCError(errno.EPERM, "service-add: only the instance owner's processes")
        if not service or "." in service:
            raise RPCError(errno.EINVAL, f"service-add: service must be a name, got {service!r}")
        if service in self.broker.services or service in self.broker.remote:
            raise RPCError(errno.EEXIST, f"service-add: {service} is already provided")
        conn = req.sender
        if not conn.module and self._reserved(service):
            raise RPCError(errno.EEXIST, f"service-add: {service} is the instance's own")
        if conn.provider is None:
            conn.provider = Provider(self.broker, conn)
        conn.provider.add(service)
        req.respond({})
        added = self.added.get(service)
        if added is not None:
            added.set()

    @method("overlay-status", guest=True)
    def overlay_status(self, req: Request) -> None:
        """Each rank's state as rank 0 knows it, up, lost or offline (never up), and
        since when (``flux overlay status``)."""
        broker = self.broker
        never = ("offline", float(broker.attrs.get("broker.starttime", 0.0)))
        ranks = []
        for rank in range(broker.size):
            state, since = broker.rank_states.get(rank, never)
            ranks.append({"rank": rank, "state": state, "since": since})
        req.respond({"size": broker.size, "ranks": ranks})

    @method("service-remove")
    def service_remove(self, req: Request) -> None:
        """The connection that asked no longer provides ``service``."""
        service = decode(req.topic, req.payload, ServiceRemoveRequest).service
        conn = req.sender
        provider = conn.provider if isinstance(conn, Connection) else None
        if provider is None or service not in provider.services:
            raise RPCError(errno.ENOENT, f"service-remove: {service} is not provided by you")
        provider.remove(service)
        req.respond({})

    def _reserved(self, service: str) -> bool:
        prefix = service + "."
        return service in self.added or any(t.startswith(prefix) for t in self.broker.topics())


class Instance:
    """Runs one instance until shutdown, SIGTERM/SIGINT, or the initial program's exit."""

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        config: dict[str, Any] | None = None,
        services: Sequence[str] = SERVICES,
        modules: dict[str, str] | None = None,
        fresh: bool = False,
        attrs: dict[str, str] | None = None,
        test_size: int = 1,
        test_hosts: Sequence[str] | None = None,
        tbon: Tbon | None = None,
        boot: Boot | None = None,
        socket_path: Path | None = None,
        wrap: Sequence[str] = (),
    ) -> None:
        """``fresh``: the state directory's KVS database was lost; start with an empty one.
        ``attrs``: attributes to set or override (a nested instance's ``jobid``,
        ``parent-uri``, ``instance-level``, ...). ``test_size``: this many brokers on this
        machine (``pflux.broker.testsize``), on hosts ``test_hosts`` (default: this one),
        with the tree's settings ``tbon``, each rank's broker run under ``wrap`` (flux
        start's ``--wrap``). ``socket_path``: where clients connect (default: ``local``
        in the state directory)."""
        self.wrap = tuple(wrap)
        self._temporary = state_dir is None
        self._fresh = fresh
        self.boot = boot  # rank 0 of brokers started elsewhere (pflux.broker.bootstrap)
        self.test_size = boot.size if boot is not None else test_size
        self.hosts = (
            boot.hostnames
            if boot is not None
            else tuple(test_hosts or [socket.gethostname()] * test_size)
        )
        self.tbon = tbon or Tbon()
        self.overlay: Overlay | None = None
        self._ranks: RankProcesses | None = None
        self._rundir: Path | None = None  # the ranks' endpoints and directories
        self.state_dir = Path(tempfile.mkdtemp(prefix="pflux-")) if state_dir is None else state_dir
        self.config = config or {}
        self._extra_attrs = attrs or {}
        self._shim: fluxshim.ShimEnv | None = None
        simulating = "simulator" in self.config
        self.service_paths = (*services, SIMULATOR) if simulating else tuple(services)
        self.module_paths = MODULES if modules is None else modules
        self._modules: list[asyncio.subprocess.Process] = []
        self._links: list[socket.socket] | None = []  # module links to serve; None: served
        self._watchers: set[asyncio.Task[None]] = set()
        self._stopping = False
        self.fatal: str | None = None  # why the instance stopped, when something failed
        self.on_ready: Callable[[str], None] | None = None  # told the URI once clients may connect
        self._notifier = Notifier(None)  # systemd's socket, once run takes it
        self._socket_dir = None if socket_path is None else socket_path.absolute().parent
        self.socket_path = self.state_dir / SOCKET_NAME if socket_path is None else socket_path
        if len(os.fsencode(self.socket_path.absolute())) > MAX_SOCKET_PATH:
            where = "socket" if socket_path is not None else "state directory"
            raise PfluxError(
                f"{where} path is too long for a Unix socket: {self.socket_path.absolute()}"
                f" (must be under {MAX_SOCKET_PATH} bytes)"
            )
        self.uri = uri_for(str(self.socket_path))

    def _services(self) -> list[type[Service]]:
        """The services' classes, once the config is checked against the keys they read."""
        services = [service_class(path) for path in self.service_paths]
        declared: dict[str, set[str]] = {t: set(k) for t, k in fluxshim.CONFIG_KEYS.items()}
        declared["bootstrap"] = set(bootstrap.CONFIG_KEYS)  # read by pflux start (bootstrap.py)
        declared["access"] = set(access.CONFIG_KEYS)  # read by the connector
        for cls in services:
            for table, keys in cls.config_keys.items():
                declared.setdefault(table, set()).update(keys)
        check_known(self.config, declared)
        access.access(self.config)
        if self.test_size > 1 and self.boot is None:
            last = self._hello(self.test_size - 1)  # the first ranks have a core more
            if not last["cores"]:
                cores = len(IdSet.decode(hello(self.config, self.hosts[0])["cores"]))
                raise PfluxError(
                    f"--test-size={self.test_size}: each rank needs a core of its own,"
                    f" and the instance has {cores} (say more with --cores N)"
                )
        self._shim = fluxshim.shim_env() if fluxshim.enabled(self.config) else None
        return [ConfigService, *services]

    async def run(self, argv: Sequence[str] | None = None) -> int:
        """Serve; with ``argv``, run it inside the instance and return its exit code."""
        services = self._services()
        self._prepare()
        tune_gc()
        release_large_buffers()
        stop = asyncio.Event()
        broker, ring = self._broker(stop, services)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        rc = 0
        self.broker = broker
        added = await self._start_modules()
        try:
            await broker.start()
        except BaseException:
            self._stopping = True
            await self._stop_modules()
            logging.getLogger().removeHandler(ring)
            raise
        server: asyncio.AbstractServer | None = None
        try:
            await self._serve_links()
            await self._modules_added(added)
            if self.test_size > 1:
                await self._start_ranks()
            await startlog.post(broker, "start", {"version": __version__})
            # clients connect once every service is provided, the module processes' too
            server = await serve(broker, self.socket_path)
            self._ready()
            if argv:
                rc = await self._run_initial(argv, stop)
            else:
                await stop.wait()
        finally:
            if server is not None:
                await self._shut_down()
            self._stopping = True
            if server is not None:
                server.close()
            await self._stop_ranks()
            await self._stop_modules()
            await broker.stop()
            logging.getLogger().removeHandler(ring)
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            if self._temporary:
                shutil.rmtree(self.state_dir, ignore_errors=True)
        if self.fatal is not None:
            raise PfluxError(f"the instance stopped: {self.fatal}")
        return rc

    def _prepare(self) -> None:
        """The state directory; a socket's directory outside it, made 0755 or found to be
        a real directory of this user's that no one else may write in, with no instance
        serving there (else PfluxError); systemd's socket, told that the instance starts."""
        private.state_directory(self.state_dir)
        if self._socket_dir is not None and self._socket_dir != self.state_dir.absolute():
            from pflux.safefs.shared import socket_dir

            why = socket_dir(str(self._socket_dir))
            if why:
                raise PfluxError(f"local-uri={self.uri}: unsafe socket directory: {why}")
            if _answers(self.socket_path):  # another state directory's instance: keep it
                raise PfluxError(f"local-uri={self.uri}: another instance serves there")
        self._notifier = Notifier.from_environ()
        self._notifier.send("STATUS=starting")

    def _broker(self, stop: asyncio.Event, services: list[type[Service]]) -> tuple[Broker, LogRing]:
        """The broker with every service registered, and rank 0 up (the services watch
        ranks as they start)."""
        broker = Broker(os.getuid(), attrs=self._attrs(), config=self.config)
        broker.size = self.test_size
        broker.rank_changed(0, self._hello(0))
        broker.on_fatal = partial(self._on_fatal, stop)
        self.broker_service = BrokerService(broker, stop)
        broker.register(self.broker_service)
        ring = self._log_ring(broker)
        broker.register(EventService(broker))
        broker.register(ModuleService(broker, self.module_paths))
        for cls in services:
            broker.register(cls(broker))
        return broker, ring

    def _hello(self, rank: int) -> dict[str, Any]:
        """What rank ``rank`` offers (``nodeinfo.hello``): with ``--test-size``, its share
        of this machine."""
        share = (rank, self.test_size) if self.test_size > 1 and self.boot is None else None
        return hello(self.config, self.hosts[rank], share)

    async def _start_ranks(self) -> None:
        """Start ranks 1..N-1 and wait for their hellos (or ``quorum_timeout``)."""
        from pflux.broker.overlay import Overlay  # ZeroMQ: only an instance of ranks loads it

        tbon = self.tbon
        rundir = None
        if self.boot is None:
            self._rundir = rundir = Path(tempfile.mkdtemp(prefix="pflux-ranks-"))
            boots = test_size_boots(self.test_size, rundir, tbon.fanout, self.hosts)
        else:
            boots = [self.boot]
        overlay = Overlay(
            self.broker, boots[0], self._hello(0), heartbeat=tbon.heartbeat, timeout=tbon.timeout
        )
        await overlay.start()
        self.overlay = overlay
        self.broker.attrs["tbon.endpoint"] = overlay.endpoint
        if rundir is None:  # the other ranks were started by whoever started this one
            await self._quorum(overlay)
            return
        self._ranks = RankProcesses(
            lambda rank, status: overlay.lost(rank, f"its broker exited with status {status}"),
            wrap=self.wrap,
        )
        shared = {k: v for k, v in self.broker.attrs.items() if k in SHARED_ATTRS}
        handlers = [h for h in logging.getLogger().handlers if not isinstance(h, LogRing)]
        level = min((h.level for h in handlers), default=logging.WARNING)  # what -v says
        for rank in range(1, self.test_size):
            setup = {
                "boot": boot_to_json(boots[rank]),
                "rundir": str(rundir / f"rank{rank}"),
                "hello": self._hello(rank),
                "attrs": shared,
                "config": self.config,
                "heartbeat": tbon.heartbeat,
                "timeout": tbon.timeout,
                "level": level,
            }
            await self._ranks.spawn(rank, setup)
        await self._quorum(overlay)

    async def _quorum(self, overlay: Overlay) -> None:
        """Wait for every rank's hello, or ``broker.quorum-timeout``."""
        tbon = self.tbon
        missing = await overlay.wait_all_up(tbon.quorum_timeout)
        if missing:
            log.warning(
                "broker.quorum-timeout: %s not up after %ss; going on without %s",
                "ranks " + ",".join(map(str, missing))
                if len(missing) > 1
                else f"rank {missing[0]}",
                f"{tbon.quorum_timeout:g}",
                "them" if len(missing) > 1 else "it",
            )
        else:
            log.info("all %d ranks are up", self.test_size)

    async def _stop_ranks(self) -> None:
        """Tell the other ranks to stop, wait for them, close the overlay."""
        if self.overlay is not None:
            self.overlay.shutdown_tree()
        if self._ranks is not None:
            await self._ranks.stop()
            self._ranks = None
        if self.overlay is not None:
            await self.overlay.stop()
            self.overlay = None
        if self._rundir is not None:
            shutil.rmtree(self._rundir, ignore_errors=True)
            self._rundir = None

    def _ready(self) -> None:
        freeze_gc()
        log.info("instance ready at %s", self.uri)
        if self.on_ready is not None:
            self.on_ready(self.uri)
        self._notifier.send("READY=1", f"STATUS=serving at {self.uri}")

    @staticmethod
    def _log_ring(broker: Broker) -> LogRing:
        """Keep the broker process's log entries for ``log.dmesg`` (``pflux dmesg``)."""
        ring = LogRing()
        logging.getLogger().addHandler(ring)
        broker.register(LogService(broker, ring))
        broker.register(AttrService(broker, ring))
        return ring

    async def _shut_down(self) -> None:
        """Tell systemd the instance stops; unless it failed, stop as flux-core does."""
        self._notifier.send("STOPPING=1", f"STATUS=stopping: {self.fatal or 'shutdown'}")
        if self.fatal is None:
            await self._cleanup()

    async def _cleanup(self) -> None:
        """What flux-core's shutdown does first: stop the queue, cancel the running jobs
        (each gets an exception saying why, which a restart still shows), wait until
        none runs. Pending jobs stay for the next start."""
        log.info("shutdown started")
        if "job-manager" in self.broker.services:  # else an instance of a few services (tests)
            await self._cancel_running()
        log.info("stopping services")
        await startlog.post(self.broker, "finish", {})

    async def _cancel_running(self) -> None:
        call = self.broker.call
        try:
            stop = {"start": False, "reason": SHUTDOWN_NOTE, "nocheckpoint": True, "all": True}
            await call("job-manager.queue-start", stop)
            exception = {"type": "cancel", "severity": 0, "note": SHUTDOWN_NOTE}
            reply = await call("job-manager.raiseall", {**exception, "states": RUN_STATE})
            count = reply["count"]
            if count:
                log.info("canceled %d running job%s", count, "" if count == 1 else "s")
                await asyncio.wait_for(call("job-manager.idle", {}), CLEANUP_TIMEOUT)
                log.info("no job is running")
        except RPCError as exc:
            log.error("shutdown: %s", exc.errstr)
        except TimeoutError:
            log.error("shutdown: jobs still running after %.0fs; stopping", CLEANUP_TIMEOUT)

    def _on_fatal(self, stop: asyncio.Event, reason: str) -> None:
        """Stop, and end ``run`` with the first fatal reason, so that the exit status says so."""
        if self.fatal is None:
            self.fatal = reason
        stop.set()

    async def _start_modules(self) -> list[asyncio.Event]:
        """Start each module process; what is set once it provides its service."""
        added = []
        for name, path in self.module_paths.items():
            added.append(self.broker_service.added.setdefault(name, asyncio.Event()))
            await self._spawn(path)
        return added

    async def _modules_added(self, added: list[asyncio.Event]) -> None:
        """Wait until each module process provides its service."""
        if added:
            try:
                waits = asyncio.gather(*(event.wait() for event in added))
                await asyncio.wait_for(waits, MODULE_START_TIMEOUT)
            except TimeoutError:
                raise PfluxError(
                    f"a service process did not start in {MODULE_START_TIMEOUT:.0f}s"
                ) from None

    async def _serve_links(self) -> None:
        """Serve the links of the module processes started before the broker's services."""
        links, self._links = self._links or [], None
        for sock in links:
            await self._serve_link(sock)

    async def _serve_link(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        await loop.connect_accepted_socket(lambda: Connection(self.broker, module=True), sock)

    async def _spawn(self, path: str) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fd = theirs.fileno()
        argv = ("-m", "pflux.broker.module", str(fd), path, str(self.state_dir.absolute()))
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, *argv, pass_fds=(fd,), start_new_session=True
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        if self._links is None:
            await self._serve_link(ours)
        else:
            self._links.append(ours)  # requests wait in the socket until the broker serves
        self._modules.append(proc)
        task = asyncio.get_running_loop().create_task(self._watch(path, proc))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    async def _watch(self, path: str, proc: asyncio.subprocess.Process) -> None:
        """A module process that dies while the instance runs is logged and started again."""
        code = await proc.wait()
        if not self._stopping:
            log.error("service process %s exited with %s; starting it again", path, code)
            self._modules.remove(proc)
            await self._spawn(path)

    async def _stop_modules(self) -> None:
        for sock in self._links or []:
            sock.close()
        self._links = []
        for proc in self._modules:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
        for proc in self._modules:
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        self._modules = []

    def initial_env(self) -> dict[str, str]:
        """The initial program's environment, as flux-core's broker makes it: this
        instance's URI, the job it runs in as FLUX_ENCLOSING_ID (a nested instance),
        none of that job's task variables (``NOT_INHERITED``), and the flux shim on
        the paths (unless turned off)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in NOT_INHERITED and not k.startswith(NOT_INHERITED_PREFIXES)
        }
        env["PFLUX_URI"] = env["FLUX_URI"] = self.uri
        if "jobid" in self._extra_attrs:
            env["FLUX_ENCLOSING_ID"] = self._extra_attrs["jobid"]
        if self._shim is not None:
            self._shim.apply(env)
        return env

    async def _run_initial(self, argv: Sequence[str], stop: asyncio.Event) -> int:
        env = self.initial_env()
        try:
            proc = await asyncio.create_subprocess_exec(*argv, env=env)
        except OSError as exc:
            log.error("%s: %s", argv[0], exc.strerror)
            return 127 if isinstance(exc, FileNotFoundError) else 126
        waiter = asyncio.ensure_future(proc.wait())
        stopper = asyncio.ensure_future(stop.wait())
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():
            proc.terminate()
            await waiter
        stopper.cancel()
        code = proc.returncode or 0
        return 128 - code if code < 0 else code

    def _attrs(self) -> dict[str, str]:
        return {
            "uri": self.uri,
            "state-dir": str(self.state_dir.absolute()),
            "state-dir-temporary": "1" if self._temporary else "0",  # removed at exit
            "state-dir-fresh": "1" if self._fresh else "0",  # an empty KVS replaces a lost one
            "instance-owner": str(os.getuid()),
            "hostname": self.hosts[0],
            "rank": "0",
            "size": str(self.test_size),
            **self.tbon.attrs(self.tbon.fanout if self.boot is None else self.boot.fanout),
            "pid": str(os.getpid()),
            # flux-core's names for what tools read
            "local-uri": self.uri,
            "broker.pid": str(os.getpid()),
            "broker.starttime": f"{time.time():.6f}",
            "security.owner": str(os.getuid()),
            "instance-level": "0",
            "hostlist": hostlist.encode(self.hosts),  # the brokers' hosts in rank order
            "version": __version__,
            "jobid-path": "/",  # the ids of the jobs this instance runs in, from the root
            **({} if self._temporary else {"statedir": str(self.state_dir.absolute())}),
            **self._extra_attrs,
        }


def _answers(path: Path) -> bool:
    """Whether something listens on the socket ``path`` (a socket left by a crash does not)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(PROBE_TIMEOUT)  # a full backlog is still an instance's
        try:
            probe.connect(str(path))
        except TimeoutError:
            return True
        except OSError:
            return False
    return True


def service_class(path: str) -> type[Service]:
    """The service class ``path`` (``module:Class``) names."""
    module, _, name = path.partition(":")
    cls: type[Service] = getattr(importlib.import_module(module), name)
    return cls
