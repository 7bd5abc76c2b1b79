"""Job execution (RFC 32): the job-exec service, its test mode, and the shell launcher.

``service`` is the broker service; ``testexec`` simulates runs from jobspec
attributes without any process; ``shellrun`` drives a real run: the guest
namespace, a job shell, and the records it sends; ``plan`` (pure) is the job
shell's description, with the shell options it acts on (``shelloptions``); ``launcher`` is the one
process that forks a job shell (``pflux.shell``) per job, reached through
``link``; ``wire`` is the record format between them; ``journal`` the record
of shell sessions that keeps a job from ever running twice; and
``leftovers`` what a job-exec starting after a crash finds of the jobs that
were running, to take them over.
"""
