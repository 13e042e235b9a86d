#!/usr/bin/env bash
# Per binary: cold build time (empty Go build cache and empty project cache; Go module downloads
# are shared and not counted), cache-hit time (what `make setup` spends on it once built), their
# ratio, and the size on disk of its cache directory. All figures come from this one run, which
# takes about as long as a first `make setup`.
set -euo pipefail
here=$(cd "$(dirname "$0")/../toolchain" && pwd)
# shellcheck source=toolchain/paths.sh
source "$here/paths.sh"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Prints the wall time of "$@" in seconds; its output goes to a log shown only on failure.
seconds() {
  local t0=$EPOCHREALTIME
  "$@" >"$scratch/last.log" 2>&1 || { cat "$scratch/last.log" >&2; return 1; }
  python3 -c "print(f'{$EPOCHREALTIME - $t0:.3f}')"
}

printf "%-50s %9s %9s %8s %9s\n" binary cold_s cached_s ratio size_MiB
for step in pulumi_engine kubernetes_provider_binary kubernetes_control_plane versitygw; do
  case $step in
    pulumi_engine) dir=$PULUMI_TOOLCHAIN_DIR name="pulumi + language host" ;;
    kubernetes_provider_binary) dir=$KUBERNETES_PROVIDER_DIR name="pulumi-resource-kubernetes" ;;
    kubernetes_control_plane) dir=$KUBERNETES_DIR name="kube-apiserver, controller-manager, kubectl, etcd" ;;
    versitygw) dir=$VERSITYGW_DIR name="versitygw (S3 gateway)" ;;
  esac
  echo "[bench] cold build: $name" >&2
  cold=$(GOCACHE=$scratch/gocache GPU_TENANTS_CACHE=$scratch/cache seconds "$here/setup.sh" "$step")
  rm -rf "$scratch/gocache" "$scratch/cache"
  hit=$(seconds "$here/setup.sh" "$step")
  size=$(du -sb "$dir" | cut -f1)
  python3 -c "print(f'{\"$name\":50} {$cold:9.1f} {$hit:9.2f} {$cold / $hit:8.0f} {$size / 2**20:9.1f}')"
done
