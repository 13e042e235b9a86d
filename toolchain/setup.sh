#!/usr/bin/env bash
# `make setup`: the project's virtualenv, the Pulumi engine with its Python language host, the
# Kubernetes provider plugin, the Kubernetes control-plane binaries, the S3 gateway and the
# Temporal CLI. Idempotent:
# what is already built (cached outside the work tree, keyed by version) is not built again.
set -euo pipefail
# Progress (ours and the installers') goes to stderr: every make target runs setup first, and
# one's own output (`make drift` with --json) must stay clean.
exec 1>&2

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=toolchain/paths.sh
source "$here/paths.sh"

started=$SECONDS
say() { printf '[setup %4ss] %s\n' "$((SECONDS - started))" "$*"; }
die() {
  printf '[setup] ERROR: %s\n' "$1" >&2
  shift
  for line in "$@"; do printf '[setup]   %s\n' "$line" >&2; done
  exit 1
}

# Runs a long command with its output in a log, printing how long it has been going every 30s.
run_logged() {
  local what=$1 log=$2
  shift 2
  mkdir -p "$(dirname "$log")"
  local t0=$SECONDS
  "$@" >"$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq 30); do
      sleep 1
      kill -0 "$pid" 2>/dev/null || break
    done
    kill -0 "$pid" 2>/dev/null && say "  still building $what: $((SECONDS - t0))s so far (log: $log)"
  done
  if ! wait "$pid"; then
    tail -n 25 "$log" | sed 's/^/    | /' >&2
    die "building $what failed after $((SECONDS - t0))s" "full log: $log" \
      "a module the Go proxy refuses shows above as '403 Forbidden'; a compile error names the Go file"
  fi
  printf '%s\t%s\t%s\n' "$what" "$((SECONDS - t0))" "$(date -u +%FT%TZ)" >>"$GPU_TENANTS_CACHE/build-times.tsv"
  say "  built $what in $((SECONDS - t0))s"
}

# A virtualenv ($1) with the pinned requirements ($2), remade when they change.
venv() {
  local dir=$1 requirements=$2 name=${1#"$root"/}
  local stamp="$dir/.requirements.sha256" want
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    say "virtualenv $name up to date"
    return
  fi
  say "creating virtualenv $name from ${requirements#"$root"/}"
  [[ -x $dir/bin/python ]] || python3 -m venv "$dir" || die "python3 -m venv failed" \
    "install Python 3.11+ with its venv module (Debian: apt-get install python3-venv)"
  "$dir/bin/pip" install -q --disable-pip-version-check -r "$requirements" \
    || die "pip install -r ${requirements#"$root"/} failed (see the pip error above)"
  echo "$want" >"$stamp"
}

# The project itself, editable, for its console script (`gpu-tenants`, venv/bin): the command
# runs the checkout's code as it is edited. Redone when pyproject.toml changes (its scripts and
# packages), without build isolation, so the build needs no index.
project_command() {
  local stamp="$root/venv/.project.sha256" want
  want=$(sha256sum "$root/pyproject.toml" | cut -d' ' -f1)
  if [[ -f $stamp && $(cat "$stamp") == "$want" && -x $root/venv/bin/gpu-tenants ]]; then
    say "gpu-tenants command installed in venv/bin"
    return
  fi
  say "installing the project into venv/ (editable): the gpu-tenants command"
  "$root/venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation \
    -e "$root" || die "pip install -e . failed (see the pip error above)"
  echo "$want" >"$stamp"
}

# The program's and the providers' bytecode. Where PYTHONDONTWRITEBYTECODE is set (as on this
# machine) Python caches none, and every preview compiled them again, in the program and in the
# dynamic-provider host: about 0.1 s of each. Compiled here, as pip does for what it installs; a
# module edited since is compiled in memory, as before, until the next setup.
program_bytecode() {
  "$root/venv/bin/python" -m compileall -q "$root/__main__.py" "$root/tenant_stack" \
    "$root/providers" "$root/policy/__main__.py" \
    || die "python -m compileall failed: a module of the program does not compile (see above)"
}

check_go() {
  command -v go >/dev/null || die "Go is not installed, and the Pulumi engine must be built from source here" \
    "install Go $GO_MIN_VERSION or newer, or put an official pulumi v$PULUMI_VERSION on PATH"
  local have
  have=$(go env GOVERSION | sed 's/^go//')
  if [[ $(printf '%s\n%s\n' "$GO_MIN_VERSION" "$have" | sort -V | head -n1) != "$GO_MIN_VERSION" ]]; then
    die "Go $have is too old to build the pinned binaries" "install Go $GO_MIN_VERSION or newer"
  fi
}

# Every Go binary is linked without its symbol table and DWARF: nothing here debugs them, and
# the linker, which runs on one core, writes far less.
STRIP='-s -w'

# Builds into a scratch directory and renames it into place, so an interrupted build never leaves
# a directory that a later run would take as finished.
finish_install() {
  local scratch=$1 final=$2
  rm -rf "$final"
  mv "$scratch" "$final"
}

official_pulumi_on_path() {
  local p
  p=$(PATH=$ORIGINAL_PATH command -v pulumi 2>/dev/null) || return 1
  [[ $p != "$PULUMI_TOOLCHAIN_DIR"/* ]] || return 1
  [[ $("$p" version 2>/dev/null) == "v$PULUMI_VERSION" ]]
}

pulumi_engine() {
  if official_pulumi_on_path; then
    say "using the official pulumi v$PULUMI_VERSION already on PATH; building no engine"
    return
  fi
  if [[ -x $PULUMI_TOOLCHAIN_DIR/bin/pulumi && -x $PULUMI_TOOLCHAIN_DIR/bin/pulumi-language-python ]]; then
    say "pulumi v$PULUMI_VERSION: cached in $PULUMI_TOOLCHAIN_DIR"
    # The language host is this repo's code, not a pinned build: keep the cached copy current.
    if ! cmp -s "$here/langhost/pulumi_language_python.py" "$PULUMI_TOOLCHAIN_DIR/bin/pulumi_language_python.py"; then
      install -m 644 "$here/langhost/pulumi_language_python.py" "$PULUMI_TOOLCHAIN_DIR/bin/"
      say "updated the Python language host from toolchain/langhost"
    fi
    return
  fi
  check_go
  local scratch="$PULUMI_TOOLCHAIN_DIR.partial"
  rm -rf "$scratch" && mkdir -p "$scratch/bin"
  say "building pulumi v$PULUMI_VERSION (first time: about 4 minutes on 2 cores)"
  (cd "$here/go/pulumi" && run_logged "pulumi v$PULUMI_VERSION" "$GPU_TENANTS_CACHE/logs/pulumi.log" \
    env CGO_ENABLED=0 go build -trimpath -tags osusergo,grpcnotrace \
    -ldflags "$STRIP -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
    -o "$scratch/bin/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)

  # The exec script and the dynamic-provider launcher are upstream's own, from the sdk/v3 module.
  local sdk
  sdk=$(cd "$here/go/pulumi" && go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)
  install -m 755 "$sdk/python/cmd/pulumi-language-python-exec" "$scratch/bin/"
  install -m 755 "$sdk/python/dist/pulumi-resource-pulumi-python" "$scratch/bin/"

  say "installing the Python language host (toolchain/langhost) with its own virtualenv"
  python3 -m venv "$scratch/langhost-venv"
  "$scratch/langhost-venv/bin/pip" install -q --disable-pip-version-check -c "$root/requirements.txt" "pulumi==$PULUMI_VERSION" \
    || die "pip install pulumi==$PULUMI_VERSION for the language host failed (see above)"
  install -m 644 "$here/langhost/pulumi_language_python.py" "$scratch/bin/"
  cat >"$scratch/bin/pulumi-language-python" <<EOF
#!/bin/sh
exec "$PULUMI_TOOLCHAIN_DIR/langhost-venv/bin/python" "$PULUMI_TOOLCHAIN_DIR/bin/pulumi_language_python.py" "\$@"
EOF
  chmod 755 "$scratch/bin/pulumi-language-python"
  # Only the venv's console scripts record its path, and the launcher does not use them.
  finish_install "$scratch" "$PULUMI_TOOLCHAIN_DIR"
}

# Copies a module pinned by toolchain/go/kubernetes-provider/go.sum to a writable directory.
module_dir() {
  local module=$1 dest=$2 src
  src=$(cd "$here/go/kubernetes-provider" && go mod download -json "$module" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -d $src ]] || die "the Go module proxy did not serve $module" "go mod download $module says why"
  cp -r "$src" "$dest" && chmod -R u+w "$dest"
}

kubernetes_provider_binary() {
  local bin="$KUBERNETES_PROVIDER_DIR/pulumi-resource-kubernetes"
  if [[ -x $bin ]]; then
    say "pulumi-resource-kubernetes v$KUBERNETES_PROVIDER_VERSION: cached"
    return
  fi
  check_go
  local scratch="$KUBERNETES_PROVIDER_DIR.partial"
  rm -rf "$scratch" && mkdir -p "$scratch"
  # go.sum of the wrapper module pins the provider's source; the build runs in a writable copy
  # because the provider embeds files that `go generate` writes beside its main package.
  # provider/go.mod replaces sdk/v4 with ../sdk, so both sit side by side as in upstream's repo.
  module_dir "$KUBERNETES_PROVIDER_MODULE@$KUBERNETES_PROVIDER_MODULE_VERSION" "$scratch/provider"
  module_dir "github.com/pulumi/pulumi-kubernetes/sdk/v4@v$KUBERNETES_PROVIDER_VERSION" "$scratch/sdk"
  say "building pulumi-resource-kubernetes v$KUBERNETES_PROVIDER_VERSION (first time: about 6 minutes)"
  (cd "$scratch/provider/cmd/pulumi-resource-kubernetes" &&
    run_logged "pulumi-resource-kubernetes v$KUBERNETES_PROVIDER_VERSION" \
      "$GPU_TENANTS_CACHE/logs/pulumi-resource-kubernetes.log" \
      bash -c "VERSION=$KUBERNETES_PROVIDER_VERSION go generate . && CGO_ENABLED=0 go build -trimpath \
        -ldflags '$STRIP -X $KUBERNETES_PROVIDER_MODULE/pkg/version.Version=$KUBERNETES_PROVIDER_VERSION' \
        -o '$scratch/pulumi-resource-kubernetes' .")
  rm -rf "$scratch/provider" "$scratch/sdk"
  finish_install "$scratch" "$KUBERNETES_PROVIDER_DIR"
}

kubernetes_plugin() {
  eval "$("$here/env.sh" --tools)"
  if pulumi plugin ls --json 2>/dev/null | grep -q "\"name\": \"kubernetes\",.*\"version\": \"$KUBERNETES_PROVIDER_VERSION\"" ||
    pulumi plugin ls 2>/dev/null | grep -Eq "^kubernetes +resource +$KUBERNETES_PROVIDER_VERSION "; then
    say "plugin resource kubernetes $KUBERNETES_PROVIDER_VERSION: installed in $PULUMI_HOME"
    return
  fi
  kubernetes_provider_binary
  pulumi plugin install resource kubernetes "$KUBERNETES_PROVIDER_VERSION" \
    --file "$KUBERNETES_PROVIDER_DIR/pulumi-resource-kubernetes" >/dev/null
  say "installed plugin resource kubernetes $KUBERNETES_PROVIDER_VERSION into $PULUMI_HOME"
}

# The -X flags of every Kubernetes binary: without them the server reports v0.0.0 and
# pulumi-kubernetes refuses the cluster.
kubernetes_stamps() {
  local minor pkg
  minor=$(cut -d. -f2 <<<"$KUBERNETES_VERSION")
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    printf ' -X %s.gitVersion=v%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean' \
      "$pkg" "$KUBERNETES_VERSION" "$pkg" "$pkg" "$minor" "$pkg"
  done
}

kubernetes_control_plane() {
  if [[ -x $KUBERNETES_DIR/bin/etcd ]]; then
    say "kube-apiserver, kube-controller-manager, kubectl v$KUBERNETES_VERSION, etcd v$ETCD_VERSION: cached"
    return
  fi
  check_go
  local scratch="$KUBERNETES_DIR.partial" v="v$KUBERNETES_VERSION"
  rm -rf "$scratch" && mkdir -p "$scratch/bin"
  say "building kube-apiserver, kube-controller-manager and kubectl $v (first time: about 12 minutes)"
  (cd "$here/go/kubernetes" && run_logged "kube-apiserver+kube-controller-manager+kubectl $v" \
    "$GPU_TENANTS_CACHE/logs/kubernetes.log" env CGO_ENABLED=0 go build -trimpath -tags providerless \
    -ldflags "$STRIP$(kubernetes_stamps)" -o "$scratch/bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl)
  say "building etcd v$ETCD_VERSION (first time: about 2 minutes)"
  (cd "$here/go/etcd" && run_logged "etcd v$ETCD_VERSION" "$GPU_TENANTS_CACHE/logs/etcd.log" \
    env CGO_ENABLED=0 go build -trimpath \
    -ldflags "$STRIP -X go.etcd.io/etcd/api/v3/version.Version=$ETCD_VERSION" \
    -o "$scratch/bin/etcd" go.etcd.io/etcd/server/v3)
  finish_install "$scratch" "$KUBERNETES_DIR"
}

# What runs workloads on the sandbox's cluster: the scheduler, and the real node's kubelet and
# kube-proxy; from the same module and stamps as the control plane, in a directory of their own
# so that a control plane built before them is kept.
WORKLOAD_BINARIES=(kube-scheduler kubelet kube-proxy)
kubernetes_workloads() {
  local binary missing=()
  for binary in "${WORKLOAD_BINARIES[@]}"; do
    [[ -x $KUBERNETES_WORKLOADS_DIR/bin/$binary ]] || missing+=("$binary")
  done
  if ((${#missing[@]} == 0)); then
    say "${WORKLOAD_BINARIES[*]} v$KUBERNETES_VERSION: cached"
    return
  fi
  check_go
  local scratch="$KUBERNETES_WORKLOADS_DIR.partial" v="v$KUBERNETES_VERSION"
  rm -rf "$scratch" && mkdir -p "$scratch/bin"
  say "building ${WORKLOAD_BINARIES[*]} $v (first time: about 6 minutes)"
  (cd "$here/go/kubernetes" && run_logged "${WORKLOAD_BINARIES[*]} $v" \
    "$GPU_TENANTS_CACHE/logs/kubernetes-workloads.log" \
    env CGO_ENABLED=0 go build -trimpath -tags providerless -ldflags "$STRIP$(kubernetes_stamps)" \
    -o "$scratch/bin/" "${WORKLOAD_BINARIES[@]/#/k8s.io/kubernetes/cmd/}")
  finish_install "$scratch" "$KUBERNETES_WORKLOADS_DIR"
}

# A Go module's source directory as the proxy serves it ($1: module@version). Binaries are built
# inside it (read-only in the module cache, which `go build` only reads), so the module's own
# go.sum pins every dependency and no wrapper module is needed.
module_source() {
  local module=$1 json src
  json=$(cd "$here" && go mod download -json "$module" 2>&1) ||
    die "the Go module proxy did not serve $module" "go mod download said:" "$json"
  src=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$json")
  [[ -d $src ]] || die "go mod download $module named no source directory" "$json"
  echo "$src"
}

# Builds binary $3 of package $5 inside module $4 with ldflags $6 into $2/bin, unless cached; $1
# names it in messages, $7 says how long a first build takes.
module_binary() {
  local what=$1 dir=$2 binary=$3 module=$4 package=$5 ldflags=$6 takes=$7
  if [[ -x $dir/bin/$binary ]]; then
    say "$what: cached in $dir"
    return
  fi
  check_go
  local scratch="$dir.partial" src
  src=$(module_source "$module")
  rm -rf "$scratch" && mkdir -p "$scratch/bin"
  say "building $what (first time: $takes on 2 cores)"
  (cd "$src" && run_logged "$what" "$GPU_TENANTS_CACHE/logs/$binary.log" \
    env CGO_ENABLED=0 go build -trimpath -ldflags "$STRIP $ldflags" -o "$scratch/bin/$binary" "$package")
  finish_install "$scratch" "$dir"
}

# Versity's S3 gateway, the sandbox's retention object store. Unstamped, `versitygw --version`
# says "git", and check.sh could not tell the version. (This function shadows the binary inside
# this script only; nothing here runs it.)
versitygw() {
  module_binary "versitygw v$VERSITYGW_VERSION" "$VERSITYGW_DIR" versitygw \
    "$VERSITYGW_MODULE@v$VERSITYGW_VERSION" ./cmd/versitygw \
    "-X main.Version=v$VERSITYGW_VERSION" "about 80 seconds"
}

# CoreDNS, which the sandbox runs as the cluster's DNS, in a pod on its real node. Its version is
# a constant of its source (coremain.CoreVersion); the stamp is the commit it prints beside it.
coredns() {
  module_binary "coredns v$COREDNS_VERSION" "$COREDNS_DIR" coredns \
    "$COREDNS_MODULE@v$COREDNS_VERSION" . \
    "-X github.com/coredns/coredns/coremain.GitCommit=v$COREDNS_VERSION" "about 3 minutes"
}

# kube-router, which enforces NetworkPolicies on the sandbox's real node. Unstamped, `kube-router
# --version` names no version (its Makefile stamps the git commit).
kube_router() {
  module_binary "kube-router v$KUBE_ROUTER_VERSION" "$KUBE_ROUTER_DIR" kube-router \
    "$KUBE_ROUTER_MODULE@v$KUBE_ROUTER_VERSION" ./cmd/kube-router \
    "-X $KUBE_ROUTER_MODULE/pkg/version.Version=v$KUBE_ROUTER_VERSION" "about 4 minutes"
}

# The Temporal CLI, whose dev server is the sandbox's workflow engine. Unstamped, `temporal
# --version` says 0.0.0-DEV.
temporal_cli() {
  module_binary "temporal CLI v$TEMPORAL_CLI_VERSION" "$TEMPORAL_CLI_DIR" temporal \
    "$TEMPORAL_CLI_MODULE@v$TEMPORAL_CLI_VERSION" ./cmd/temporal \
    "-X github.com/temporalio/cli/temporalcli.Version=$TEMPORAL_CLI_VERSION" "about 4 minutes"
}

# Slurm, munge, MariaDB and the real node's container runtime from Debian, for the sandbox.
sandbox_packages() {
  "$root/sandbox/install.sh" | sed 's/^/[setup] /'
}

# The login release's image on the sandbox's real node, from Debian's packages (mmdebstrap, which
# sandbox_packages installs). It holds no key; a changed package list is a new directory.
login_image() {
  if [[ -f $LOGIN_IMAGE_DIR/rootfs.tar ]]; then
    say "login image: cached in $LOGIN_IMAGE_DIR"
    return
  fi
  local scratch="$LOGIN_IMAGE_DIR.partial"
  rm -rf "$scratch" && mkdir -p "$scratch"
  say "making the login image from Debian's packages (first time: about 2 minutes)"
  run_logged "login image" "$GPU_TENANTS_CACHE/logs/login-image.log" \
    "$LOGIN_IMAGE_SCRIPT" "$scratch/rootfs.tar"
  finish_install "$scratch" "$LOGIN_IMAGE_DIR"
}

# Runs steps ($2...) one after another in the background as lane $1, its pid in LANES; a lane
# stops at its first failing step.
LANES=()
lane() {
  local name=$1
  shift
  (
    for step in "$@"; do "$step"; done
  ) &
  LANES+=("$!:$name")
}

main() {
  mkdir -p "$GPU_TENANTS_CACHE/logs" "$PULUMI_HOME" "$GPU_TENANTS_STATE"
  # toolchain/benchmark.sh runs single build steps by name.
  if (($#)); then
    for step in "$@"; do "$step"; done
    return
  fi
  # A cold setup is mostly Go builds, and one build leaves a core idle while it downloads
  # modules or links: two lanes of builds run side by side, and Debian's packages (the network)
  # beside them. Builds that share a Go module stay in one lane, so that the second one finds
  # the first one's packages in the build cache rather than compiling them at the same time.
  lane "Debian packages and login image" sandbox_packages login_image
  # The Kubernetes provider is the longest build by far; everything else goes in the other lane.
  lane "Pulumi" pulumi_engine kubernetes_plugin
  lane "Kubernetes and the rest" kubernetes_control_plane kubernetes_workloads coredns kube_router \
    versitygw temporal_cli
  venv "$root/venv" "$root/requirements.txt"
  project_command
  # The policy pack's own: pulumi-policy pins a protobuf older than the program's.
  venv "$root/policy/venv" "$root/policy/requirements.txt"
  program_bytecode
  local entry failed=()
  for entry in "${LANES[@]}"; do
    wait "${entry%%:*}" || failed+=("${entry#*:}")
  done
  ((${#failed[@]} == 0)) || die "setup failed in: ${failed[*]} (its error is above)"
  "$here/check.sh"
  say "done in $((SECONDS - started))s; run: eval \"\$(make -s env)\""
}

main "$@"
