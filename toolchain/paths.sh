# Where the toolchain lives; sourced by setup.sh, env.sh and check.sh. Everything built is cached
# outside the work tree, keyed by version, so clones and CI runs on one machine share it.
_toolchain_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=toolchain/versions.sh
source "$_toolchain_dir/versions.sh"

GPU_TENANTS_CACHE=${GPU_TENANTS_CACHE:-$HOME/.cache/gpu-tenants}
GPU_TENANTS_STATE=${GPU_TENANTS_STATE:-$HOME/.local/state/gpu-tenants}
PULUMI_TOOLCHAIN_DIR=$GPU_TENANTS_CACHE/pulumi-v$PULUMI_VERSION
KUBERNETES_PROVIDER_DIR=$GPU_TENANTS_CACHE/pulumi-resource-kubernetes-v$KUBERNETES_PROVIDER_VERSION
KUBERNETES_DIR=$GPU_TENANTS_CACHE/kubernetes-v$KUBERNETES_VERSION-etcd-v$ETCD_VERSION
KUBERNETES_WORKLOADS_DIR=$GPU_TENANTS_CACHE/kubernetes-workloads-v$KUBERNETES_VERSION
VERSITYGW_DIR=$GPU_TENANTS_CACHE/versitygw-v$VERSITYGW_VERSION
COREDNS_DIR=$GPU_TENANTS_CACHE/coredns-v$COREDNS_VERSION
KUBE_ROUTER_DIR=$GPU_TENANTS_CACHE/kube-router-v$KUBE_ROUTER_VERSION
# The login image's root filesystem, named by the digest of the script that lists its packages.
LOGIN_IMAGE_SCRIPT=$_toolchain_dir/../sandbox/kubernetes/login-image.sh
LOGIN_IMAGE_DIR=$GPU_TENANTS_CACHE/login-image-$(sha256sum "$LOGIN_IMAGE_SCRIPT" | cut -c1-16)
TEMPORAL_CLI_DIR=$GPU_TENANTS_CACHE/temporal-cli-v$TEMPORAL_CLI_VERSION
PULUMI_HOME=${PULUMI_HOME:-$GPU_TENANTS_CACHE/pulumi-home}
ORIGINAL_PATH=${GPU_TENANTS_ORIGINAL_PATH:-$PATH}
