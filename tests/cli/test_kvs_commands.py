"""``pflux kvs`` (and ``flux kvs``) sub-commands beyond get/put/ls, against a live broker
running the kvs service: dir, unlink, mkdir, copy, move, dropcache, namespace, eventlog
append and wait-event, and flux-core's messages when run as flux."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux import fluxshim
from pflux.cli import base, main
from support.instance import environ
from support.kvs_broker import kvs_broker


@pytest.fixture(scope="module")
def uri() -> Iterator[str]:
    state_dir = Path(tempfile.mkdtemp(prefix="pflux-kvsc-"))  # short: it holds a Unix socket
    try:
        with kvs_broker(state_dir) as (_, uri):
            yield uri
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def _env(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PFLUX_URI", uri)
    for name in ("COLUMNS", "PFLUX_KVS_NAMESPACE", "FLUX_KVS_NAMESPACE", "FLUX_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(base, "PROG", "pflux")  # put back after a test run as flux


def kvs(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["kvs", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def flux_kvs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[int, str, str]:
    """``flux kvs ARGS``: the command as the flux command runs it."""
    monkeypatch.setenv("PFLUX_AS_FLUX", "1")
    return kvs(capsys, *args)


def test_dir_prints_keys_and_values_as_flux_does(capsys: pytest.CaptureFixture[str]) -> None:
    kvs(capsys, "put", "d1.a=1", "d1.sub.b=two", "d1.long=" + "x" * 100, "d1.nl=one\ntwo")
    kvs(capsys, "mkdir", "d1.empty")
    assert kvs(capsys, "dir", "d1") == (
        0,
        "d1.a = 1\nd1.empty.\n"
        f"d1.long = {'x' * 67}...\n"  # cut to 80 columns off a terminal
        "d1.nl = one...\nd1.sub.\n",
        "",
    )
    assert kvs(capsys, "dir", "-R", "-w", "0", "d1")[1] == (
        f"d1.a = 1\nd1.empty.\nd1.long = {'x' * 100}\nd1.nl = one\ntwo\nd1.sub.b = two\n"
    )
    assert kvs(capsys, "dir", "-R", "-d", "d1")[1] == "d1.a\nd1.empty.\nd1.long\nd1.nl\nd1.sub.b\n"
    assert kvs(capsys, "dir", "-w", "12", "d1.sub")[1] == "d1.sub.b ...\n"
    rc, _, err = kvs(capsys, "dir", "d1.a")
    assert (rc, err) == (1, 'pflux-kvs: ERROR: key "d1.a": not a directory\n')


def test_unlink_checks_every_key_first_then_removes_them_in_one_commit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kvs(capsys, "put", "u1.v=1", "u1.w=2", "u1.d.x=3")
    rc, _, err = kvs(capsys, "unlink", "u1.v", "u1.d")
    assert (rc, err) == (1, "pflux-kvs: ERROR: cannot unlink 'u1.d': Directory not empty\n")
    assert kvs(capsys, "get", "u1.v")[1] == "1\n"  # nothing was removed
    rc, _, err = kvs(capsys, "unlink", "u1.nope")
    assert (rc, err) == (
        1,
        "pflux-kvs: ERROR: cannot unlink 'u1.nope': No such file or directory\n",
    )
    assert kvs(capsys, "unlink", "-f", "u1.nope", "u1.v") == (0, "", "")
    assert kvs(capsys, "unlink", "-R", "u1.d") == (0, "", "")
    assert kvs(capsys, "ls", "u1") == (0, "w\n", "")
    kvs(capsys, "mkdir", "u1.e")
    assert kvs(capsys, "unlink", "u1.e") == (0, "", "")  # an empty directory needs no -R


def test_mkdir_makes_empty_directories_replacing_what_is_there(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kvs(capsys, "put", "m1.v=1")
    assert kvs(capsys, "mkdir", "m1.v", "m1.new.deep") == (0, "", "")
    assert (
        kvs(capsys, "ls", "-F", "-R", "m1")[1]
        == "m1:\nnew.   v.\n\nm1.new:\ndeep.\n\nm1.new.deep:\n\nm1.v:\n"
    )


def test_copy_and_move_values_and_directories(capsys: pytest.CaptureFixture[str]) -> None:
    kvs(capsys, "put", "c1.v=value", "c1.d.x=1", "c1.d.s.y=2")
    assert kvs(capsys, "copy", "c1.v", "c1.v2") == (0, "", "")
    assert kvs(capsys, "copy", "c1.d", "c1.e") == (0, "", "")
    assert kvs(capsys, "get", "c1.v2", "c1.e.x", "c1.e.s.y")[1] == "value\n1\n2\n"
    assert kvs(capsys, "move", "c1.d", "c1.v") == (0, "", "")  # replaces the value
    assert kvs(capsys, "ls", "-F", "c1")[1] == "e.    v.    v2\n"
    assert kvs(capsys, "get", "c1.v.s.y")[1] == "2\n"
    rc, _, err = kvs(capsys, "copy", "c1.nope", "c1.x")
    assert (rc, err) == (1, "pflux-kvs: ERROR: flux_kvs_copy: No such file or directory\n")


def test_namespaces_created_listed_used_and_removed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert kvs(capsys, "namespace", "create", "ns-a", "ns.b") == (0, "", "")
    rc, out, _ = kvs(capsys, "namespace", "list")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "NAMESPACE                                 OWNER      FLAGS"
    assert lines[1].split() == ["primary", lines[1].split()[1], "0x00000000"]
    assert any(line.startswith("ns-a                                 ") for line in lines)
    assert kvs(capsys, "put", "-N", "ns.b", "k=in b") == (0, "", "")
    assert kvs(capsys, "get", "--namespace", "ns.b", "k") == (0, "in b\n", "")
    assert kvs(capsys, "get", "ns.ns%2Eb.k") == (0, "in b\n", "")  # where it is kept
    assert kvs(capsys, "copy", "-S", "ns.b", "-D", "ns-a", "k", "copied")[0] == 0
    # no -D: the destination is the default namespace, as in flux
    assert kvs(capsys, "move", "-S", "ns-a", "copied", "r.moved")[0] == 0
    assert kvs(capsys, "get", "r.moved")[1] == "in b\n"
    assert kvs(capsys, "get", "-N", "ns-a", "copied")[0] == 1
    rc, _, err = kvs(capsys, "namespace", "create", "ns-a")
    assert (rc, err) == (
        1,
        'pflux-kvs: ERROR: ns-a: kvs.namespace-create: namespace "ns-a": already exists\n',
    )
    rc, _, err = kvs(capsys, "namespace", "create", "-o", "me", "ns-c")
    assert (rc, err) == (1, "pflux-kvs: ERROR: --owner requires an unsigned integer argument\n")
    assert kvs(capsys, "namespace", "remove", "ns-a", "ns.b") == (0, "", "")
    assert "ns-a" not in kvs(capsys, "namespace", "list")[1]
    assert kvs(capsys, "dropcache") == (0, "", "")
    assert kvs(capsys, "dropcache", "--all") == (0, "", "")


def test_get_raw_and_put_raw_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"from\nstdin")))
    assert kvs(capsys, "put", "-r", "-n", "r1.a=-", "r1.b=x") == (0, "", "")
    assert kvs(capsys, "get", "-r", "r1.a", "r1.b") == (0, "from\nstdinx", "")
    assert kvs(capsys, "get", "-r", "-l", "r1.b") == (0, "r1.b=x", "")
    assert kvs(capsys, "put", "r1.c=-") == (0, "", "")  # without -r, '-' is the value
    assert kvs(capsys, "get", "r1.c")[1] == "-\n"


def test_eventlog_append_and_wait_event(capsys: pytest.CaptureFixture[str]) -> None:
    assert kvs(capsys, "eventlog", "append", "-t", "10.5", "e1.log", "start") == (0, "", "")
    assert kvs(capsys, "eventlog", "append", "-t", "11", "e1.log", "step", '{"n":', "1}")[0] == 0
    assert kvs(capsys, "eventlog", "get", "-u", "e1.log")[1] == (
        '{"timestamp":10.5,"name":"start"}\n{"timestamp":11.0,"name":"step","context":{"n":1}}\n'
    )
    rc, out, _ = kvs(capsys, "eventlog", "wait-event", "-v", "-u", "e1.log", "step")
    assert rc == 0
    assert out.splitlines()[1] == '{"timestamp":11.0,"name":"step","context":{"n":1}}'
    assert kvs(capsys, "eventlog", "wait-event", "-q", "e1.log", "start") == (0, "", "")
    rc, _, err = kvs(capsys, "eventlog", "wait-event", "-t", "0.2", "e1.log", "never")
    assert (rc, err) == (1, "pflux-kvs: ERROR: wait-event timeout on event 'never'\n")
    rc, _, err = kvs(capsys, "eventlog", "wait-event", "e1.nope", "start")
    assert (rc, err) == (1, "pflux-kvs: ERROR: eventlog path e1.nope not found\n")
    rc, _, err = kvs(capsys, "eventlog", "append", "e1.log", "bad", "{not json")
    assert rc == 1
    assert err.startswith("pflux-kvs: ERROR: eventlog append: context: not JSON")


def test_as_flux_the_messages_are_flux_kvss(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    kvs(capsys, "put", "f1.v=1", "f1.d.x=2")
    assert flux_kvs(capsys, monkeypatch, "get", "f1.nope") == (
        1,
        "",
        "flux-kvs: f1.nope: No such file or directory\n",
    )
    assert flux_kvs(capsys, monkeypatch, "get", "f1.d")[2] == "flux-kvs: f1.d: Is a directory\n"
    assert flux_kvs(capsys, monkeypatch, "dir", "f1.v")[2] == "flux-kvs: f1.v: Not a directory\n"
    rc, out, err = flux_kvs(capsys, monkeypatch, "ls", "f1.nope", "f1.v.", "f1.d")
    assert (rc, out) == (1, "x\n")
    assert err == "f1.nope: No such file or directory\nf1.v: Not a directory\n"
    assert flux_kvs(capsys, monkeypatch, "unlink", "f1.d") == (
        1,
        "",
        "flux-kvs: cannot unlink 'f1.d': Directory not empty\n",
    )
    assert flux_kvs(capsys, monkeypatch, "put", "f1.novalue")[2] == (
        "flux-kvs: put: you must specify a value as key=value\n"
    )
    kvs(capsys, "eventlog", "append", "-t", "12", "f1.log", "go", '{"a":"b"}')
    assert flux_kvs(capsys, monkeypatch, "eventlog", "get", "f1.log")[1] == (
        '12.000000 go {"a":"b"}\n'
    )


class Recorder:
    """A stdout that tells another thread when something has been written."""

    def __init__(self) -> None:
        self.data: list[str] = []
        self.written = threading.Event()

    def write(self, text: str) -> int:
        self.data.append(text)
        self.written.set()
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered."""

    def isatty(self) -> bool:
        return False


def in_thread(
    monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[threading.Thread, Recorder, list[int]]:
    """``pflux kvs ARGS`` running in a thread, its output recorded."""
    out = Recorder()
    done: list[int] = []
    monkeypatch.setattr(sys, "stdout", out)
    thread = threading.Thread(target=lambda: done.append(main(["kvs", *args])))
    thread.start()
    return thread, out, done


def test_get_uniq_shows_only_changed_values(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    kvs(capsys, "put", "g1.k=first")
    thread, out, done = in_thread(monkeypatch, "get", "-w", "-u", "-c", "2", "g1.k")
    assert out.written.wait(timeout=30)  # the watch is in place once the first value is out
    kvs(capsys, "put", "g1.k=first")  # the same value: not shown
    kvs(capsys, "put", "g1.k=second")
    thread.join(timeout=30)
    assert done == [0]
    assert "".join(out.data) == "first\nsecond\n"


def test_eventlog_wait_event_waitcreate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    thread, out, done = in_thread(monkeypatch, "eventlog", "wait-event", "-W", "-u", "w1.log", "b")
    kvs(capsys, "eventlog", "append", "-t", "1", "w1.log", "a")
    kvs(capsys, "eventlog", "append", "-t", "2", "w1.log", "b")
    thread.join(timeout=30)
    assert done == [0]
    assert "".join(out.data) == '{"timestamp":2.0,"name":"b"}\n'


def test_every_writing_command_takes_a_namespace(capsys: pytest.CaptureFixture[str]) -> None:
    assert kvs(capsys, "namespace", "create", "ns-w")[0] == 0
    assert kvs(capsys, "put", "-N", "ns-w", "a.v=1")[0] == 0
    assert kvs(capsys, "mkdir", "-N", "ns-w", "b")[0] == 0
    assert kvs(capsys, "dir", "-N", "ns-w", "-R") == (0, "a.v = 1\nb.\n", "")
    assert kvs(capsys, "unlink", "-N", "ns-w", "b") == (0, "", "")
    assert kvs(capsys, "eventlog", "append", "-N", "ns-w", "-t", "3", "log", "e")[0] == 0
    assert kvs(capsys, "eventlog", "wait-event", "-N", "ns-w", "-u", "log", "e") == (
        0,
        '{"timestamp":3.0,"name":"e"}\n',
        "",
    )
    kvs(capsys, "put", "nw.src=x")
    assert kvs(capsys, "move", "-D", "ns-w", "nw.src", "from-primary")[0] == 0
    assert kvs(capsys, "ls", "-N", "ns-w") == (0, "a               from-primary    log\n", "")
    assert kvs(capsys, "get", "nw.src")[0] == 1
    assert kvs(capsys, "get", "-N", "ns-w", "from-primary")[1] == "x\n"


def test_the_flux_command_runs_kvs_as_flux_kvs(uri: str) -> None:
    """The shim's ``flux`` itself: a tool's ``flux kvs`` calls, FLUX_KVS_NAMESPACE honoured."""
    flux = os.path.join(fluxshim.BIN, "flux")

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        environment = environ(PATH="/usr/bin:/bin", PFLUX_PYTHON=sys.executable, FLUX_URI=uri)
        return subprocess.run(
            [flux, "kvs", *args],
            capture_output=True,
            text=True,
            env={**environment, **env},
            timeout=60,
            check=False,
        )

    assert run("namespace", "create", "tool-ns").returncode == 0
    assert run("put", "x.y=1", FLUX_KVS_NAMESPACE="tool-ns").returncode == 0
    got = run("get", "x.y", FLUX_KVS_NAMESPACE="tool-ns")
    assert (got.returncode, got.stdout) == (0, "1\n")
    missing = run("get", "x.y")
    assert (missing.returncode, missing.stderr) == (1, "flux-kvs: x.y: No such file or directory\n")


def test_links_made_read_listed_and_followed(capsys: pytest.CaptureFixture[str]) -> None:
    kvs(capsys, "put", "k1.t.x=1")
    assert kvs(capsys, "namespace", "create", "ns-l") == (0, "", "")
    kvs(capsys, "put", "-N", "ns-l", "y=in ns")
    assert kvs(capsys, "link", "k1.t", "k1.l") == (0, "", "")
    assert kvs(capsys, "link", "-T", "ns-l", "y", "k1.o") == (0, "", "")
    assert kvs(capsys, "get", "k1.l.x", "k1.o") == (0, "1\nin ns\n", "")
    assert kvs(capsys, "readlink", "k1.l", "k1.o") == (0, "k1.t\nns-l::y\n", "")
    assert kvs(capsys, "readlink", "-o", "k1.o")[1] == "ns-l\n"
    assert kvs(capsys, "readlink", "-k", "k1.o")[1] == "y\n"
    assert kvs(capsys, "ls", "-F", "k1") == (0, "l@   o@   t.\n", "")
    assert kvs(capsys, "dir", "k1") == (0, "k1.l -> k1.t\nk1.o -> ns-l::y\nk1.t.\n", "")
    kvs(capsys, "link", "-N", "ns-l", "y", "z")  # in the namespace: its own y
    assert kvs(capsys, "get", "-N", "ns-l", "z")[1] == "in ns\n"
    rc, _, err = kvs(capsys, "readlink", "k1.t")
    assert (rc, err) == (1, 'pflux-kvs: ERROR: key "k1.t": not a symbolic link\n')


def test_version_counts_commits_and_wait_returns_once_it_is_reached(
    capsys: pytest.CaptureFixture[str], uri: str
) -> None:
    from support.instance import PFLUX

    rc, out, _ = kvs(capsys, "version")
    assert rc == 0
    start = int(out)
    kvs(capsys, "put", "ver.a=1", "ver.b=2")  # one commit
    assert kvs(capsys, "version") == (0, f"{start + 1}\n", "")
    assert kvs(capsys, "wait", str(start + 1)) == (0, "", "")
    waiter = subprocess.Popen(
        [str(PFLUX), "kvs", "wait", str(start + 3)], env=environ(PFLUX_URI=uri)
    )
    try:
        kvs(capsys, "put", "ver.a=3")
        assert kvs(capsys, "wait", str(start + 2)) == (0, "", "")
        assert waiter.poll() is None  # its version is not reached yet
        kvs(capsys, "put", "ver.a=4")
        assert waiter.wait(timeout=60) == 0
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert kvs(capsys, "version", "-N", "nosuch")[0] == 1
    rc, _, err = kvs(capsys, "get", "-t", "ver.a")
    assert (rc, err) == (
        1,
        "pflux-kvs: ERROR: get: --treeobj: not supported: pflux's KVS stores values as rows,"
        " not RFC 11 tree objects (no blobrefs)\n",
    )


def test_the_version_is_kept_across_a_restart() -> None:
    from support.instance import ok

    state_dir = Path(tempfile.mkdtemp(prefix="pflux-kvsv-"))
    try:
        with kvs_broker(state_dir) as (_, uri):
            for value in range(10):
                ok(uri, "kvs", "put", f"k={value}")
            before = int(ok(uri, "kvs", "version"))
        with kvs_broker(state_dir) as (_, uri):  # it goes on counting (the start commits too)
            after = int(ok(uri, "kvs", "version"))
            assert after >= before
            ok(uri, "kvs", "put", "k=last")
            assert int(ok(uri, "kvs", "version")) == after + 1
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def test_eventlog_timeouts_are_durations_and_h_is_human_as_flux_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert kvs(capsys, "eventlog", "append", "-t", "10.5", "h1.log", "start", '{"n":1}')[0] == 0
    rc, _, err = kvs(capsys, "eventlog", "wait-event", "-t", "0.2s", "h1.log", "never")
    assert (rc, err) == (1, "pflux-kvs: ERROR: wait-event timeout on event 'never'\n")
    with pytest.raises(SystemExit):
        kvs(capsys, "eventlog", "wait-event", "-t", "soon", "h1.log", "never")
    assert 'invalid Flux standard duration "soon"' in capsys.readouterr().err
    plain = flux_kvs(capsys, monkeypatch, "eventlog", "get", "h1.log")
    assert plain == (0, '10.500000 start {"n":1}\n', "")
    for command in ("get", "wait-event"):
        args = [command, "-H", "h1.log"] + (["start"] if command == "wait-event" else [])
        rc, out, _ = flux_kvs(capsys, monkeypatch, "eventlog", *args)
        assert rc == 0
        assert out.startswith("["), out
        assert out.endswith("] start n=1\n"), out
