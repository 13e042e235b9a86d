#!/usr/bin/env bash
# Prints the version of every toolchain part through the same environment `make -s env` gives a
# person, and fails naming the first part that is missing or of the wrong version.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
eval "$("$here/env.sh")"
# shellcheck source=toolchain/paths.sh
source "$here/paths.sh"

fail() { printf '[check] ERROR: %s\n' "$*" >&2; exit 1; }

got=$(pulumi version) || fail "pulumi is not on PATH; run make setup"
[[ $got == "v$PULUMI_VERSION" ]] || fail "pulumi is $got, want v$PULUMI_VERSION"
echo "[check] pulumi $got ($(command -v pulumi))"
command -v pulumi-language-python >/dev/null || fail "pulumi-language-python is not beside pulumi"

plugins=$(pulumi plugin ls)
grep -Eq "^kubernetes +resource +$KUBERNETES_PROVIDER_VERSION " <<<"$plugins" ||
  fail "plugin resource kubernetes $KUBERNETES_PROVIDER_VERSION is not installed in $PULUMI_HOME"
echo "[check] plugin resource kubernetes $KUBERNETES_PROVIDER_VERSION"

got=$(kube-apiserver --version) || fail "kube-apiserver is missing; run make setup"
[[ $got == "Kubernetes v$KUBERNETES_VERSION" ]] || fail "kube-apiserver reports '$got', want v$KUBERNETES_VERSION"
echo "[check] kube-apiserver: $got"
got=$(kube-controller-manager --version) || fail "kube-controller-manager is missing; run make setup"
echo "[check] kube-controller-manager: $got"
for binary in kube-scheduler kubelet kube-proxy; do
  got=$("$binary" --version) || fail "$binary is missing; run make setup"
  [[ $got == "Kubernetes v$KUBERNETES_VERSION" ]] || fail "$binary reports '$got', want v$KUBERNETES_VERSION"
  echo "[check] $binary: $got"
done
# First lines taken in bash: `| head -n1` could end the tool with SIGPIPE, failing under pipefail.
got=$(kubectl version --client) || fail "kubectl is missing; run make setup"
got=${got%%$'\n'*}
[[ $got == "Client Version: v$KUBERNETES_VERSION" ]] || fail "kubectl is '$got', want v$KUBERNETES_VERSION first on PATH"
echo "[check] kubectl: $got"
got=$(etcd --version) || fail "etcd is missing; run make setup"
got=${got%%$'\n'*}
[[ $got == "etcd Version: $ETCD_VERSION" ]] || fail "etcd reports '$got', want $ETCD_VERSION"
echo "[check] $got"
got=$(versitygw --version) || fail "versitygw is missing; run make setup"
got=$(sed -n 's/^Version *: *//p' <<<"$got")
[[ $got == "v$VERSITYGW_VERSION" ]] || fail "versitygw reports version '$got', want v$VERSITYGW_VERSION"
echo "[check] versitygw $got ($(command -v versitygw))"
got=$(temporal --version) || fail "temporal is missing; run make setup"
[[ $got == "temporal version $TEMPORAL_CLI_VERSION "* ]] ||
  fail "temporal reports '$got', want $TEMPORAL_CLI_VERSION"
echo "[check] $got"
got=$(coredns -version) || fail "coredns is missing; run make setup"
[[ $got == "CoreDNS-$COREDNS_VERSION"* ]] || fail "coredns reports '${got%%$'\n'*}', want $COREDNS_VERSION"
echo "[check] ${got%%$'\n'*}"
# It prints "Running <path> version v2.1.0, built on ..., go..." on stderr.
got=$(kube-router --version 2>&1) || fail "kube-router is missing; run make setup"
[[ $got == *" version v$KUBE_ROUTER_VERSION, "* ]] ||
  fail "kube-router reports '$got', want v$KUBE_ROUTER_VERSION"
echo "[check] kube-router v$KUBE_ROUTER_VERSION ($(command -v kube-router))"
[[ -s $LOGIN_IMAGE_DIR/rootfs.tar ]] || fail "the login image is missing ($LOGIN_IMAGE_DIR); run make setup"
echo "[check] login image $LOGIN_IMAGE_DIR/rootfs.tar"
