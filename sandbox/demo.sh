#!/usr/bin/env bash
# `make demo`: onboards tenants/tenant-foo.yaml onto the local sandbox with the real engine, as an
# operator would with `pulumi up --stack tenant-foo`, then says where to look. Run it again and
# `pulumi up` finds nothing to change. It runs in the sandbox's project ($GPU_TENANTS_PROJECT,
# made by `python -m sandbox up`), so the sandbox's stack config never lands in the checkout.
set -euo pipefail
cd "$GPU_TENANTS_PROJECT"

pulumi stack select --create tenant-foo --non-interactive
# --refresh: a rehearsal sandbox is often changed by hand between runs; up puts it back.
pulumi up --stack tenant-foo --refresh --yes --non-interactive --suppress-progress

cat <<'TXT'

[demo] tenant-foo is onboarded on the sandbox. Where to look (after: eval "$(make -s env)" and
cd "$GPU_TENANTS_PROJECT", where the sandbox's stacks live):
  pulumi stack output --stack tenant-foo                  the reservation, namespace, login host, SSH snippets
  kubectl get reservation tenant-foo-reservation          Ready once the operator labelled all 8 nodes
  kubectl get nodes -l reserved.tenant=tenant-foo         gpu-01..gpu-08, tainted reserved.tenant=tenant-foo
  kubectl get namespace tenant-foo --show-labels          restricted pod security
  kubectl -n tenant-foo get resourcequota,limitrange,reservationbinding,networkpolicy,rolebinding,secret,helmrelease,pvc
  sacctmgr -P -n show assoc account=tenant-foo,ml-team-foo  the account, sub-account and user associations
  sacctmgr -P -n show qos normal-foo,interactive-foo      the tenant's QoS
  scontrol show partition tenant-foo                      nodes gpu-[01-08], AllowAccounts, MaxTime
  ls -ln "$WEKA_MOUNT_ROOT/tenant-foo/tenant-foo-home"     the users' home directories (uid:gid, 0700) on Weka
  curl -s -H "Authorization: Bearer $(cat $AUTHENTIK_TOKEN_FILE)" "$AUTHENTIK_URL/api/v3/core/groups/?name=tenant-foo"
  pulumi stack output connection_sheet --stack tenant-foo  the handover sheet to send the tenant
  pulumi preview --stack tenant-foo --refresh --expect-no-changes   no drift in any backend
TXT
