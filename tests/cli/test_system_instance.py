"""The system instance: started by systemd (``etc/pflux.service``, ``Type=notify``) with
``etc/system.toml``, its socket in a system directory (``-S local-uri``) that commands
find with no URI set (``PFLUX_SYSTEM_URI`` moves it here); the directory's safety."""

from __future__ import annotations

import json
import os
import shlex
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.protocol.uri import SYSTEM_URI, SYSTEM_URI_ENV
from support.instance import PFLUX, environ
from support.units import verify

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "etc" / "pflux.service"
CONFIG = REPO / "etc" / "system.toml"
WAIT = 60.0


def without_uri(**overrides: str) -> dict[str, str]:
    """A command's environment that names no instance (but ``overrides``)."""
    env = environ(**overrides)
    for name in ("PFLUX_URI", "FLUX_URI", "NOTIFY_SOCKET"):
        if name not in overrides:
            env.pop(name, None)
    return env


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PFLUX), *args], capture_output=True, text=True, env=env, timeout=WAIT, check=False
    )


def unit_entries() -> dict[str, list[str]]:
    """The unit file's ``Key=value`` entries (continued lines joined), by key."""
    text = UNIT.read_text().replace("\\\n", " ")
    entries: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            entries.setdefault(key, []).append(value)
    return entries


def exec_start() -> list[str]:
    (line,) = unit_entries()["ExecStart"]
    return shlex.split(line)


def recv_until(sock: socket.socket, wanted: str) -> list[str]:
    """The datagrams received up to the first holding the line ``wanted``."""
    messages = []
    while True:
        message = sock.recv(4096).decode()
        messages.append(message)
        if wanted in message.splitlines():
            return messages


@pytest.fixture
def system(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """The unit's ExecStart, its paths moved under ``tmp_path``: the system URI, and the
    environment that finds it (no PFLUX_URI, ``PFLUX_SYSTEM_URI`` set)."""
    rundir = tmp_path / "run"
    uri = f"local://{rundir}/local"
    moved = {
        "/opt/pflux/bin/pflux": str(PFLUX),
        "/etc/pflux/system.toml": str(CONFIG),
        "statedir=/var/lib/pflux": f"statedir={tmp_path}/state",
        f"local-uri={SYSTEM_URI}": f"local-uri={uri}",
    }
    argv = [moved.get(arg, arg) for arg in exec_start()]
    assert argv[:2] == [str(PFLUX), "start"]
    env = without_uri(**{SYSTEM_URI_ENV: uri})
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.settimeout(WAIT)
    notify.bind(str(tmp_path / "notify"))
    log = (tmp_path / "start.log").open("w")
    proc = subprocess.Popen(
        argv, env={**env, "NOTIFY_SOCKET": str(tmp_path / "notify")},
        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
    )  # fmt: skip
    try:
        recv_until(notify, "READY=1")  # as systemd waits for it
        yield uri, env
    finally:
        proc.terminate()  # as systemctl stop does
        try:
            proc.wait(WAIT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
            notify.close()


@pytest.mark.parametrize("abstract", [False, True], ids=["path", "abstract"])
def test_systemd_is_told_ready_once_the_socket_answers_and_stopping_at_shutdown(
    tmp_path: Path, abstract: bool
) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.settimeout(WAIT)
    name = f"@pflux-test-notify-{os.getpid()}-{tmp_path.name}"
    sock.bind("\0" + name[1:] if abstract else str(tmp_path / "notify"))
    uri = f"local://{tmp_path}/state/local"
    env = without_uri(NOTIFY_SOCKET=name if abstract else str(tmp_path / "notify"))
    proc = subprocess.Popen(
        [str(PFLUX), "start", "-S", f"statedir={tmp_path}/state"],
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = recv_until(sock, "READY=1")
        # told ready: the socket answers, with nothing to wait for
        jobs = run("jobs", "-a", env=without_uri(PFLUX_URI=uri))
        assert (jobs.returncode, jobs.stderr) == (0, "")
        assert first[0] == "STATUS=starting"
        assert first[-1] == f"READY=1\nSTATUS=serving at {uri}"
        assert run("shutdown", "--quiet", env=without_uri(PFLUX_URI=uri)).returncode == 0
        last = recv_until(sock, "STOPPING=1")
        assert last == ["STOPPING=1\nSTATUS=stopping: shutdown"]
        assert proc.wait(WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
        sock.close()


def test_commands_and_the_api_find_the_system_instance_with_no_uri(
    system: tuple[str, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, env = system
    jobs = run("jobs", "-a", env=env)
    assert (jobs.returncode, jobs.stderr) == (0, "")
    assert jobs.stdout.split()[:2] == ["JOBID", "USER"]
    assert run("uri", env=env).stdout == f"{uri}\n"
    # the unit's config is the instance's: its [job-manager] limits are read back
    config = run("config", "get", "job-manager", env=env)
    assert json.loads(config.stdout) == {"inactive-age-limit": "7d", "inactive-num-limit": 10000}
    for name in ("PFLUX_URI", "FLUX_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(SYSTEM_URI_ENV, uri)
    with Client() as client:
        assert client.handle.uri == uri
        assert client.list_jobs() == []
    # others may reach the directory; only the owner the socket (until guests are let in)
    assert stat.S_IMODE(os.stat(tmp_path / "run").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(tmp_path / "run" / "local").st_mode) == 0o600


def test_a_second_instance_leaves_the_system_instances_socket_alone(
    system: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    uri, env = system
    second = run("start", "-S", f"statedir={tmp_path}/other", "-S", f"local-uri={uri}", "true",
                 env=env)  # fmt: skip
    assert (second.returncode, second.stderr) == (
        1,
        f"pflux-start: ERROR: local-uri={uri}: another instance serves there\n",
    )
    assert run("uri", env=env).stdout == f"{uri}\n"


def test_with_no_instance_anywhere_the_error_names_both_places(tmp_path: Path) -> None:
    system = f"local://{tmp_path}/run/local"
    proc = run("jobs", env=without_uri(**{SYSTEM_URI_ENV: system}))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        "pflux-jobs: ERROR: no pflux instance: PFLUX_URI is not set and there is no system"
        f" instance at {system}: set PFLUX_URI or pass --uri (run commands under `pflux start`)\n"
    )


def start_with_socket_in(tmp_path: Path, rundir: Path) -> subprocess.CompletedProcess[str]:
    return run(
        "start", "-S", f"statedir={tmp_path}/state", "-S", f"local-uri=local://{rundir}/local",
        "true", env=without_uri(),
    )  # fmt: skip


def test_a_socket_directory_others_may_write_in_is_refused(tmp_path: Path) -> None:
    rundir = tmp_path / "run"
    rundir.mkdir()
    rundir.chmod(0o777)
    proc = start_with_socket_in(tmp_path, rundir)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"pflux-start: ERROR: local-uri=local://{rundir}/local: unsafe socket directory:"
        f" {rundir}: mode 0777 lets others write in it\n"
    )
    assert not (rundir / "local").exists()


def test_a_link_in_place_of_the_socket_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir(mode=0o755)
    rundir = tmp_path / "run"
    rundir.symlink_to(tmp_path / "elsewhere")
    proc = start_with_socket_in(tmp_path, rundir)
    assert proc.returncode == 1
    assert proc.stderr.endswith(f" {rundir}: not a directory (a link or a file)\n")
    assert not (tmp_path / "elsewhere" / "local").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to give a directory to another user")
def test_a_socket_directory_of_another_users_is_refused(tmp_path: Path) -> None:
    rundir = tmp_path / "run"
    rundir.mkdir(mode=0o755)
    nobody = 65534
    os.chown(rundir, nobody, nobody)
    proc = start_with_socket_in(tmp_path, rundir)
    assert proc.returncode == 1
    assert proc.stderr.endswith(f" {rundir}: owned by uid {nobody}, not by uid 0\n")


def test_local_uri_must_name_an_absolute_socket_path(tmp_path: Path) -> None:
    proc = run("start", "-S", "local-uri=relative/local", "true", env=without_uri())
    assert (proc.returncode, proc.stderr) == (
        2,
        "pflux-start: ERROR: -S local-uri=relative/local: local-uri must be local:// and an"
        " absolute path\n",
    )


def test_the_unit_is_a_notify_service_starting_the_documented_instance() -> None:
    entries = unit_entries()
    assert entries["Type"] == ["notify"]
    assert entries["NotifyAccess"] == ["main"]
    assert entries["Restart"] == ["on-failure"]
    assert entries["User"] == ["pflux"]
    assert entries["RuntimeDirectory"] == ["pflux"]
    assert entries["StateDirectory"] == ["pflux"]
    argv = exec_start()
    assert argv[:2] == ["/opt/pflux/bin/pflux", "start"]
    assert argv[argv.index("--config") + 1] == "/etc/pflux/system.toml"
    for attr in ("statedir=/var/lib/pflux", f"local-uri={SYSTEM_URI}"):
        assert argv[argv.index(attr) - 1] == "-S"
    readme = (REPO / "README.md").read_text()
    for named in ("etc/pflux.service", "etc/system.toml", "/etc/pflux/system.toml",
                  "/opt/pflux", "/var/lib/pflux", SYSTEM_URI, SYSTEM_URI_ENV):  # fmt: skip
        assert named in readme, named


def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    proc = verify(UNIT, "/opt/pflux/bin/pflux", PFLUX, tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
