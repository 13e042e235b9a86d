"""The checks of the REST and command backends, through the program's own clients and settings
(the same environment variables the providers read at run time), reading only."""

from __future__ import annotations

import asyncio
import os
import re
import ssl
from collections.abc import Mapping
from typing import Any

from providers.authentik.client import AuthentikClient
from providers.authentik.settings import Settings as AuthentikSettings
from providers.command import Transport
from providers.errors import AuthentikError
from providers.retention.client import RetentionStore
from providers.retention.settings import Settings as RetentionSettings
from providers.slurm.settings import Settings as SlurmSettings
from providers.weka.client import WekaClient
from providers.weka.settings import ROOT_ORG, Credentials
from providers.weka.settings import Settings as WekaSettings
from tenant_stack.doctor.report import Check, CheckFailedError, Steps
from tenant_stack.doctor.supported import judge

__all__ = [
    "authentik_user_may",
    "check_authentik",
    "check_retention",
    "check_slurm",
    "check_temporal",
    "check_weka",
    "slurm_config",
    "slurm_operator_may",
    "weka_user_may",
]

# What the program makes in Weka: organizations (with their admins), as the Root organization's
# cluster admin (providers/weka/settings.py).
WEKA_ROLE = "ClusterAdmin"
# Who may run sacctmgr's writes: root and SlurmUser always, others with this AdminLevel.
SLURM_ADMIN_LEVELS = ("Operator", "Administrator")
# A key no one writes: its HEAD tells a bucket that exists from one that does not.
_PROBE_KEY = ".gpu-tenants-doctor-probe"


def check_authentik(timeout: float) -> list[Check]:
    steps = Steps("authentik")
    found: dict[str, Any] = {}

    def reachable() -> str:
        settings = AuthentikSettings.from_environment()
        verify: ssl.SSLContext | bool = True
        if settings.ca_file is not None:
            verify = ssl.create_default_context(cafile=str(settings.ca_file))
        # One try within the doctor's bound: the providers' retries would outlast it.
        client = AuthentikClient(
            base_url=settings.url,
            token=settings.token,
            verify=verify,
            timeout=timeout,
            max_attempts=1,
        )
        found["client"] = client
        try:
            found["me"] = client.me()
        except AuthentikError as error:
            # An HTTP answer (a refused token) is the next check's failure: the server is up.
            if not error.backend_says.startswith("HTTP "):
                raise
            found["refused"] = error
        return f"AUTHENTIK_URL={settings.url} answers"

    def token() -> str:
        if "refused" in found:
            raise found["refused"]
        return authentik_user_may(found["me"])

    try:
        steps.step("reachable", reachable)
        steps.step("token", token)
        steps.step("version", lambda: judge("authentik", found["client"].version()))
    finally:
        if "client" in found:
            found["client"].close()
    return steps.checks


def authentik_user_may(user: Mapping[str, Any]) -> str:
    """The detail for a token whose user (`GET /core/users/me/`'s `user`) may read and write
    users and groups: a superuser, as the provider's settings ask. CheckFailedError otherwise."""
    name = user.get("username", "?")
    if not user.get("is_superuser"):
        raise CheckFailedError(
            f"the token's user {name!r} is not a superuser: it cannot create, change and "
            "delete users and groups",
            "use a superuser's API token (a member of a group with is_superuser, such as "
            "authentik Admins) in AUTHENTIK_TOKEN or AUTHENTIK_TOKEN_FILE",
        )
    return f"user {name!r}, a superuser: may read and write users and groups"


def weka_user_may(me: Mapping[str, Any], username: str) -> str:
    """The detail for a Weka user (`GET /users/whoami`) with the role the program needs;
    CheckFailedError otherwise."""
    role = str(me.get("role", ""))
    if role != WEKA_ROLE or me.get("org_name", ROOT_ORG) != ROOT_ORG:
        raise CheckFailedError(
            f"{username!r} has role {role!r} in organization {me.get('org_name')!r}; the program "
            f"creates organizations, which needs {WEKA_ROLE} in the {ROOT_ORG} organization",
            f"set WEKA_USERNAME to a {WEKA_ROLE} of the {ROOT_ORG} organization",
        )
    return f"{username!r} is a {WEKA_ROLE} of organization {ROOT_ORG!r}"


def check_weka(timeout: float) -> list[Check]:
    steps = Steps("weka")
    found: dict[str, Any] = {}

    def reachable() -> str:
        settings = WekaSettings.from_environment()
        client = WekaClient(
            settings.url,
            Credentials(settings.username, settings.password),
            verify=settings.tls_verify(),
            timeout=timeout,
            retry_delays=(),
        )
        found["client"] = client
        found["settings"] = settings
        found["logged_in"] = client.logs_in()
        return f"WEKA_URL={settings.url} answers"

    def login() -> str:
        settings: WekaSettings = found["settings"]
        if not found["logged_in"]:
            raise CheckFailedError(
                f"Weka refused the login of {settings.username!r} in organization 'Root'",
                "check WEKA_USERNAME and WEKA_PASSWORD (or WEKA_PASSWORD_FILE)",
            )
        me = found["client"].request("GET", "users/whoami", doing="reading the Weka user")
        return weka_user_may(me, settings.username)

    def version() -> str:
        cluster = found["client"].request("GET", "cluster", doing="reading the Weka cluster")
        return judge("weka", str(cluster.get("release", "")))

    try:
        steps.step("reachable", reachable)
        steps.step("user role", login)
        steps.step("version", version)
    finally:
        if "client" in found:
            found["client"].close()
    return steps.checks


def slurm_config(text: str) -> dict[str, str]:
    """The `Key = value` lines of `scontrol show config` or `sacctmgr show configuration`."""
    pairs = (re.fullmatch(r"(\S+)\s*=\s*(.*)", line.strip()) for line in text.splitlines())
    return {pair.group(1): pair.group(2).strip() for pair in pairs if pair}


def slurm_operator_may(user: str, level: str) -> str:
    """The detail for a user whose AdminLevel (`sacctmgr show user format=adminlevel`) lets it
    add and delete accounts, users and QoS; CheckFailedError otherwise."""
    if level not in SLURM_ADMIN_LEVELS:
        raise CheckFailedError(
            f"{user!r} runs the Slurm commands with AdminLevel {level or 'None'!r}: sacctmgr "
            "refuses its writes",
            f"sacctmgr -i modify user {user} set AdminLevel=Operator (as a Slurm admin)",
        )
    return f"{user!r} is a Slurm {level}"


def check_slurm(timeout: float) -> list[Check]:
    """slurmctld through `scontrol show config`, slurmdbd through `sacctmgr show configuration`
    (whose SLURMDBD_VERSION slurmdbd itself reports), then the operator's AdminLevel, all over
    the provider's transport (SLURM_TRANSPORT), each command bounded by `timeout`."""
    steps = Steps("slurm")
    found: dict[str, Any] = {}

    def run(argv: list[str], doing: str, fix: str) -> str:
        transport: Transport = found["transport"]
        said = transport.run(argv)
        if not said.ok:
            raise CheckFailedError(
                f"{doing}: `{' '.join(transport.command(argv))}`: {said.words}", fix
            )
        return said.stdout

    def controller() -> str:
        settings = SlurmSettings.from_environment({**os.environ, "SLURM_TIMEOUT": f"{timeout:g}"})
        found["transport"] = settings.make_transport()
        config = slurm_config(
            run(
                ["scontrol", "show", "config"],
                "reading slurmctld's configuration",
                "check that slurmctld is up (`scontrol ping`) and SLURM_CONF or SLURM_TRANSPORT",
            )
        )
        found["ctld"] = config
        return f"slurmctld of cluster {config.get('ClusterName', '?')!r} answers"

    def database() -> str:
        config = slurm_config(
            run(
                ["sacctmgr", "-n", "-P", "show", "configuration"],
                "reading slurmdbd's configuration",
                "check that slurmdbd is up (`sacctmgr show cluster`) and AccountingStoragePass",
            )
        )
        found["dbd"] = config
        return "slurmdbd answers"

    def operator() -> str:
        user = run(["id", "-un"], "reading who runs the Slurm commands", "check the transport")
        user = user.strip()
        slurm_user = found["ctld"].get("SlurmUser", "").split("(")[0]
        if user in ("root", slurm_user):
            return f"{user!r} runs the commands: Slurm's own user, an admin"
        level = run(
            ["sacctmgr", "-n", "-P", "show", "user", user, "format=adminlevel"],
            f"reading the AdminLevel of {user!r}",
            "check that slurmdbd is up",
        ).strip()
        return slurm_operator_may(user, level)

    steps.step("slurmctld", controller)
    steps.step(
        "slurmctld version", lambda: judge("slurmctld", found["ctld"].get("SLURM_VERSION", ""))
    )
    steps.step("slurmdbd", database)
    steps.step(
        "slurmdbd version", lambda: judge("slurmdbd", found["dbd"].get("SLURMDBD_VERSION", ""))
    )
    steps.step("operator", operator)
    return steps.checks


def check_retention() -> list[Check]:
    steps = Steps("retention")
    found: dict[str, Any] = {}

    def bucket() -> str:
        settings = RetentionSettings.from_environment()
        found["settings"] = settings
        with RetentionStore(settings) as store:
            # None for a missing key of an existing bucket; a missing bucket raises.
            store.head(_PROBE_KEY)
        return f"{store.url()} exists at {settings.endpoint}"

    def ledger() -> str:
        settings: RetentionSettings = found["settings"]
        if settings.ledger_bucket is None:
            raise CheckFailedError(
                "RETENTION_S3_LEDGER_BUCKET is not set: the ledger would share the archives' "
                "bucket, without Object Lock, so its entries could be deleted",
                "create a bucket with Object Lock enabled and set RETENTION_S3_LEDGER_BUCKET to it",
            )
        with RetentionStore(settings.of_ledger()) as store:
            store.head(_PROBE_KEY)
            if not store.object_lock_enabled():
                raise CheckFailedError(
                    f"{store.url()} exists but was made without Object Lock",
                    "create the ledger's bucket with Object Lock enabled (it cannot be turned on "
                    "later on most stores) and set RETENTION_S3_LEDGER_BUCKET to it",
                )
            return f"{store.url()} exists, with Object Lock"

    steps.step("bucket", bucket)
    if "settings" not in found:
        steps.step("ledger bucket", ledger)  # not run: there are no settings to read it with
        return steps.checks
    # The ledger's bucket is another bucket: it is checked whatever the archives' answered.
    ledger_steps = Steps("retention")
    ledger_steps.step("ledger bucket", ledger)
    return steps.checks + ledger_steps.checks


def check_temporal(address: str | None, timeout: float) -> list[Check]:
    """Only when TEMPORAL_ADDRESS is set: the fleet commands and workers use Temporal, the stacks
    do not. Connects as they do (`workflows.worker.connect`) and asks the server's version."""
    steps = Steps("temporal")
    if not address:
        return [Check("temporal reachable", "ok", "not configured (TEMPORAL_ADDRESS unset): "
                      "the fleet commands run their stacks on this machine")]  # fmt: skip
    # Imported before the clock starts: loading the workflows takes seconds on a busy machine.
    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

    from tenant_stack.workflows.worker import connect

    async def server_version() -> str:
        client = await connect()
        info = await client.workflow_service.get_system_info(GetSystemInfoRequest())
        return str(info.server_version)

    found: dict[str, str] = {}

    def reachable() -> str:
        try:
            found["version"] = asyncio.run(asyncio.wait_for(server_version(), timeout))
        except TimeoutError as error:
            raise _unreachable(address, f"no answer within {timeout:g}s") from error
        except (RuntimeError, OSError) as error:
            raise _unreachable(address, f"{type(error).__name__}: {error}") from error
        return f"TEMPORAL_ADDRESS={address} answers"

    steps.step("reachable", reachable)
    steps.step("version", lambda: judge("temporal", found["version"]))
    return steps.checks


def _unreachable(address: str, why: str) -> CheckFailedError:
    return CheckFailedError(
        f"cannot reach Temporal at {address}: {why}",
        "start Temporal there, or set TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE) to where it "
        "runs, or unset it to run the fleet on this machine",
    )
