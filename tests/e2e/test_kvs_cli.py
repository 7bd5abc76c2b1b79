"""``pflux kvs`` against a live broker running the kvs service in a child process."""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.cli import main
from pflux.client.handle import Handle
from pflux.spec.eventlog import Event, format_text
from support.kvs_broker import kvs_broker

EVENTS = [
    Event(1738774194.185372, "submit", {"userid": 1000, "urgency": 16, "flags": 0}),
    Event(1738774194.2, "validate"),
    Event(1738774195.5, "release", {"ranks": "all", "final": True}),
]


@pytest.fixture(scope="module")
def uri() -> Iterator[str]:
    state_dir = Path(tempfile.mkdtemp(prefix="pflux-kvs-"))  # short: it holds a Unix socket
    try:
        with kvs_broker(state_dir) as (_, uri):
            yield uri
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def _env(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PFLUX_URI", uri)
    monkeypatch.delenv("COLUMNS", raising=False)


def kvs(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["kvs", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_put_then_get(capsys: pytest.CaptureFixture[str]) -> None:
    assert kvs(capsys, "put", "t1.a=1", "t1.b=hello world", "t1.empty=") == (0, "", "")
    assert kvs(capsys, "get", "t1.a", "t1.b", "t1.empty") == (0, "1\nhello world\n", "")
    assert kvs(capsys, "get", "-l", "t1.a", "t1.empty") == (0, "t1.a=1\nt1.empty=\n", "")
    assert kvs(capsys, "put", "-A", "t1.a=2", "t1.a=3")[0] == 0
    assert kvs(capsys, "get", "t1.a")[1] == "123\n"


def test_errors_exit_1_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert kvs(capsys, "get", "t2.nope") == (1, "", 'pflux-kvs: ERROR: key "t2.nope": not found\n')
    rc, _, err = kvs(capsys, "put", "t2.novalue")
    assert (rc, err) == (1, "pflux-kvs: ERROR: put: you must specify a value as key=value\n")
    rc, _, err = kvs(capsys, "put", "t2.a b=1")
    assert rc == 1
    assert err == (
        'pflux-kvs: ERROR: kvs.commit: ops[0]: key "t2.a b": path component "a b" contains'
        " whitespace or a control character\n"
    )
    assert kvs(capsys, "put", "t2..x.=1")[0] == 0  # empty components dropped, as flux does
    assert kvs(capsys, "get", ".t2.x")[1] == "1\n"
    kvs(capsys, "put", "t2.d.x=1")
    rc, _, err = kvs(capsys, "get", "t2.d")
    assert (rc, err) == (1, 'pflux-kvs: ERROR: key "t2.d": is a directory\n')


def test_no_instance(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PFLUX_URI")
    rc, _, err = kvs(capsys, "get", "x")
    assert rc == 1
    assert err.startswith("pflux-kvs: ERROR: no pflux instance")


def test_ls_like_flux(capsys: pytest.CaptureFixture[str]) -> None:
    kvs(capsys, "put", "t3.dir.x=1", "t3.dir.sub.y=2", "t3.value=3", "t3.a-very-long-name=4")
    # columns as wide as the longest name plus 4, fitted to 80 columns off a terminal
    assert kvs(capsys, "ls", "t3") == (
        0,
        "a-very-long-name    dir                 value\n",
        "",
    )
    assert kvs(capsys, "ls", "-w", "40", "t3")[1] == "a-very-long-name    dir\nvalue\n"
    assert kvs(capsys, "ls", "-1", "-F", "t3")[1] == "a-very-long-name\ndir.\nvalue\n"
    assert kvs(capsys, "ls", "-R", "-1", "t3.dir")[1] == ("t3.dir:\nsub\nx\n\nt3.dir.sub:\ny\n")
    # a value is listed by its name; several keys get labels
    assert kvs(capsys, "ls", "-1", "t3.value", "t3.dir")[1] == "t3.value\n\nt3.dir:\nsub\nx\n"
    assert kvs(capsys, "ls", "-d", "-F", "t3.dir")[1] == "t3.dir.\n"
    rc, out, err = kvs(capsys, "ls", "t3.nope", "t3.dir.sub")
    assert (rc, out) == (1, "y\n")
    assert err == 'pflux-kvs: ERROR: key "t3.nope": not found\n'
    rc, _, err = kvs(capsys, "ls", "t3.value.")
    assert (rc, err) == (1, 'pflux-kvs: ERROR: key "t3.value": not a directory\n')


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


def commit_eventlog(uri: str, key: str, events: list[Event]) -> None:
    with Handle(uri) as h:
        h.call("kvs.commit", {"ops": [["append", key, e.to_line()] for e in events]})


def test_eventlog_get_text_and_raw(capsys: pytest.CaptureFixture[str], uri: str) -> None:
    commit_eventlog(uri, "t4.eventlog", EVENTS)
    rc, out, _ = kvs(capsys, "eventlog", "get", "t4.eventlog")
    assert rc == 0
    assert out == "".join(format_text(e) + "\n" for e in EVENTS)
    assert out.splitlines()[0] == "1738774194.185372 submit userid=1000 urgency=16 flags=0"
    raw = "".join(e.to_line() for e in EVENTS)
    assert kvs(capsys, "eventlog", "get", "-u", "t4.eventlog")[1] == raw
    assert kvs(capsys, "eventlog", "get", "--format=json", "t4.eventlog")[1] == raw
    kvs(capsys, "put", "t4.bad=not an eventlog\n")
    rc, _, err = kvs(capsys, "eventlog", "get", "t4.bad")
    assert rc == 1
    assert err.startswith("pflux-kvs: ERROR: line 1: not valid JSON")


def test_eventlog_watch_stops_after_count(capsys: pytest.CaptureFixture[str], uri: str) -> None:
    commit_eventlog(uri, "t5.eventlog", EVENTS[:1])
    done: list[int] = []
    follower = threading.Thread(
        target=lambda: done.append(main(["kvs", "eventlog", "get", "-w", "-c", "3", "t5.eventlog"]))
    )
    follower.start()
    commit_eventlog(uri, "t5.eventlog", EVENTS[1:])
    follower.join(timeout=30)
    assert done == [0]
    assert capsys.readouterr().out == "".join(format_text(e) + "\n" for e in EVENTS)


def test_get_waitcreate_and_watch(capsys: pytest.CaptureFixture[str], uri: str) -> None:
    done: list[int] = []
    waiter = threading.Thread(target=lambda: done.append(main(["kvs", "get", "-W", "t6.k"])))
    waiter.start()
    with Handle(uri) as h:
        h.call("kvs.commit", {"ops": [["put", "t6.k", "made"]]})
    waiter.join(timeout=30)
    assert done == [0]
    assert capsys.readouterr().out == "made\n"
    out = Recorder()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "stdout", out)
        follower = threading.Thread(
            target=lambda: done.append(main(["kvs", "get", "-w", "-A", "-c", "2", "t6.k"]))
        )
        follower.start()
        assert out.written.wait(timeout=30)  # the watch is in place once the first value is out
        with Handle(uri) as h:
            h.call("kvs.commit", {"ops": [["append", "t6.k", "+more"]]})
        follower.join(timeout=30)
    assert done == [0, 0]
    assert "".join(out.data) == "made\n+more\n"


def test_namespace_option(capsys: pytest.CaptureFixture[str], uri: str) -> None:
    with Handle(uri) as h:
        h.call("kvs.namespace-create", {"name": "job-7", "owner": 0, "prefix": "t7.guest"})
    assert kvs(capsys, "put", "-N", "job-7", "application.out=hi")[0] == 0
    assert kvs(capsys, "get", "--namespace=job-7", "application.out")[1] == "hi\n"
    assert kvs(capsys, "get", "t7.guest.application.out")[1] == "hi\n"
    assert kvs(capsys, "ls", "-N", "job-7")[1] == "application\n"
    rc, _, err = kvs(capsys, "get", "-N", "job-8", "output")
    assert (rc, err) == (1, 'pflux-kvs: ERROR: namespace "job-8": does not exist\n')
