"""flux.job.submit's J (RFC 15): the owner's jobspec goes as it is, a guest's signed, a
``pre_signed`` J as given, and a guest that cannot sign sends nothing."""

from __future__ import annotations

import json
import os

from _pfluxcore.sign import unwrap

from pflux.api import Client
from pflux.spec.kvs_keys import job_key
from support.instance import LiveInstance
from support.shim import flux_output

JOBSPEC = """
import errno, json, os, flux, flux.job
from _pfluxcore import sign
spec = flux.job.JobspecV1.from_command(["true"])
h = flux.Flux()
"""


def _stored_j(uri: str, jobid: int) -> str:
    with Client(uri) as client:
        return str(client.kvs_get(job_key(jobid, "J")))


def test_the_owners_jobspec_goes_unsigned(instance: LiveInstance) -> None:
    out = flux_output(
        JOBSPEC + "print(int(flux.job.submit(h, spec, urgency=0)), h._signs)", instance.uri
    )
    jobid, signs = out.split()
    assert signs == "False"
    signed = unwrap(_stored_j(instance.uri, int(jobid)), allowed=("none",))
    assert (signed.userid, signed.mechanism) == (os.getuid(), "none")


def test_a_pre_signed_j_is_sent_as_given(instance: LiveInstance) -> None:
    code = JOBSPEC + (
        "J = sign.wrap(spec.dumps(), mechanism='none', userid=os.getuid())\n"
        "print(int(flux.job.submit(h, J, urgency=0, pre_signed=True)))\n"
        "print(J)"
    )
    jobid, signed = flux_output(code, instance.uri).split()
    assert _stored_j(instance.uri, int(jobid)) == signed
    assert json.loads(unwrap(signed, allowed=("none",)).payload)["version"] == 1


def test_a_guest_that_cannot_sign_sends_nothing(instance: LiveInstance) -> None:
    code = JOBSPEC + (
        "sign.LIBMUNGE = 'libmunge-absent.so.2'\n"
        "h._signs = True  # as a guest's handle decides\n"
        "try:\n"
        "    flux.job.submit(h, spec)\n"
        "except OSError as exc:\n"
        "    print(errno.errorcode[exc.errno], exc.strerror)\n"
    )
    assert flux_output(code, instance.uri).strip() == (
        "EPERM cannot sign the job request: MUNGE is not installed (libmunge-absent.so.2 not found)"
    )
