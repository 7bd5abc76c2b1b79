"""flux-core's ``flux.core``: the handle lives in ``flux.core.handle``."""
