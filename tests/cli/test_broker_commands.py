"""``flux ping``, ``event``, ``logger``, ``module`` and ``config`` against a live
instance, in flux-core's formats, options and exit codes."""

from __future__ import annotations

import re
import select
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from support.instance import PFLUX, LiveInstance, environ, fails, ok, pflux

TIMEOUT = 60.0
PING = re.compile(
    r"^(?P<prefix>\S*?)(?P<topic>[\w-]+\.ping) pad=(?P<pad>\d+) seq=(?P<seq>\d+)"
    r" time=\d+\.\d{3} ms \((?P<route>[^)]*)\)$"
)


def test_ping_a_service_a_rank_and_rank_bang_service(uri: str) -> None:
    lines = ok(uri, "ping", "--count", "2", "--interval", "0", "kvs").splitlines()
    assert [PING.match(line).group("topic", "seq", "route") for line in lines] == [  # type: ignore[union-attr]
        ("kvs.ping", "0", "0"),
        ("kvs.ping", "1", "0"),
    ]
    broker = PING.match(ok(uri, "ping", "-c", "1", "0").strip())
    assert broker is not None
    assert broker.group("prefix", "topic", "route") == ("0!", "broker.ping", "0")
    padded = PING.match(ok(uri, "ping", "-c", "1", "--pad", "5", "0!job-list").strip())
    assert padded is not None
    assert padded.group("prefix", "topic", "pad") == ("0!", "job-list.ping", "5")
    ranked = PING.match(ok(uri, "ping", "-c", "1", "--rank", "all", "sched").strip())
    assert ranked is not None
    assert ranked.group("prefix", "topic") == ("all!", "sched.ping")
    assert "no service provides 'nosuch.ping'" in fails(uri, "ping", "-c", "1", "nosuch")
    assert "pad must be >= 0" in fails(uri, "ping", "-p", "-1", "kvs", rc=2)
    assert "kvs.ping: no rank 3 in this instance" in fails(uri, "ping", "-c", "1", "-r", "3", "kvs")


def test_ping_waits_its_interval_between_requests(uri: str) -> None:
    start = time.monotonic()
    lines = ok(uri, "ping", "-c", "3", "-i", "0.2", "broker").splitlines()
    assert len(lines) == 3
    assert time.monotonic() - start >= 0.4  # two intervals: none after the last


def test_ping_u_shows_the_credentials_the_answer_carries(uri: str) -> None:
    line = ok(uri, "ping", "-u", "-c", "1", "kvs").strip()
    assert re.fullmatch(
        r"kvs\.ping pad=0 userid=\d+ rolemask=0x1 seq=0 time=\d+\.\d{3} ms \(0\)", line
    ), line


def test_ping_b_sends_every_request_before_it_reads_an_answer(uri: str) -> None:
    start = time.monotonic()
    lines = ok(uri, "ping", "-b", "-c", "4", "-i", "5", "broker").splitlines()
    assert time.monotonic() - start < 5  # no interval between requests sent at once
    assert [PING.match(line).group("seq") for line in lines] == ["0", "1", "2", "3"]  # type: ignore[union-attr]
    assert "--batch should only be used with --count" in fails(uri, "ping", "-b", "kvs", rc=2)


@pytest.fixture
def subscriber(uri: str) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """``pflux event sub`` in a process of its own (the caller adds the arguments)."""
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [str(PFLUX), "event", "sub", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environ(PFLUX_URI=uri),
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.communicate()  # and closes its pipes


def _until_heard(uri: str, proc: subprocess.Popen[str], topic: str) -> str:
    """Publish ``topic`` until ``proc`` prints a line (it has subscribed by then): that line."""
    assert proc.stdout is not None
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        ok(uri, "event", "pub", "--synchronous", topic)
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            return proc.stdout.readline()
    raise AssertionError("the subscriber printed nothing")


def test_event_sub_prints_each_event_published_as_topic_tab_payload(
    uri: str, subscriber: Callable[..., subprocess.Popen[str]]
) -> None:
    proc = subscriber("clitest.")
    assert proc.stdout is not None
    assert _until_heard(uri, proc, "clitest.ready") == "clitest.ready\t\n"
    ok(uri, "event", "pub", "-s", "clitest.a", '{"x":', "[1, 2]}")
    ok(uri, "event", "pub", "-s", "other.b", "1")  # not subscribed to
    ok(uri, "event", "pub", "-s", "--private", "clitest.p", '"secret"')
    ok(uri, "event", "pub", "--loopback", "clitest.c")
    lines: list[str] = []
    while len(lines) < 3:
        line = proc.stdout.readline()
        if line != "clitest.ready\t\n":  # one published before the first was read
            lines.append(line)
    assert lines == ['clitest.a\t{"x":[1,2]}\n', 'clitest.p\t"secret"\n', "clitest.c\t\n"]


def test_event_sub_count_exits_after_that_many(
    uri: str, subscriber: Callable[..., subprocess.Popen[str]]
) -> None:
    proc = subscriber("--count", "1", "clicount.")
    assert proc.stdout is not None
    assert _until_heard(uri, proc, "clicount.x") == "clicount.x\t\n"
    assert proc.wait(TIMEOUT) == 0
    assert proc.stdout.read() == ""


def test_event_pub_refuses_raw_and_what_is_not_json(uri: str) -> None:
    assert "--raw: pflux's events carry JSON payloads only" in fails(
        uri, "event", "pub", "--raw", "t", "x", rc=2
    )
    assert "t: payload is not valid JSON: {nope" in fails(uri, "event", "pub", "t", "{nope", rc=2)


def test_logger_appends_to_the_ring_with_severity_and_appname(uri: str) -> None:
    ok(uri, "logger", "--severity", "warning", "--appname", "cliapp", "hello", "there")
    ok(uri, "logger", "plain words")
    dmesg = ok(uri, "dmesg")
    assert "cliapp.warning[0]: hello there" in dmesg
    assert "logger.info[0]: plain words" in dmesg
    assert "invalid severity 'loud'" in fails(uri, "logger", "-s", "loud", "x", rc=2)


def test_module_list_in_flux_s_columns(uri: str) -> None:
    lines = ok(uri, "module", "list").splitlines()
    assert lines[0] == "Module                   Idle  S Sendq Recvq Service"
    rows = {line.split()[0]: line for line in lines[1:]}
    assert {"kvs", "job-manager", "job-list", "sched", "broker"} <= rows.keys()
    assert rows["kvs"] == f"{'kvs':<24}    -  R     0     0 "
    long = ok(uri, "module", "list", "--long")
    assert "pflux.kvs.service:KVSService" in long
    assert "pflux.joblist:JobList" in long
    assert "load: not supported" in fails(uri, "module", "load", "sched-simple")


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInstance]:
    where = tmp_path_factory.mktemp("configured")
    config = where / "instance.toml"
    config.write_text('[job-manager]\ninactive-age-limit = "7d"\ninactive-num-limit = 100\n')
    with LiveInstance(where / "state", "--config", str(config)) as live:
        yield live


def test_config_get_prints_json_and_strings_bare(configured: LiveInstance) -> None:
    uri = configured.uri
    assert ok(uri, "config", "get", "job-manager.inactive-age-limit") == "7d\n"
    assert ok(uri, "config", "get", "job-manager.inactive-num-limit") == "100\n"
    assert '"inactive-num-limit": 100' in ok(uri, "config", "get", "job-manager")
    assert ok(uri, "config", "get", "-t", "fsd-integer", "job-manager.inactive-age-limit") == (
        "604800\n"
    )
    assert ok(uri, "config", "get", "--type", "fsd", "job-manager.inactive-age-limit") == "7d\n"
    assert "value is not of type string" in fails(
        uri, "config", "get", "-t", "string", "job-manager.inactive-num-limit"
    )
    assert ok(uri, "config", "get", "--default", "dflt", "no.such") == "dflt\n"
    assert "no.such is not set" in fails(uri, "config", "get", "no.such")
    quiet = pflux(uri, "config", "get", "--quiet", "no.such")
    assert (quiet.returncode, quiet.stderr) == (1, "")
    assert "reload: not supported" in fails(uri, "config", "reload")
