"""The helper's configuration: every key checked, an unknown one refused, naming it."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from pflux.imp.config import DEFAULT_SOCKET, ImpConfigError, load, parse

EXAMPLE = Path(__file__).parents[3] / "etc" / "imp.toml"
NOBODY = 65534


def test_the_defaults_and_a_full_table() -> None:
    config = parse({"allowed-users": [NOBODY]})
    assert config.socket == DEFAULT_SOCKET
    assert config.allowed_users == {NOBODY}
    assert config.allowed_mechanisms == ("munge",)
    assert config.max_ttl is None
    assert config.job_tmpdir == ("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp")
    assert config.python == sys.executable
    full = parse(
        {
            "socket": "/run/x/sock",
            "allowed-users": ["root", NOBODY][1:],
            "allowed-mechanisms": ["munge"],
            "max-ttl": 60,
            "job-tmpdir": "/var/tmp",
            "python": "/opt/pflux/bin/python",
        }
    )
    assert (full.socket, full.max_ttl, full.job_tmpdir) == ("/run/x/sock", 60.0, "/var/tmp")


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ({"allowed-users": [NOBODY], "allowed_users": [1]}, "unknown key 'allowed_users'"),
        ({}, "allowed-users: must name the instance accounts"),
        ({"allowed-users": []}, "allowed-users: must be a list"),
        ({"allowed-users": ["no-such-user-here"]}, "no such user 'no-such-user-here'"),
        ({"allowed-users": [0]}, "must not name root"),
        ({"allowed-users": [NOBODY], "socket": "run/sock"}, "socket: must be an absolute path"),
        ({"allowed-users": [NOBODY], "allowed-mechanisms": ["curve"]}, "allowed-mechanisms:"),
        ({"allowed-users": [NOBODY], "max-ttl": -1}, "max-ttl: must be a number"),
        ({"allowed-users": [NOBODY], "max-ttl": True}, "max-ttl: must be a number"),
        ({"allowed-users": [NOBODY], "python": "python3"}, "python: must be an absolute path"),
    ],
)
def test_a_bad_key_is_refused_naming_it(table: dict[str, Any], said: str) -> None:
    with pytest.raises(ImpConfigError, match=said.replace("(", r"\(")):
        parse(table)


def test_the_example_is_valid_for_its_account(tmp_path: Path) -> None:
    table = tomllib.loads(EXAMPLE.read_text())
    assert table["allowed-users"] == ["pflux"]
    table["allowed-users"] = [NOBODY]  # the account may not exist here
    assert parse(table).socket == "/run/pflux-imp/sock"
    bad = tmp_path / "imp.toml"
    bad.write_text("socket = \n")
    with pytest.raises(ImpConfigError, match="not TOML"):
        load(str(bad))
    with pytest.raises(ImpConfigError, match="No such file"):
        load(str(tmp_path / "missing.toml"))
