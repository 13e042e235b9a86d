"""A stand-in for external-dns and the DNS zone it writes to: the login Service's hostname (the
`external-dns.alpha.kubernetes.io/hostname` annotation the stack sets) resolves, on this
machine, to the address the load balancer gave the Service, as it resolves for a user when
external-dns publishes it in the site's zone.

What external-dns does with its Service source and `--domain-filter=<dns_domain>`:
- a Service of type LoadBalancer with the annotation (names separated by commas) gets an A
  record per name, each pointing at the addresses in its status (`loadBalancer.ingress[].ip`);
  one without an address yet gets none, until the load balancer gives it one;
- a name outside the domain is left alone;
- a name two Services claim stays with the one that has it, as external-dns' TXT registry
  keeps a record with the owner that made it (a TXT record beside it, in the zone); a name
  nobody has goes to the claimant created first (then by namespace and name).

The zone is served by CoreDNS (the one `make setup` builds) on 127.0.0.1:<dns port>, for the
domain only (it forwards nothing), from a zone file this controller rewrites when the records
change, with a new SOA serial, which CoreDNS looks for each second. `busybox nslookup
login.<slug>.<domain> $GPU_TENANTS_SANDBOX_DNS` asks it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from providers.files import write_atomic
from sandbox.kubernetes.client import (
    JSON,
    Changes,
    KubeClient,
    controller_arguments,
    controller_service,
    identity_client,
    log,
    reconcile_forever,
)
from sandbox.pki import Pki
from sandbox.service import Service, built_tool
from sandbox.supervisor import port_in_use

SERVICES = "/api/v1/services"
IDENTITY = "external-dns"
HOSTNAME_ANNOTATION = "external-dns.alpha.kubernetes.io/hostname"
# A short TTL, as external-dns' default: a moved address is seen within the minute.
TTL = 30
# The TXT registry's record of a name's owner (external-dns' format, its owner id "sandbox").
_OWNED_BY = "heritage=external-dns,external-dns/owner=sandbox,external-dns/resource=service/"


@dataclass(frozen=True)
class Record:
    name: str
    address: str
    owner: str  # the Service's namespace/name


# A host name as DNS takes it: labels of letters, digits and inner hyphens.
_HOST_NAME = re.compile(
    r"(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*"
)


def _in_domain(name: str, domain: str) -> bool:
    # What is no host name never reaches the zone file, which would not load.
    return _HOST_NAME.fullmatch(name) is not None and (
        name == domain or name.endswith(f".{domain}")
    )


def _claim_order(service: JSON) -> tuple[str, str, str]:
    meta = service["metadata"]
    return meta.get("creationTimestamp") or "", meta["namespace"], meta["name"]


def records(
    services: Iterable[JSON], domain: str, held: Mapping[str, str] | None = None
) -> list[Record]:
    """The A records external-dns would publish for `services`, by name then address. `held`
    (name -> owner) is who owns each name now, as the zone says: an owner that still claims a
    name keeps it."""
    claims: dict[str, dict[str, set[str]]] = {}  # name -> owner -> addresses, in claim order
    for service in sorted(services, key=_claim_order):
        meta = service["metadata"]
        wanted = (meta.get("annotations") or {}).get(HOSTNAME_ANNOTATION, "")
        ingress = (service.get("status") or {}).get("loadBalancer", {}).get("ingress") or []
        addresses = {i["ip"] for i in ingress if i.get("ip")}
        if service["spec"].get("type") != "LoadBalancer" or not addresses:
            continue  # no record, so no claim: external-dns owns only what it wrote
        owner = f"{meta['namespace']}/{meta['name']}"
        for name in {n.strip().rstrip(".").lower() for n in wanted.split(",")} - {""}:
            if _in_domain(name, domain):
                claims.setdefault(name, {})[owner] = addresses
    published = []
    for name, owners in claims.items():
        holder = (held or {}).get(name)
        owner = holder if holder in owners else next(iter(owners))
        published += [Record(name, address, owner) for address in owners[owner]]
    return sorted(published, key=lambda r: (r.name, r.address))


def zone_text(domain: str, published: Iterable[Record], serial: int) -> str:
    """The zone as a master file: its SOA (whose serial tells CoreDNS to read it again), and
    per name its A records and the TXT record by which external-dns' registry knows its own."""
    lines = [
        f"$ORIGIN {domain}.",
        f"@ {TTL} IN SOA ns hostmaster {serial} 3600 600 86400 {TTL}",
        f"@ {TTL} IN NS ns",
        f"ns {TTL} IN A 127.0.0.1",
    ]
    owners: dict[str, str] = {}
    for record in published:
        lines.append(f"{record.name}. {TTL} IN A {record.address}")
        owners[record.name] = record.owner
    lines += [f'{name}. {TTL} IN TXT "{_OWNED_BY}{owner}"' for name, owner in owners.items()]
    return "\n".join(lines) + "\n"


def serial_in(text: str) -> int:
    soa = next((line.split() for line in text.splitlines() if " IN SOA " in line), None)
    return int(soa[6]) if soa else 0


def owners_in(text: str) -> dict[str, str]:
    """Who owns each name of a zone `zone_text` wrote, as its TXT records say."""
    owned = {}
    for line in text.splitlines():
        name, _, value = line.partition(f' IN TXT "{_OWNED_BY}')
        if value:
            owned[name.split()[0].rstrip(".")] = value.rstrip('"')
    return owned


class ExternalDns:
    def __init__(self, client: KubeClient, domain: str, zone_file: Path) -> None:
        self.client = client
        self.domain = domain
        self.zone_file = zone_file

    def reconcile_all(self) -> None:
        before = self.zone_file.read_text() if self.zone_file.exists() else ""
        services = self.client.get(SERVICES)["items"]
        published = records(services, self.domain, owners_in(before))
        if before and zone_text(self.domain, published, serial_in(before)) == before:
            return
        text = zone_text(self.domain, published, serial_in(before) + 1)
        # Whole or not at all: CoreDNS may read the file at any moment.
        write_atomic(self.zone_file, text)
        log(f"zone {self.domain}: {len(published)} A records")


def corefile(domain: str, port: int, zone_file: Path) -> str:
    # No forward: a name outside the domain is refused, so nothing leaves the machine.
    return (
        f"{domain}:{port} {{\n"
        "    bind 127.0.0.1\n"
        f"    file {zone_file} {{\n"
        "        reload 1s\n"
        "    }\n"
        "    errors\n"
        "}\n"
    )


def external_dns_services(
    state_dir: Path,
    server: str,
    pki: Pki,
    domain: str,
    port: int,
    api_ready: Callable[[], bool],
) -> list[Service]:
    """The zone's DNS server, then the controller that writes its records."""
    zone_file = state_dir / "zone"
    config = state_dir / "Corefile"

    def prepare_zone() -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        if not zone_file.exists():
            zone_file.write_text(zone_text(domain, [], 1))
        config.write_text(corefile(domain, port, zone_file))

    zone = Service(
        name="dns-zone",
        argv=[built_tool("coredns"), f"-conf={config}"],
        ports=(port,),
        prepare=prepare_zone,
        revision=partial(corefile, domain, port, zone_file),
        ready=partial(port_in_use, port),
    )
    controller = controller_service(
        "external-dns", "sandbox.kubernetes.external_dns", server, pki.dir, api_ready,
        f"--domain={domain}", f"--zone-file={zone_file}", prepare=pki.ensure,
    )  # fmt: skip
    return [zone, controller]


def main(argv: list[str]) -> int:
    parser = controller_arguments(__doc__.splitlines()[0])
    parser.add_argument("--domain", required=True)
    parser.add_argument("--zone-file", type=Path, required=True)
    args = parser.parse_args(argv)

    client = partial(identity_client, args.server, args.pki_dir, IDENTITY)
    publisher = ExternalDns(client(), args.domain, args.zone_file)
    log(f"external-dns started (domain {args.domain}, zone {args.zone_file})")
    reconcile_forever(publisher.reconcile_all, Changes(client, [SERVICES]), args.interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
