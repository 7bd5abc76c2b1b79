"""CURVE certificates on disk, in ZeroMQ's zcert text format (what flux keygen writes).

A file holds a ``metadata`` section of ``key = "value"`` lines and a ``curve``
section with ``public-key`` and ``secret-key``, each 40 characters of Z85; lines
starting with ``#`` are comments. The reader is as strict as flux-core's: a
section name starts its line, its entries are indented, every value is quoted.
Whoever holds the secret key may join the instance, so :func:`load_cert`
refuses a file anyone but its owner could read or change, and one owned by
someone other than the instance's owner.
"""

from __future__ import annotations

import os
import string
from collections.abc import Mapping
from pathlib import Path

from pflux.broker.boot import Cert, CertError

__all__ = [
    "format_cert",
    "key_problem",
    "load_cert",
    "meta_problem",
    "new_cert",
    "parse_cert",
    "write_cert",
]

Z85 = string.digits + string.ascii_lowercase + string.ascii_uppercase + ".-:+=^!/*?&<>()[]{}@%$#"
"""ZeroMQ's Z85 alphabet (RFC 32/Z85), in digit order."""
KEY_CHARS = 40  # a 32-byte key in Z85
_META_KEY = frozenset(string.ascii_letters + string.digits + "-.")
_META_VALUE = frozenset(string.ascii_letters + string.digits + ".-:+=^!/*?&<>()[]{}@%$# \t")
_HEADER = "#   ZeroMQ CURVE **Secret** Certificate\n#   whoever reads it may join the instance\n\n"
_PRIVATE = 0o066  # read or write by group or others


def new_cert() -> Cert:
    """A fresh key pair."""
    import zmq

    public, secret = zmq.curve_keypair()
    return Cert(public.decode("ascii"), secret.decode("ascii"))


def key_problem(key: str) -> str | None:
    """Why ``key`` is no CURVE key in Z85 (40 characters decoding to 32 bytes); None if it is."""
    if len(key) != KEY_CHARS or not set(key) <= set(Z85):
        return f"not {KEY_CHARS} Z85 characters"
    for at in range(0, KEY_CHARS, 5):
        value = 0
        for char in key[at : at + 5]:
            value = value * 85 + Z85.index(char)
        if value >= 1 << 32:
            return "not a Z85 encoding (a group of five characters overflows 32 bits)"
    return None


def meta_problem(key: str, value: str) -> str | None:
    """Why ``key = "value"`` cannot be a metadata entry (flux-core's reader's rule), or None."""
    if not key or not set(key) <= _META_KEY:
        return f"metadata key {key!r}: only letters, digits, '-' and '.' are allowed"
    if not set(value) <= _META_VALUE:
        return f"metadata {key}: value {value!r} holds a character a certificate cannot"
    return None


def format_cert(cert: Cert, meta: Mapping[str, str]) -> str:
    """The file's text: ``meta`` in order, then the keys."""
    for key, value in meta.items():
        problem = meta_problem(key, value)
        if problem:
            raise CertError(problem)
    lines = [_HEADER, "metadata\n"]
    lines += [f'    {key} = "{value}"\n' for key, value in meta.items()]
    lines += [
        "curve\n",
        f'    public-key = "{cert.public}"\n',
        f'    secret-key = "{cert.secret}"\n',
    ]
    return "".join(lines)


def parse_cert(text: str, name: str) -> tuple[Cert, dict[str, str]]:
    """The key pair and metadata in ``text``; CertError naming ``name``, the line and the rule."""
    section = ""
    meta: dict[str, str] = {}
    keys: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indented = line[0] in " \t"
        if not indented and stripped in ("metadata", "curve"):
            section = stripped
            continue
        if not indented or not section:
            raise CertError(f"{name} line {lineno}: expected 'metadata', 'curve' or an entry")
        key, value = _entry(stripped, f"{name} line {lineno}")
        if section == "metadata":
            problem = meta_problem(key, value)
            if problem:
                raise CertError(f"{name} line {lineno}: {problem}")
            if key in meta:
                raise CertError(f"{name} line {lineno}: metadata {key} is given twice")
            meta[key] = value
        elif key in ("public-key", "secret-key"):
            problem = key_problem(value)
            if problem:
                raise CertError(f"{name} line {lineno}: {key}: {problem}")
            keys[key] = value
        else:
            raise CertError(f"{name} line {lineno}: the curve section holds {key!r}, not a key")
    for key in ("public-key", "secret-key"):
        if key not in keys:
            raise CertError(f"{name}: no {key} in its curve section")
    cert = Cert(keys["public-key"], keys["secret-key"])
    _check_pair(cert, name)
    return cert, meta


def _entry(stripped: str, where: str) -> tuple[str, str]:
    key, eq, value = stripped.partition("=")
    key, value = key.strip(), value.strip()
    if not eq or len(value) < 2 or value[0] != '"' or value[-1] != '"':
        raise CertError(f'{where}: expected KEY = "VALUE"')
    return key, value[1:-1]


def _check_pair(cert: Cert, name: str) -> None:
    import zmq

    if zmq.curve_public(cert.secret.encode("ascii")).decode("ascii") != cert.public:
        raise CertError(f"{name}: public-key is not the secret-key's public key")


def write_cert(path: Path, cert: Cert, meta: Mapping[str, str]) -> None:
    """Write a new certificate file at ``path``, mode 0600; CertError if it exists."""
    text = format_cert(cert, meta).encode("ascii")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        raise CertError(f"{path}: file exists; remove it to make a new certificate") from None
    except OSError as exc:
        raise CertError(f"{path}: {exc.strerror}") from None
    with open(fd, "wb") as f:
        f.write(text)


def load_cert(path: Path, owner_uid: int) -> Cert:
    """The key pair in ``path``, a file only ``owner_uid`` (the instance's owner) may read.

    A link is followed: the file it reaches is the one whose owner and mode count.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise CertError(f"{path}: {exc.strerror}") from None
    with open(fd, "rb") as f:
        info = os.fstat(fd)
        if info.st_uid != owner_uid:
            raise CertError(
                f"{path}: owned by uid {info.st_uid}, not by the instance owner (uid {owner_uid})"
            )
        if info.st_mode & _PRIVATE:
            raise CertError(
                f"{path}: readable or writable by group or others"
                f" (mode {info.st_mode & 0o777:04o}): only its owner may (chmod 600)"
            )
        data = f.read(64 * 1024)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise CertError(f"{path}: not a certificate (not ASCII text)") from None
    return parse_cert(text, str(path))[0]
