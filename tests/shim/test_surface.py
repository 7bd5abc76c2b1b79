"""The whole surface pflux promises to flux-core 0.88's users: every module, name and
method of the ``flux`` package and every command a script written against flux is
said to run with, so that one going missing fails here."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from pflux.cli import main
from support.shim import flux_output

# module -> names it holds; "Class.method" for a method or property of a class
SURFACE: dict[str, tuple[str, ...]] = {
    # future_create: flux.future.FutureExt
    "flux": ("Flux", "constants", "core", "job", "kvs", "resource", "rpc"),
    "flux.core.handle": (
        "Flux.rpc",
        "Flux.attr_get",
        "Flux.attr_set",
        "Flux.attr_remove",
        "Flux.conf_get",
        "Flux.log",
        "Flux.event_subscribe",
        "Flux.event_unsubscribe",
        "Flux.event_send",
        "Flux.event_recv",
        "Flux.event_create",
        "Flux.service_register",
        "Flux.service_unregister",
        "Flux.msg_watcher_create",
        "Flux.timer_watcher_create",
        "Flux.fd_watcher_create",
        "Flux.signal_watcher_create",
        "Flux.prepare_watcher_create",
        "Flux.check_watcher_create",
        "Flux.idle_watcher_create",
        "Flux.reactor_run",
        "Flux.reactor_stop",
        "Flux.reactor_enter",
        "Flux.reactor_exit",
        "Flux.in_reactor",
        "Flux.set_exception",
        "Flux.raise_if_exception",
        "Flux.get_rank",
        "Flux.respond",
        "Flux.send",
        "Flux.recv",
    ),
    "flux.core.watchers": (
        "Watcher",
        "TimerWatcher.reset",
        "TimerWatcher.start",
        "TimerWatcher.stop",
        "FDWatcher",
        "SignalWatcher",
        "PrepareWatcher",
        "CheckWatcher",
        "IdleWatcher",
    ),
    "flux.rpc": ("RPC.get", "RPC.get_str", "RPC.then", "RPC.__enter__", "RPC.__exit__"),
    "flux.future": (
        "Future.get",
        "Future.then",
        "Future.wait_for",
        "Future.reset",
        "Future.is_ready",
        "Future.get_flux",
        "Future.set_flux",
        "Future.error_string",
        "Future.__enter__",
        "Future.__exit__",
        "WaitAllFuture.push",
        "FutureExt.fulfill",
        "FutureExt.fulfill_error",
    ),
    "flux.message": ("Message.decode", "Message.topic", "Message.payload", "MessageWatcher"),
    "flux.constants": (
        "FLUX_NODEID_ANY",
        "FLUX_MSGTYPE_REQUEST",
        "FLUX_RPC_STREAMING",
        "FLUX_REACTOR_ONCE",
        "FLUX_REACTOR_NOWAIT",
        "FLUX_ROLE_OWNER",
        "FLUX_KVS_WAITCREATE",
    ),
    "flux.kvs": (
        "get",
        "put",
        "put_mkdir",
        "put_unlink",
        "put_symlink",
        "exists",
        "isdir",
        "get_dir",
        "commit",
        "commit_async",
        "join",
        "get_key_direct",
        "namespace_create",
        "namespace_remove",
        "namespace_list",
        "kvs_watch_async",
        "KVSWatchFuture.get",
        "KVSWatchFuture.cancel",
        "KVSDir.key_at",
        "KVSDir.exists",
        "KVSDir.fill",
        "KVSDir.list_all",
        "KVSDir.files",
        "KVSDir.directories",
        "KVSDir.mkdir",
        "KVSDir.commit",
        "KVSDir.__getitem__",
        "KVSDir.__contains__",
        "KVSTxn.put",
        "KVSTxn.mkdir",
        "KVSTxn.unlink",
        "KVSTxn.symlink",
        "KVSTxn.commit",
        "KVSTxn.commit_async",
        "KVSTxn.clear",
        "walk",
    ),
    "flux.hostlist": ("Hostlist", "decode"),
    "flux.idset": ("IDset", "decode"),
    "flux.resource": (
        "ResourceSet",
        "ResourceSet.properties",
        "ResourceSet.expiration",
        "ResourceSet.starttime",
        "ResourceSet.copy_constraint",
        "ResourceSet.encode",
        "ResourceSet.nodelist",
        "resource_list",
        "resource_status",
        "ResourceStatus",
        "SchedResourceList",
        "ResourceJournalConsumer",
    ),
    "flux.resource.journal": ("ResourceJournalConsumer.poll", "ResourceJournalConsumer.start"),
    "flux.job": (
        "JobspecV1.from_submit",
        "JobspecV1.from_batch",
        "JobspecV1.from_alloc",
        "JobspecV1.from_command",
        "JobspecV1.apply_options",
        "validate_jobspec",
        "JobID",
        "submit",
        "submit_async",
        "wait",
        "event_wait",
        "event_watch",
        "event_watch_async",
        "JobException",
        "kill",
        "cancel",
        "job_raise",
        "result",
        "wait_async",
        "job_list",
        "job_list_id",
        "job_output",
        "output_watch",
        "output_watch_lines",
        "timeleft",
        "job_kvs_lookup",
        "JobKVSLookup",
        "BatchConfig",
        "FluxExecutor",
        "FluxExecutorFuture",
        "JobWatcher",
        "JournalConsumer",
        "JobInfo",
        "JobList",
    ),
    "flux.job.output": (
        "job_output",
        "output_watch_async",
        "output_watch_lines_async",
        "output_event_watch",
        "output_event_watch_async",
    ),
    "flux.job.watcher": ("JobWatcher.start", "JobWatcher.stop"),
    "flux.job.stats": ("JobStats.update", "JobStats.update_sync"),
    "flux.job.info": ("JobInfo", "StatsInfo"),
    "flux.job.executor": (
        "FluxExecutor.submit",
        "FluxExecutor.shutdown",
        "FluxExecutor.attach",
        "FluxExecutorFuture.jobid",
        "FluxExecutorFuture._get_jobid",
        "FluxExecutorFuture.add_jobid_callback",
        "FluxExecutorFuture.add_event_callback",
    ),
    "flux.util": ("Fileref", "parse_fsd", "fsd", "parse_datetime", "UtilConfig", "OutputFormat"),
    "flux.progress": ("Bottombar", "ProgressBar"),
    "flux.eventlog": ("EventLogFormatter",),
    "flux.queue": ("QueueList",),
    "flux.abc": (
        "JournalConsumerBase.process_response",
        "JournalConsumerBase.create_event",
        "JournalConsumerBase.is_empty_response",
        "JournalConsumerBase.request_payload",
        "JournalEventBase",
    ),
    "flux.constraint.parser": ("ConstraintParser", "ConstraintLexer"),
    "flux.subprocess": ("rexec_bg", "command_create", "wait", "kill", "list", "Subprocess"),
}

# every command the surface names, as argv before --help
COMMANDS = [
    "exec",
    "proxy",
    "ping",
    "overlay status",
    "module list",
    "config get",
    "logger",
    "event pub",
    "event sub",
    "startlog",
    "watch",
    "job purge",
    "job stats",
    "job timeleft",
    "job hostpids",
    "job taskmap",
    "job namespace",
    "job raiseall",
    "job killall",
    "queue list",
    "resource R",
    "resource eventlog",
    "resource reload",
    "kvs dir",
    "kvs unlink",
    "kvs mkdir",
    "kvs link",
    "kvs readlink",
    "kvs copy",
    "kvs move",
    "kvs namespace create",
    "kvs namespace remove",
    "kvs namespace list",
    "kvs put",
    "kvs get",
    "kvs eventlog get",
    "jobs",
    "help",
]

# command -> the options of flux's its help names
OPTIONS = {
    "kvs put": ("--namespace", "--raw", "--no-merge", "--append"),
    "kvs get": ("--watch", "--waitcreate", "--count", "--uniq"),
    "jobs": ("--stats", "--stats-only", "--color", "--include", "--recursive", "--level"),
}
# command -> flags of flux's it takes without naming them (flux's hidden aliases)
HIDDEN = {"jobs": ("--suppress-header",), "resource R": ("--state=up",)}


def test_every_module_and_name_is_there() -> None:
    out = flux_output(
        f"""
        import importlib, json
        missing = []
        for module, names in {SURFACE!r}.items():
            try:
                mod = importlib.import_module(module)
            except ImportError as e:
                missing.append(f"{{module}}: {{e}}")
                continue
            for name in names:
                obj = mod
                for part in name.split("."):
                    obj = getattr(obj, part, None)
                    if obj is None:
                        missing.append(f"{{module}}.{{name}}")
                        break
        print(json.dumps(missing))
        """,
        None,
    )
    assert json.loads(out) == []


def _help(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
    return rc, out.getvalue() + err.getvalue()


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_a_command(command: str) -> None:
    rc, text = _help([*command.split(), "--help"])
    assert rc == 0, text
    assert text.startswith("usage:"), text


@pytest.mark.parametrize("command", sorted(OPTIONS))
def test_the_commands_name_flux_options(command: str) -> None:
    rc, text = _help([*command.split(), "--help"])
    assert rc == 0, text
    assert [o for o in OPTIONS[command] if o not in text] == []


@pytest.mark.parametrize("command", sorted(HIDDEN))
def test_the_commands_take_flux_hidden_flags(command: str) -> None:
    # --help would end the parsing before an unknown flag is seen: the command runs, and
    # fails for want of an instance, not as a usage error
    for flag in HIDDEN[command]:
        rc, text = _help([*command.split(), flag, "--uri", "local:///nonexistent"])
        assert (rc, "cannot connect") == (1, text[text.find("cannot connect") :][:14]), text


def test_the_names_added_to_match_flux_behave_as_flux_s() -> None:
    out = flux_output(
        """
        import json
        import flux.job
        from flux.future import FutureExt
        from flux.job.info import StatsInfo
        from flux.resource import ResourceSet
        from flux.abc import JournalEventBase
        from flux.resource.journal import ResourceJournalEvent
        from flux.util import Fileref

        R = {"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0"}}],
             "properties": {"fast": "0", "big": "1"}, "starttime": 10, "expiration": 20}}
        rset = ResourceSet(R)
        times = [rset.starttime, rset.expiration]
        rset.expiration = 30.5
        try:
            rset.starttime = -1
        except ValueError as exc:
            bad = str(exc)
        f = FutureExt(lambda f: None)
        before = f.error_string()
        f.fulfill_error(2)
        stats = StatsInfo.__new__(StatsInfo)
        stats.pending, stats.running, stats.successful, stats.failed = 1, 2, 3, 0
        ends = JournalEventBase({})
        define = ResourceJournalEvent({"timestamp": 1.5, "name": "up", "context": {"idset": "0"}})
        print(json.dumps([
            json.dumps(Fileref({"a": 1}, 0o644)), json.dumps(Fileref("YQ==", encoding="base64")),
            ends.is_empty(), str(ends).endswith(" End of historical data stream"), str(define),
            rset.properties, times, rset.to_dict()["execution"]["expiration"], bad,
            before, f.error_string(), f"{stats:>19}",
            flux.job.validate_jobspec.__module__, flux.job.JobWatcher.__module__,
        ]))
        """,
        None,
    )
    assert json.loads(out) == [
        '{"mode": 33188, "data": {"a": 1}}',
        '{"mode": 33152, "data": "YQ==", "encoding": "base64"}',
        True,
        True,
        '1.50000 up {"idset":"0"}',
        "fast,big",
        [10.0, 20.0],
        30.5,
        "starttime must be a number of seconds, not negative: -1",
        None,
        "No such file or directory",
        "  PD:1 R:2 CD:3 F:0",
        "flux.job.Jobspec",
        "flux.job.watcher",
    ]


def test_resource_status_holds_housekeeping_ranks_as_flux_s() -> None:
    out = flux_output(
        """
        from flux.idset import IDset
        from flux.resource import ResourceStatus
        R = {"version": 1, "execution": {"R_lite": [{"rank": "0-3", "children": {"core": "0"}}]}}
        rstatus = {"R": R, "online": "0-3", "offline": "", "exclude": "", "drain": {}}
        status = ResourceStatus(rstatus, IDset("1"), IDset("2-3"))
        print(status.housekeeping, status["housekeeping"], status.allocated, status.avail)
        print(len(ResourceStatus().housekeeping))
        """,
        None,
    )
    assert out == "2-3 2-3 1 0-3\n0\n"
