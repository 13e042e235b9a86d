#!/usr/bin/env bash
# `make demo`, for now: shows the engine, the Python language host and a dynamic provider at work
# on a throwaway stack. (The onboarding issues turn this into onboarding tenants/tenant-foo.yaml.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PULUMI_BACKEND_URL=file://$work/backend PULUMI_CONFIG_PASSPHRASE=demo
mkdir -p "$work/backend"
cd "$here/smoke"

pulumi stack init demo --non-interactive >/dev/null
pulumi config set path "$work/marker.txt"
pulumi config set content "written by a Python dynamic provider"
pulumi up --yes --skip-preview --non-interactive
echo "[demo] the provider wrote $work/marker.txt: '$(cat "$work/marker.txt")'"
pulumi preview --expect-no-changes --non-interactive >/dev/null
echo "[demo] pulumi preview --expect-no-changes: no changes"
pulumi destroy --yes --skip-preview --non-interactive >/dev/null
[[ ! -e $work/marker.txt ]] && echo "[demo] pulumi destroy removed the file; the engine works"
pulumi stack rm demo --yes --non-interactive >/dev/null
