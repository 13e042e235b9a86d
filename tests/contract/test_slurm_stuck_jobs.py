"""A job stuck completing on a real slurmd node, as offboarding's drain meets it: the node's epilog
hangs (sandbox/slurm/faults.py), as one waiting on a wedged process does, so no scancel ends
the job (the offboarding runbook's "scancel hits a job in CG"). The drain fails at once with
the runbook's way out instead of waiting out its time, and the way out it names works."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from providers.errors import SlurmError
from providers.slurm.drain_provider import DrainedProvider, DrainStartProvider
from providers.slurm.queue import SlurmQueue, stuck_completing
from providers.slurm.settings import Settings
from sandbox.layout import SandboxLayout
from sandbox.slurm.faults import epilog_hangs
from tests.backends import run, squeue_job, wait_for

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

ACCOUNT = "stuck-cg"
NODE = "gpu-15"  # a slurmd node: its jobs really run, and end through its epilog
WAIT = 120  # the drain's bound on one `up`: it must fail well before it


@pytest.fixture
def account() -> Iterator[str]:
    """An account whose jobs land on NODE alone, through a partition of its own."""
    run("sacctmgr", "-i", "add", "account", ACCOUNT, f"Organization={ACCOUNT}")
    run("sacctmgr", "-i", "add", "user", "root", f"account={ACCOUNT}")
    run("scontrol", "create", f"PartitionName={ACCOUNT}", f"Nodes={NODE}",
        f"AllowAccounts={ACCOUNT}", "State=UP")  # fmt: skip
    yield ACCOUNT
    run("scontrol", "delete", f"PartitionName={ACCOUNT}")
    run("sacctmgr", "-i", "delete", "user", "root", f"account={ACCOUNT}")
    run("sacctmgr", "-i", "delete", "account", ACCOUNT)


def node_state() -> str:
    return run("sinfo", "-h", "-n", NODE, "-o", "%T").strip()


def test_a_job_stuck_completing_fails_the_drain_at_once_with_the_way_out(
    sandbox: SandboxLayout, account: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stuck after 3 s, not 5 minutes: this job's processes are gone at the drain's TERM, so only
    # the epilog holds it (a job that outlives its TERM may take KillWait, 30 s, to end).
    monkeypatch.setenv("SLURM_STUCK_COMPLETING_SECONDS", "3")
    try:
        with epilog_hangs(sandbox.slurm, NODE):
            job = run("sbatch", "--parsable", f"--account={account}", f"--partition={account}",
                      "--mem=64M", "--time=00:10:00", "--output=/dev/null",
                      "--wrap=sleep 600").strip()  # fmt: skip
            wait_for(f"job {job} to run", lambda: squeue_job(int(job)) == "RUNNING", 60)
            # A hard drain whose grace is over: TERM, then the KILL at its first look.
            started = (
                DrainStartProvider()
                .create({"tenant": account, "accounts": [account], "mode": "hard"})
                .outs
            )
            assert started is not None
            drain = {
                "tenant": account,
                "accounts": [account],
                "mode": "hard",
                "started_at": started["started_at"],
                "term_sent_at": started["term_sent_at"],
                "timeout_seconds": 0,
                "wait_seconds": WAIT,
            }
            began = time.monotonic()
            with pytest.raises(SlurmError) as raised:
                DrainedProvider().create(drain)
            assert time.monotonic() - began < WAIT / 2
            said = raised.value
            assert f"1 jobs stuck completing (CG): {job} (root, completing) on {NODE}, ended " in (
                said.backend_says
            )
            assert f"scontrol update NodeName={NODE} State=DOWN Reason=stuck-epilog" in (
                said.next_step
            )
            # What diagnose reads: the same job, judged the same way.
            settings = Settings.from_environment()
            jobs = SlurmQueue(settings.make_transport()).jobs([account])
            stuck = stuck_completing(jobs, settings.stuck_completing, time.time())
            assert [(j.id, j.state, j.nodes) for j in stuck] == [(job, "COMPLETING", NODE)]
            # The way out the error names: Slurm lets go of the job, and the drain completes.
            run("scontrol", "update", f"NodeName={NODE}", "State=DOWN", "Reason=stuck-epilog")
            assert "drained_at" in (DrainedProvider().create(drain).outs or {})
            assert squeue_job(int(job)) == ""
    finally:
        # Refused, and harmless, when the node was never set DOWN.
        subprocess.run(["scontrol", "update", f"NodeName={NODE}", "State=RESUME"],
                       capture_output=True, check=False)  # fmt: skip
        wait_for(f"{NODE} to take jobs again", lambda: node_state() == "idle", 30)
