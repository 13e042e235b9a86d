#!/usr/bin/env bash
# `make demo`: onboards tenants/tenant-foo.yaml onto the local sandbox with the real engine, as an
# operator would with `pulumi up --stack tenant-foo`, then says where to look. Run it again and
# `pulumi up` finds nothing to change.
set -euo pipefail
cd "$(dirname "$0")/.."

pulumi stack select --create tenant-foo --non-interactive
pulumi up --stack tenant-foo --yes --non-interactive --suppress-progress

cat <<'TXT'

[demo] tenant-foo is onboarded on the sandbox. Where to look (after: eval "$(make -s env)"):
  pulumi stack output --stack tenant-foo                  the reservation, namespace, login host, SSH snippets
  kubectl get reservation tenant-foo-reservation          Ready once the operator labelled all 8 nodes
  kubectl get nodes -l reserved.tenant=tenant-foo         gpu-01..gpu-08, tainted reserved.tenant=tenant-foo
  kubectl get namespace tenant-foo --show-labels          restricted pod security
  kubectl -n tenant-foo get resourcequota,limitrange,reservationbinding,networkpolicy,rolebinding,secret,helmrelease
  pulumi preview --stack tenant-foo --expect-no-changes   no drift
  pulumi destroy --stack tenant-foo                       offboard it again (nodes lose label and taint)
TXT
