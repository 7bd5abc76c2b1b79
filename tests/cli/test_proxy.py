"""``proxy TARGET [COMMAND]``: the command (or ``$SHELL``) reaches TARGET through
FLUX_URI and PFLUX_URI, its exit code is proxy's, and a URI pflux cannot reach is
refused naming it."""

from __future__ import annotations

from pathlib import Path

from support.instance import PFLUX, console

# as flux-core's tests' ssh: the remote command run here, what it was asked kept
FAKE_SSH = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/ssh.args"
if [ "$1" = "-p" ]; then shift 2; fi
shift
exec "$@"
"""


def test_the_command_talks_to_the_target_and_its_exit_code_is_kept(uri: str) -> None:
    script = 'echo "$FLUX_URI $PFLUX_URI"; pflux getattr size; exit 3'
    proc = console("proxy", uri, "sh", "-c", script, PFLUX_URI="", FLUX_URI="")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == f"{uri} {uri}\n1\n"
    proc = console("proxy", uri, "sh", "-c", "kill -TERM $$")
    assert proc.returncode == 128 + 15


def test_without_a_command_it_runs_the_shell(uri: str) -> None:
    proc = console("proxy", uri, stdin='echo "in $FLUX_URI"\n', SHELL="/bin/sh")
    assert (proc.returncode, proc.stdout) == (0, f"in {uri}\n")


def test_what_pflux_cannot_reach_is_refused() -> None:
    proc = console("proxy", "local:///nonexistent/socket", "true")
    assert (proc.returncode, proc.stderr) == (
        1,
        "pflux-proxy: ERROR: cannot connect to the instance at /nonexistent/socket:"
        " No such file or directory\n",
    )


def test_ssh_joins_the_command_to_the_remote_socket(uri: str, tmp_path: Path) -> None:
    ssh = tmp_path / "ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    socket_path = uri.removeprefix("local://")
    target = f"ssh://me@localhost:2222{socket_path}"
    script = 'pflux getattr size; pflux getattr rank; echo "$FLUX_URI"; exit 4'
    env = {"FLUX_SSH": str(ssh), "FLUX_SSH_RCMD": str(PFLUX), "PFLUX_URI": "", "FLUX_URI": ""}
    proc = console("proxy", target, "sh", "-c", script, **env)
    assert proc.returncode == 4, proc.stderr
    size, rank, proxied = proc.stdout.splitlines()
    assert (size, rank) == ("1", "0")
    assert proxied.startswith("local:///")
    assert proxied.endswith("/local")
    assert not Path(proxied.removeprefix("local://")).exists()  # removed at the end
    calls = (tmp_path / "ssh.args").read_text().splitlines()
    assert set(calls) == {f"-p 2222 me@localhost {PFLUX} relay {socket_path}"}
    assert len(calls) >= 3  # one for each connection: the check and the two commands

    proc = console("proxy", "ssh://localhost/nonexistent/socket", "true", **env)
    assert proc.returncode == 1
    *remote, local = proc.stderr.splitlines()  # what the remote side says comes through
    assert set(remote) == {
        "pflux-relay: ERROR: cannot connect to /nonexistent/socket: No such file or directory"
    }
    assert local.startswith(
        "pflux-proxy: ERROR: cannot connect to ssh://localhost/nonexistent/socket: "
    )
    proc = console("proxy", "ssh://localhost", "true", **env)
    assert proc.stderr == (
        "pflux-proxy: ERROR: ssh://localhost: no path (ssh://[USER@]HOST[:PORT]/PATH)\n"
    )
    env["FLUX_SSH"] = str(tmp_path / "nonexistent")
    proc = console("proxy", target, "true", **env)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1].startswith(
        f"pflux-proxy: ERROR: cannot connect to {target}: "
    )
