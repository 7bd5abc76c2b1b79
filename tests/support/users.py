"""Other local users, for the tests that play one user against another.

Made with ``useradd`` once per session where the tests run as root (and left in
place: a later session finds them and uses them as they are); elsewhere the
tests that need them are skipped, saying why. Each user gets a home of its own
under one directory others may traverse but not list, since root's pytest
directory is not theirs to enter. Where the other users cannot run this
Python (one installed in root's home), they run pflux with a virtual
environment made there over the system's Python of the same version, which
finds this environment's packages.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

from support.instance import PFLUX, LiveInstance, environ

NAMES = ("pfluxsec1", "pfluxsec2")


@dataclass(frozen=True)
class User:
    """A local user other than root, and a directory of its own for a test to use."""

    name: str
    uid: int
    gid: int
    home: Path
    python: str  # a Python this user can run, with pflux importable

    def env(self, **overrides: str) -> dict[str, str]:
        """A pflux command's environment for this user: its HOME, no runtime directory."""
        env = environ(HOME=str(self.home), USER=self.name, LOGNAME=self.name, **overrides)
        env.pop("XDG_RUNTIME_DIR", None)
        return env

    def run(self, argv: Sequence[str], **overrides: str) -> subprocess.CompletedProcess[str]:
        """``argv`` as this user (its uid, gid and no other group), waited for."""
        return subprocess.run(
            list(argv),
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            cwd=self.home,
            env=self.env(**overrides),
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
            check=False,
        )

    def code(self, code: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Python ``code`` run as this user (``sys.argv[1:]`` is ``args``)."""
        return self.run([self.python, "-c", code, *args])

    def pflux(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """The ``pflux`` command as this user."""
        return self.run([self.python, str(PFLUX), *args], **env)

    def instance(self, state_dir: Path, *args: str) -> LiveInstance:
        """``pflux start`` as this user, in its own session (``LiveInstance``)."""
        ids = [f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        prefix = ["setpriv", *ids, "--inh-caps=-all", self.python]
        # the instance's jobs see what a login of this user would
        with mock.patch.dict(os.environ, self.env(), clear=True):
            return LiveInstance(state_dir, *args, prefix=prefix)

    def mkdir(self, path: Path, mode: int = 0o700) -> Path:
        """``path`` made by root and given to this user, ``mode``."""
        path.mkdir(mode=mode)
        os.chown(path, self.uid, self.gid)
        path.chmod(mode)
        return path


def _ensure(name: str) -> pwd.struct_passwd:
    """The user ``name``, made if it is not there (another session may make it first)."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    proc = subprocess.run(
        ["useradd", "--no-create-home", "--user-group", "--shell", "/bin/sh", name],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pytest.fail(f"useradd {name} failed: {proc.stderr.strip()}")


def _python(base: Path, probe: tuple[int, int]) -> str:
    """A Python the user ``probe`` (uid, gid) can run with pflux importable."""

    def runs(python: str) -> str:
        try:
            proc = subprocess.run(
                [python, "-c", "import asyncio, pflux.cli"],
                user=probe[0],
                group=probe[1],
                extra_groups=[],
                cwd="/",
                capture_output=True,
                text=True,
                check=False,
            )
        except OSError as exc:
            return str(exc)
        return "" if proc.returncode == 0 else proc.stderr.strip() or f"exit {proc.returncode}"

    if not runs(sys.executable):
        return sys.executable
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None:
        pytest.skip(f"other users cannot run {sys.executable}, and there is no system {version}")
    env = base / "python"
    subprocess.run([system, "-m", "venv", "--without-pip", str(env)], check=True)
    ours = sysconfig.get_path("purelib")
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env)}))
    (site / "pflux-tests.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    python = str(env / "bin" / "python")
    why = runs(python)
    if why:
        pytest.skip(f"other users cannot run {sys.executable} nor {system} with pflux: {why}")
    return python


@contextlib.contextmanager
def guest_instance(prefix: str) -> Iterator[LiveInstance]:
    """An instance of this process's user with ``[access] allow-guest-user``, its state
    in a directory (named with ``prefix``) other users may traverse but not list."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o711)  # the guests reach the socket below, and list nothing
    config = base / "guests.toml"
    config.write_text("[access]\nallow-guest-user = true\n")
    try:
        with LiveInstance(base / "state", "--config", str(config)) as live:
            yield live
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def other_users() -> Iterator[tuple[User, ...]]:
    """Two users other than root (``NAMES``), each with a fresh directory of its own."""
    if os.getuid() != 0:
        pytest.skip("needs root to create the second user")
    if shutil.which("useradd") is None or shutil.which("setpriv") is None:
        pytest.skip("needs useradd and setpriv to act as other users")
    base = Path(tempfile.mkdtemp(prefix="pflux-users-"))
    base.chmod(0o711)  # each user may reach its own home, and list no one's
    try:
        entries = [_ensure(name) for name in NAMES]
        python = _python(base, (entries[0].pw_uid, entries[0].pw_gid))
        users = []
        for entry in entries:
            home = base / entry.pw_name
            home.mkdir(mode=0o755)
            os.chown(home, entry.pw_uid, entry.pw_gid)
            users.append(User(entry.pw_name, entry.pw_uid, entry.pw_gid, home, python))
        yield tuple(users)
    finally:
        shutil.rmtree(base, ignore_errors=True)
