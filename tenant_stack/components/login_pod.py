"""Runbook step 5: the login release (sshd, nslcd, Slurm clients) with its LDAP and Slurm settings,
the authorized-keys Secret it mounts (one entry per user), its LoadBalancer's DNS name, and the SSH
config snippet sent to each user."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pulumi

from providers.kubernetes.resources import LoginPodsReady
from tenant_stack.components.kubernetes_objects import (
    SECRET_FIELDS,
    KubernetesObject,
    object_metadata,
)

TYPE = "gpu-tenants:login:LoginPod"


@dataclass(frozen=True)
class Ldap:
    uri: str
    base_dn: str
    bind_dn: str


@dataclass(frozen=True)
class LoginPodArgs:
    tenant: str
    namespace: pulumi.Input[str]
    chart_name: str
    chart_version: str
    runtime_class: str  # exempt from Pod Security: sshd switches users
    replicas: int
    hostname: str
    ldap: Ldap
    # Must name a Secret in the tenant's own namespace: the chart reads nothing from `auth`.
    ldap_bind_secret: pulumi.Input[str]
    slurm_controller_host: str
    home_filesystem: str
    scratch_filesystem: str
    # username -> the lines of that user's authorized_keys file
    authorized_keys: dict[str, list[str]]
    ssh_host_alias: str
    after: list[pulumi.Resource]


# Where the login pods' sshd listens, and the login Service's port.
SSH_PORT = 22


def ssh_config(alias: str, hostname: str, username: str) -> str:
    """The `~/.ssh/config` snippet of runbook step 5c for one user."""
    return (
        f"Host {alias}\n"
        f"    HostName       {hostname}\n"
        f"    Port           {SSH_PORT}\n"
        f"    User           {username}\n"
        "    IdentityFile   ~/.ssh/id_ed25519\n"
        "    ServerAliveInterval 30\n"
        "    ServerAliveCountMax 4\n"
    )


def _digest(values: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


def release_name(tenant: str) -> str:
    """The login release's name, which its Helm-made objects carry as app.kubernetes.io/instance."""
    return f"login-{tenant}"


class LoginPod(pulumi.ComponentResource):
    release: pulumi.Output[str]
    authorized_keys_secret: pulumi.Output[str]
    ssh_config: pulumi.Output[dict[str, str]]
    login_host: pulumi.Output[str]

    def __init__(
        self, name: str, args: LoginPodArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        tenant = args.tenant
        child = pulumi.ResourceOptions(parent=self, depends_on=args.after)
        keys = KubernetesObject(
            f"{name}-authorized-keys",
            api_version="v1",
            kind="Secret",
            metadata=object_metadata(f"{tenant}-authorized-keys", args.namespace),
            manifest={
                "type": "Opaque",
                "stringData": {
                    user: "\n".join(lines) + "\n" for user, lines in args.authorized_keys.items()
                },
            },
            secret_fields=SECRET_FIELDS,
            opts=child,
        )
        keys_name = keys.metadata.apply(lambda m: str(m["name"]))
        values = {
            "tenant": tenant,
            "replicas": args.replicas,
            "runtimeClassName": args.runtime_class,
            "ldap": {
                "uri": args.ldap.uri,
                "baseDN": args.ldap.base_dn,
                "bindDN": args.ldap.bind_dn,
                "bindPasswordSecret": args.ldap_bind_secret,
            },
            "slurm": {"controllerHost": args.slurm_controller_host},
            "sshKeysSecret": keys_name,
            "homeMount": {"type": "weka", "path": "/home", "filesystem": args.home_filesystem},
            "scratchMount": {
                "type": "weka",
                "path": "/scratch",
                "filesystem": args.scratch_filesystem,
            },
            "service": {
                "type": "LoadBalancer",
                "annotations": {"external-dns.alpha.kubernetes.io/hostname": args.hostname},
            },
        }
        release = KubernetesObject(
            f"{name}-release",
            api_version="helm.example.io/v1",
            kind="HelmRelease",
            metadata=object_metadata(release_name(tenant), args.namespace),
            manifest={
                "spec": {
                    "chart": {"name": args.chart_name, "version": args.chart_version},
                    "values": values,
                }
            },
            opts=child,
        )
        # Runbook 5a: `up` ends once users can log in, not when the release is only written.
        LoginPodsReady(
            f"{name}-ready",
            namespace=args.namespace,
            release=release_name(tenant),
            replicas=args.replicas,
            release_values=pulumi.Output.from_input(values).apply(_digest),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.after, release]),
        )
        self.release = release.urn.apply(lambda _: release_name(tenant))
        self.authorized_keys_secret = keys_name
        self.login_host = pulumi.Output.from_input(args.hostname)
        self.ssh_config = pulumi.Output.from_input(
            {
                user: ssh_config(args.ssh_host_alias, args.hostname, user)
                for user in args.authorized_keys
            }
        )
        self.register_outputs(
            {
                "release": self.release,
                "authorized_keys_secret": self.authorized_keys_secret,
                "login_host": self.login_host,
                "ssh_config": self.ssh_config,
            }
        )
