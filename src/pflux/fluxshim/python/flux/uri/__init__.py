"""flux-core's ``flux.uri``: a Flux URI (``JobURI``: ``local``/``remote`` forms) and
the resolver of targets (``jobid:ID``, a bare id, ``pid:PID``) to one.

A job's URI is the one the nested instance running in it posted to it (its memo
``uri``); pflux's are ``local://`` URIs, reached on this host only.
"""

from flux.uri.uri import URI, FluxURIResolver, JobURI, URIResolverPlugin, URIResolverURI

__all__ = ["URI", "FluxURIResolver", "JobURI", "URIResolverPlugin", "URIResolverURI"]
