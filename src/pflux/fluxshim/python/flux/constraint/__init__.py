"""``flux.constraint``: RFC 35 constraint queries (see ``flux.constraint.parser``)."""
