"""Judging the smoke tests (runbook step 7) on real tools' output, not the sandbox's stand-ins.

The fixtures under tests/fixtures/smoke are published captures: `nvidia-smi -L` of an
8x H100 80GB HBM3 node as a job given the whole node lists it, and of one GPU; nccl-tests'
`all_reduce_perf -b 8 -e 8G -f 2 -g 1` over two 8x H100 nodes (16 ranks, 338 GB/s at 8 GB), and
the rows of a two-node run whose bus bandwidth stayed near 41 GB/s (a fabric not doing its job).
And the storage test's `dd` (status=progress) and `df -h` as run here: on a directory of this
machine's root filesystem, and in a sandbox job on its /scratch mount.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from providers.slurm.batch import JobRecord, parse_sacct_jobs
from tenant_stack.smoke_judging import (
    FIX_CONSTRAIN_DEVICES,
    FIX_NETWORK,
    FIX_SCRATCH,
    AllReduce,
    all_reduce,
    df_mount,
    gpus_listed,
    gpus_queried,
    judge_all_reduce,
    judge_gpus,
    judge_partition,
    judge_scratch,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "smoke"
EIGHT_GPUS = (FIXTURES / "nvidia-smi-L-8-gpus.txt").read_text()
ONE_GPU = (FIXTURES / "nvidia-smi-L-1-gpu.txt").read_text()
HEALTHY = (FIXTURES / "all_reduce_perf-2x8-h100.txt").read_text()
SLOW = (FIXTURES / "all_reduce_perf-2x1-h100-low.txt").read_text()
QUERY = "NVIDIA H100 80GB HBM3, 81559 MiB\n"
H100_BAR = 190.0  # Pulumi.prod.yaml's h100-8x bar, the runbook's ~190 GB/s
NODES = ["gpu-14", "gpu-15"]

DONE = JobRecord("41", "COMPLETED", "0:0", "gpu-14")
FAILED = JobRecord("42", "FAILED", "1:0", "gpu-14")

ON_SCRATCH = (FIXTURES / "storage-on-a-scratch-mount.txt").read_text()
ON_ROOT = (FIXTURES / "storage-on-the-root-filesystem.txt").read_text()
ON_WEKA = (
    "Filesystem                      Size  Used Avail Use% Mounted on\n"
    "weka-backend-0/cluster-scratch   50T  1.2T   49T   3% /scratch\n"
)


def test_nvidia_smi_listings_are_read_as_gpus() -> None:
    assert len(gpus_listed(EIGHT_GPUS)) == 8
    assert gpus_listed(ONE_GPU) == ["GPU-c7a0294c-c2c2-5476-438c-fb468eaa223b"]
    assert gpus_listed("No devices were found\n") == []
    assert gpus_queried(QUERY + "H100 80GB HBM3, 81559 MiB\nsomething else\n") == [
        "NVIDIA H100 80GB HBM3, 81559 MiB",
        "H100 80GB HBM3, 81559 MiB",
    ]


def test_a_one_gpu_job_that_sees_one_gpu_passes() -> None:
    verdict = judge_gpus(DONE, ["gpu-14"], "gpu-14\n" + QUERY + ONE_GPU, asked=1)
    assert verdict.passed
    assert verdict.evidence == "1 GPU seen: NVIDIA H100 80GB HBM3, 81559 MiB"


def test_eight_gpus_seen_by_a_one_gpu_job_is_constrain_devices() -> None:
    # The runbook's script fails its `test` then: the job FAILED, and the cause is in its output.
    verdict = judge_gpus(FAILED, ["gpu-14"], QUERY * 8 + EIGHT_GPUS, asked=1)
    assert not verdict.passed
    assert verdict.evidence == "nvidia-smi -L lists 8 GPUs to a job that asked for 1"
    assert verdict.fix == FIX_CONSTRAIN_DEVICES
    assert "cgroup.conf" in verdict.fix


def test_a_gpu_job_that_failed_otherwise_says_how_without_a_fix() -> None:
    output = "gpu-14\nnvidia-smi: command not found\n"
    verdict = judge_gpus(JobRecord("43", "FAILED", "127:0", "gpu-14"), ["gpu-14"], output, 1)
    assert not verdict.passed
    assert verdict.evidence == (
        "0 of 1 GPUs listed; job failed (127:0); its output is in the run's directory"
    )
    assert verdict.fix == ""


# What a user's job might print for the sheet and the ledger: a file root could read (had the
# output been read as root through a link), a Markdown link, and lines shaped like the tools'.
PLANTED = (
    "root:$6$Zq0t$hash:19000:0:99999:7:::\n"
    "[click](https://evil.example/)\n"
    "NVIDIA H100 ](https://evil.example/) <b>, 81559 MiB\n"
    "Filesystem Size Used Avail Use% Mounted on\n"
    "weka [x](https://evil.example/) 1 1 0% /scratch\n"
)


def test_nothing_a_job_prints_reaches_the_evidence_unless_read_as_a_fact() -> None:
    verdicts = [
        judge_gpus(JobRecord("43", "FAILED", "1:0", "gpu-14"), ["gpu-14"], PLANTED, 1),
        judge_gpus(DONE, ["gpu-14"], ONE_GPU + PLANTED, 1),
        judge_all_reduce(FAILED, NODES, NODES, PLANTED, 190.0, "tenant-foo"),
        judge_scratch(DONE, ["gpu-14"], PLANTED, "/scratch/tenant-foo"),
    ]
    assert verdicts[1].passed
    assert verdicts[1].evidence == "1 GPU seen: no --query-gpu line"
    for verdict in verdicts:
        for planted in ("$6$", "evil.example", "<b>", "click"):
            assert planted not in verdict.evidence, verdict
    assert gpus_queried(QUERY + PLANTED) == ["NVIDIA H100 80GB HBM3, 81559 MiB"]


def test_all_reduce_is_read_at_its_largest_message() -> None:
    assert all_reduce(HEALTHY) == AllReduce(8589934592, 338.82, 0)
    assert all_reduce(SLOW) == AllReduce(33554432, 41.31, 0)
    assert all_reduce("srun: error: Unable to create step\n") is None


def test_a_healthy_two_node_all_reduce_passes_the_skus_bar() -> None:
    verdict = judge_all_reduce(DONE, NODES, NODES, HEALTHY, H100_BAR, "tenant-foo")
    assert verdict.passed, verdict
    assert verdict.node == "gpu-14, gpu-15"
    assert verdict.evidence == ("busbw 338.82 GB/s at 8589934592 B (the SKU's bar: 190 GB/s)")


def test_a_low_bus_bandwidth_fails_with_network_validation() -> None:
    verdict = judge_all_reduce(DONE, NODES, NODES, SLOW, H100_BAR, "tenant-foo")
    assert not verdict.passed
    assert verdict.evidence.startswith("busbw 41.31 GB/s at 33554432 B")
    assert verdict.fix == FIX_NETWORK


def test_wrong_values_fail_even_at_full_bandwidth() -> None:
    row = "  4294967296    1073741824     float     sum      -1    24361  176.31  330.58      3"
    output = HEALTHY + row + "    24365  176.27  330.51      0\n"
    verdict = judge_all_reduce(DONE, NODES, NODES, output, H100_BAR, "tenant-foo")
    assert not verdict.passed
    assert verdict.evidence.startswith("3 wrong values;")


def test_an_all_reduce_on_one_node_or_outside_the_partition_fails() -> None:
    one = judge_all_reduce(DONE, ["gpu-14"], NODES, HEALTHY, H100_BAR, "tenant-foo")
    assert not one.passed
    assert one.evidence.startswith("on 1 node(s); job completed")
    outside = judge_all_reduce(DONE, ["gpu-14", "gpu-16"], NODES, HEALTHY, H100_BAR, "tenant-foo")
    assert not outside.passed
    assert outside.evidence == "ran on gpu-16, outside the tenant's partition"
    assert "gpu-tenants diagnose tenant-foo" in outside.fix


def test_the_partition_must_hold_the_reservations_nodes() -> None:
    good = judge_partition("tenant-foo", "tenant-foo", NODES, NODES)
    assert good.passed
    assert good.evidence == "sinfo -p tenant-foo: gpu-14, gpu-15"
    other = judge_partition("tenant-foo", "tenant-foo", [*NODES, "gpu-13"], NODES)
    assert not other.passed
    assert other.evidence.endswith("(not reserved for it: gpu-13)")
    short = judge_partition("tenant-foo", "tenant-foo", ["gpu-14"], NODES)
    assert short.evidence.endswith("(reserved but missing: gpu-15)")
    gone = judge_partition("tenant-foo", "tenant-foo", [], NODES)
    assert gone.evidence == "sinfo -p tenant-foo: no such partition"
    # An on-demand tenant has no reservation: any nodes will do.
    assert judge_partition("tenant-baz", "tenant-baz", ["gpu-03"], []).passed


def test_df_is_read_under_its_header() -> None:
    assert df_mount(ON_WEKA) == ("50T", "/scratch")
    assert df_mount(ON_SCRATCH) == ("252G", "/scratch")
    assert df_mount(ON_ROOT) == ("252G", "/")
    assert df_mount("df: /scratch/x: No such file or directory\n") is None


def test_scratch_on_its_mount_written_and_read_back_passes() -> None:
    verdict = judge_scratch(DONE, ["gpu-14"], ON_SCRATCH, "/scratch/tenant-foo")
    assert verdict.passed
    assert verdict.evidence == "wrote and read back 64 MiB; df -h: 252G on /scratch"


def test_scratch_on_the_root_filesystem_is_the_nodesets_missing_mount() -> None:
    # dd's progress lines say `copied` too; only its summaries count.
    verdict = judge_scratch(DONE, ["gpu-14"], ON_ROOT, "/scratch/tenant-foo")
    assert not verdict.passed
    assert verdict.evidence == "df -h /scratch/tenant-foo: 252G on / (the node's root filesystem)"
    assert verdict.fix == FIX_SCRATCH


def test_scratch_missing_on_the_node_is_the_nodesets_missing_mount() -> None:
    output = (
        "/var/spool/slurmd/job00042/slurm_script: line 6: cd: /scratch/tenant-foo:"
        " No such file or directory\n"
    )
    verdict = judge_scratch(FAILED, ["gpu-14"], output, "/scratch/tenant-foo")
    assert not verdict.passed
    assert verdict.evidence == "/scratch/tenant-foo does not exist on the node"
    assert verdict.fix == FIX_SCRATCH


@pytest.mark.parametrize(
    "output", [ON_WEKA, ON_SCRATCH.split("64+0 records in\n", 2)[-1], ON_ROOT.split("\n")[0]]
)
def test_a_write_or_read_that_did_not_finish_fails(output: str) -> None:
    verdict = judge_scratch(FAILED, ["gpu-14"], output, "/scratch/tenant-foo")
    assert not verdict.passed
    assert verdict.evidence == "job failed (1:0); its output is in the run's directory"


def test_sacct_lines_are_read_as_job_records() -> None:
    text = (
        "41|COMPLETED|0:0|gpu-14|1|2026-12-04T18:00:00\n"
        "42|CANCELLED by 0|0:15|gpu-[14-15]|2|2026-12-04T18:00:01\n"
        "43|PENDING|0:0|None assigned|2|2026-12-04T18:00:02\n"
    )
    records = parse_sacct_jobs(text)
    assert records["41"].finished
    submitted = datetime(2026, 12, 4, 18, 0, 1)
    assert records["42"] == JobRecord("42", "CANCELLED", "0:15", "gpu-[14-15]", submitted, 2)
    assert records["42"].finished
    assert not records["43"].finished
