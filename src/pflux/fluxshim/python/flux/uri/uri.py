"""The URI classes and the resolver behind ``flux.uri`` (see the package's docstring).

``FluxURIResolver.resolve`` takes what ``flux uri`` takes: a native URI
(``local://``, ``ssh://``) as it is, ``jobid:PATH`` (a bare target is a job id),
where PATH is job ids down through nested instances, ``/`` the root instance and
``..`` the enclosing one, and ``pid:PID``, the instance a process runs in. The
query ``?local`` or ``?remote`` converts the result; ``?wait`` (jobid) waits for
the job's instance to post its URI. Errors are flux-core's: ``ValueError`` for a
target that resolves to nothing, ``NotImplementedError`` for an unknown scheme.
"""

from __future__ import annotations

from _pfluxcore import uri as _uri

from flux._joburi import URI, JobURI

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["URI", "FluxURIResolver", "JobURI", "URIResolverPlugin", "URIResolverURI"]


class URIResolverURI(URI):
    """A target to resolve (``jobid:PATH``...): its path may be digits alone, which
    ``urlparse`` would otherwise take for a port."""

    def __init__(self, uri: str) -> None:
        super().__init__(uri.replace(":", ":FXX", 1))
        self.uri = uri
        self.path = self.path.replace("FXX", "", 1)


class URIResolverPlugin:
    """A resolver of one scheme: ``describe()`` and ``resolve(URIResolverURI)``."""

    def __init__(self, *args: Any) -> None:
        pass

    def describe(self) -> str:
        raise NotImplementedError

    def resolve(self, uri: URIResolverURI) -> str:
        raise NotImplementedError


class _JobidResolver(URIResolverPlugin):
    def describe(self) -> str:
        return "Get URI for a given Flux JOBID"

    def resolve(self, uri: URIResolverURI) -> str:
        import flux

        wait = "wait" in uri.query_dict
        handle = flux.Flux()
        steps = _uri.job_steps(uri.path)
        if not steps:
            return str(handle.attr_get("local-uri"))
        found = ""
        for step in steps:
            if found:
                handle = flux.Flux(JobURI(found).local)
            if step == "/":
                while int(handle.attr_get("instance-level")) > 0:
                    handle = flux.Flux(handle.attr_get("parent-uri"))
                found = str(handle.attr_get("local-uri"))
            elif step == "..":
                level = int(handle.attr_get("instance-level"))
                found = str(handle.attr_get("parent-uri" if level > 0 else "local-uri"))
            else:
                found = _job_uri(handle, step, wait)
        return found


def _job_uri(handle: Any, text: str, wait: bool) -> str:
    """The URI the running job ``text``'s instance posted (with ``wait``: once it does)."""
    from flux.job.event import event_watch
    from flux.job.JobID import JobID
    from flux.job.list import job_list_id

    try:
        jobid = JobID(text)
    except (OSError, ValueError, TypeError):
        raise ValueError(f"{text} is not a valid jobid") from None
    uri: Any = None
    try:
        if wait:
            uri = _uri.posted(event_watch(handle, jobid))
        else:
            job = job_list_id(handle, jobid, attrs=["state", "annotations"]).get_jobinfo()
            if job.state != "RUN":
                raise ValueError(f"jobid {text} is not running")
            uri = str(job.user.uri)
    except FileNotFoundError:
        raise ValueError(f"jobid {text} not found") from None
    if not uri:
        raise ValueError(f"URI not found for job {text}")
    return str(uri)


class _PidResolver(URIResolverPlugin):
    def describe(self) -> str:
        return "Get FLUX_URI for a given local PID"

    def resolve(self, uri: URIResolverURI) -> str:
        text = uri.path
        try:
            pid = int(text)
        except ValueError:
            raise ValueError(f"PID must be an integer, got {text}") from None
        try:
            found = _uri.of_process(pid)
        except OSError as exc:
            raise ValueError(f"PID {pid}: {exc.strerror}") from None
        if found is None:
            raise ValueError(f"PID {pid} doesn't seem to have a FLUX_URI")
        return found


class FluxURIResolver:
    """Resolves a target to a ``JobURI`` by its scheme (``jobid`` when it has none)."""

    def __init__(self, pluginpath: Any = None) -> None:
        self.resolvers: dict[str, URIResolverPlugin] = {
            "jobid": _JobidResolver(),
            "pid": _PidResolver(),
        }

    def resolve(self, uri: str) -> JobURI:
        scheme = URIResolverURI(uri).scheme
        if scheme == "":
            scheme = "jobid"
            uri = f"jobid:{uri}"
        if scheme in ("ssh", "local"):
            return JobURI(uri)
        if scheme not in self.resolvers:
            raise NotImplementedError(f"No plugin for URI scheme {scheme}")
        target = URIResolverURI(uri)
        query = target.query_dict
        if "local" in query and "remote" in query:
            raise ValueError("Only one of 'local' or 'remote' is allowed")
        result = JobURI(self.resolvers[scheme].resolve(target))
        if "local" in query:
            return JobURI(result.local)
        if "remote" in query:
            return JobURI(result.remote)
        return result

    def plugins(self) -> dict[str, str]:
        """``{scheme: description}`` of the resolvers."""
        return {name: plugin.describe() for name, plugin in self.resolvers.items()}
