"""Job execution (RFC 32): the job-exec service, its test mode, and its link to the shells.

``service`` is the broker service; ``testexec`` simulates runs from jobspec
attributes without any process; ``shellrun`` drives a real run: the guest
namespace, a job shell per rank (``shellpart``), and the records they send;
``takeover`` is how a run takes its job over from an earlier job-exec.
``plan`` (pure) is the job shell's description, with the shell options it
acts on (``shelloptions``, ``output``, ``input``, ``terminal``; ``output``
and ``input`` also make the guest's RFC 24 eventlogs of what the shells
relay) and the tasks' places (``pflux.spec.layout``). ``link`` starts and
talks to the shell launcher (``pflux.shell.launcher``, a process of its
own) through the records and the journal of shell sessions both ends share
(``pflux.protocol.shellwire``, ``pflux.protocol.shelljournal``); and
``leftovers`` is what a job-exec starting after a crash finds of the jobs
that were running, to take them over.
"""
