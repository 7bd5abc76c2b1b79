"""URIs split into their parts (``URI``), and a Flux instance's in its local and
remote forms (``JobURI``): what ``flux.uri.uri`` and ``flux.uri`` give.

A leaf: a job's ``JobInfo.uri`` is a ``JobURI``, and the resolver of job ids to
URIs (``flux.uri``) lists jobs, so the job information takes the classes from
here, not from the resolver's package.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qs, urlparse

__all__ = ["URI", "JobURI"]


class URI:
    """A URI split as ``urllib.parse.urlparse`` splits it, its parts settable;
    ``query_dict``: the query as ``parse_qs`` reads it (blank values kept)."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        parsed = urlparse(uri)
        self.scheme = parsed.scheme
        self.netloc = parsed.netloc
        self.path = parsed.path
        self.params = parsed.params
        self.query = parsed.query
        self.fragment = parsed.fragment
        self.query_dict: dict[str, list[str]] = {}
        if self.query:
            self.query_dict = parse_qs(self.query, keep_blank_values=True)


class JobURI(URI):
    """A Flux instance's URI: ``local`` (``local://PATH``) and ``remote``
    (``ssh://HOST/PATH``) forms; ``remote_hostname`` names HOST for a local URI
    (default: this host)."""

    force_local = bool(os.environ.get("FLUX_URI_RESOLVE_LOCAL"))

    def __init__(self, uri: str, remote_hostname: str | None = None) -> None:
        super().__init__(uri)
        if self.scheme == "":
            raise ValueError(f"JobURI '{uri}' does not have a valid scheme")
        self.path = re.sub("/+", "/", self.path)
        self.remote_hostname = remote_hostname
        self.remote_uri: str | None = None
        self.local_uri: str | None = None

    @property
    def remote(self) -> str:
        if self.remote_uri is None:
            if self.scheme == "ssh":
                self.remote_uri = self.uri
            elif self.scheme == "local":
                host = self.remote_hostname or os.uname().nodename
                self.remote_uri = f"ssh://{host}{self.path}"
            else:
                raise ValueError(f"Cannot convert JobURI with scheme {self.scheme} to remote")
        return self.remote_uri

    @property
    def local(self) -> str:
        if self.local_uri is None:
            if self.scheme == "local":
                self.local_uri = self.uri
            elif self.scheme == "ssh":
                self.local_uri = f"local://{self.path}"
            else:
                raise ValueError(f"Cannot convert JobURI with scheme {self.scheme} to local")
        return self.local_uri

    def __str__(self) -> str:
        return self.local if self.force_local else self.uri
