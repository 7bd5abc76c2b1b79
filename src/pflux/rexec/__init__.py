"""rexec: a command run on a rank of the instance outside any job (``pflux exec``)."""
