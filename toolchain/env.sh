#!/usr/bin/env bash
# `make -s env`: the shell exports that let a person run `pulumi`, `kubectl` and the tests by hand:
#   eval "$(make -s env)"
# With --tools, only the tools (PATH, PULUMI_HOME): for fleet work in CI, where the environment
# already names the production backend and credentials, which the sandbox's must not replace.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=toolchain/paths.sh
source "$here/paths.sh"

path=$root/venv/bin:$KUBERNETES_DIR/bin:$KUBERNETES_WORKLOADS_DIR/bin:$VERSITYGW_DIR/bin:$COREDNS_DIR/bin:$KUBE_ROUTER_DIR/bin:$TEMPORAL_CLI_DIR/bin:$ORIGINAL_PATH
pulumi_on_path=$(PATH=$ORIGINAL_PATH command -v pulumi 2>/dev/null || true)
if [[ -z $pulumi_on_path || $pulumi_on_path == "$PULUMI_TOOLCHAIN_DIR"/* ||
  $("$pulumi_on_path" version 2>/dev/null) != "v$PULUMI_VERSION" ]]; then
  path=$PULUMI_TOOLCHAIN_DIR/bin:$path
fi

cat <<ENV
export GPU_TENANTS_ORIGINAL_PATH='$ORIGINAL_PATH'
export PATH='$path'
export GPU_TENANTS_CACHE='$GPU_TENANTS_CACHE'
export PULUMI_HOME='$PULUMI_HOME'
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
ENV
[[ ${1:-} == --tools ]] && exit 0

passphrase_file=$GPU_TENANTS_STATE/pulumi-passphrase
mkdir -p "$GPU_TENANTS_STATE/pulumi-state"
if [[ ! -s $passphrase_file ]]; then
  # A sandbox passphrase made once per machine; it is exported as a file so it never prints.
  (umask 077 && head -c 24 /dev/urandom | base64 >"$passphrase_file")
fi

cat <<ENV
export GPU_TENANTS_STATE='$GPU_TENANTS_STATE'
export PULUMI_BACKEND_URL='file://$GPU_TENANTS_STATE/pulumi-state'
export PULUMI_CONFIG_PASSPHRASE_FILE='$passphrase_file'
export GPU_TENANTS_LOGIN_IMAGE='$LOGIN_IMAGE_DIR/rootfs.tar'
ENV
# The sandbox's endpoints and credentials (files, so no secret prints), once the venv exists.
if [[ -x $root/venv/bin/python ]]; then
  (cd "$root" && GPU_TENANTS_STATE=$GPU_TENANTS_STATE venv/bin/python -m sandbox env)
fi
