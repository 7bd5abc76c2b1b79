"""Logic that pflux and its ``flux`` package share, written once.

The ``flux`` package runs in the tools' own interpreters (Python 3.8 or newer,
standard library only) and may not import pflux; pflux imports this package
instead, so each rule exists once, with the dependency pointing from pflux to
here. It lives beside ``flux`` because only that directory is on a job's
PYTHONPATH (first there, so its name, private and pflux's own, is one no
other package uses). pflux finds it by name alone (``pflux._corefinder``),
never by putting this directory on its own ``sys.path``, where ``flux`` would
shadow a real flux-core. Modules here import only the standard library and
each other (relatively), raise plain standard exceptions whose messages each
face words as its own errors, and keep ``import`` cheap: no ``typing`` at run
time.
"""
