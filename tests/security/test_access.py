"""Who may reach a user's instance: not another user; root only where the owner allows it.

Root let in (``[access] allow-root-owner = true``) is the owner: the job it
submits runs as the owner and is recorded as the owner's, never as uid 0.
"""

from __future__ import annotations

import subprocess

from support.instance import PFLUX, console, environ
from support.users import User


def test_another_user_cannot_reach_the_instance_nor_its_state(
    other_users: tuple[User, User],
) -> None:
    victim, attacker = other_users
    state_dir = victim.home / "access-state"
    with victim.instance(state_dir) as live:
        job = victim.pflux("submit", "true", PFLUX_URI=live.uri)
        assert job.returncode == 0, job.stderr
        tried = attacker.pflux("jobs", "-a", PFLUX_URI=live.uri)
        assert tried.returncode == 1
        assert tried.stderr.startswith("pflux-jobs: ERROR: ")
        assert "Permission denied" in tried.stderr
        assert job.stdout.strip() not in tried.stdout + tried.stderr
        looked = attacker.code("import os, sys; os.listdir(sys.argv[1])", str(state_dir))
        assert looked.returncode == 1
        assert "PermissionError" in looked.stderr
        # opened up by mistake, the socket reaches the broker, which refuses them itself
        state_dir.chmod(0o711)
        (state_dir / "local").chmod(0o777)
        tried = attacker.pflux("jobs", "-a", PFLUX_URI=live.uri)
        state_dir.chmod(0o700)
        assert tried.returncode == 1
        assert tried.stderr == (
            f"pflux-jobs: ERROR: permission denied: uid {attacker.uid} may not connect to"
            f" the instance of uid {victim.uid}\n"
        )
        own = victim.pflux("jobs", "-a", "-n", "-o", "{id}", PFLUX_URI=live.uri)
        assert own.stdout.strip() == job.stdout.strip()


def test_root_is_refused_by_a_users_instance_unless_it_allows_root(
    other_users: tuple[User, User],
) -> None:
    victim, _ = other_users
    with victim.instance(victim.home / "refuses-root") as live:
        tried = console("jobs", "-a", PFLUX_URI=live.uri)
        assert tried.returncode == 1
        assert tried.stderr == (
            f"pflux-jobs: ERROR: permission denied: uid 0 (root) may not connect to the"
            f" instance of uid {victim.uid} unless its config sets [access]"
            " allow-root-owner = true\n"
        )
        # the owner is served as before
        own = victim.pflux("jobs", "-a", PFLUX_URI=live.uri)
        assert own.returncode == 0, own.stderr


def test_root_allowed_in_submits_as_the_owner(other_users: tuple[User, User]) -> None:
    victim, _ = other_users
    config = victim.home / "allow-root.toml"
    config.write_text("[access]\nallow-root-owner = true\n")
    config.chmod(0o644)
    with victim.instance(victim.home / "allows-root", "--config", str(config)) as live:
        script = (
            f"{PFLUX} submit --wait sh -c 'id -u' >/dev/null; id=$({PFLUX} job last);"
            f' {PFLUX} job attach "$id"; {PFLUX} job eventlog "$id" | head -1'
        )
        ran = subprocess.run(
            ["sh", "-c", script],
            env=environ(PFLUX_URI=live.uri),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        ran_as, submit = ran.stdout.splitlines()
        assert ran_as == str(victim.uid)
        assert f" userid={victim.uid} " in submit
        listed = victim.pflux("jobs", "-a", "-n", "-o", "{userid}", PFLUX_URI=live.uri)
        assert listed.stdout == f"{victim.uid}\n"
