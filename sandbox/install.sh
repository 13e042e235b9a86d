#!/usr/bin/env bash
# Installs the Debian packages the sandbox runs: munge, MariaDB, slurmdbd, slurmctld, slurmd and the
# Slurm clients; and for its real Kubernetes node, containerd with runc, the CNI plugins, iptables,
# iproute2, ipset (kube-router's address sets), busybox (the test pods' tools), a C compiler (the pause binary) and mmdebstrap (the
# login image, from Debian's packages: sandbox/kubernetes/login-image.sh); slapd and the LDAP
# clients, the LDAP face of the Authentik emulator (sandbox/authentik/ldap_server.py). Idempotent:
# does nothing when every binary is already there.
# Starts nothing: the sandbox runs the daemons itself as plain processes, so the packages' own
# services must not run.
set -euo pipefail

# libpmix-dev: Slurm's mpi/pmix plugin opens the unversioned libpmix.so, which only the -dev
# package has; the smoke test's `srun --mpi=pmix` (runbook 7b) needs it.
PACKAGES=(slurmdbd slurmctld slurmd slurm-client munge mariadb-server mariadb-client coreutils
  util-linux libpmix-dev containerd runc containernetworking-plugins iptables ipset conntrack iproute2
  busybox-static gcc libc6-dev mmdebstrap slapd ldap-utils)
# The binaries the sandbox calls; a missing one means a package is missing.
BINARIES=(munged mungekey munge unmunge mariadbd mariadb-install-db mariadb mariadb-admin
  slurmdbd slurmctld slurmd sacctmgr scontrol sinfo sbatch squeue scancel sacct srun timeout
  unshare nsenter containerd containerd-shim-runc-v2 ctr runc iptables ipset conntrack ip busybox cc
  mmdebstrap slapd slaptest ldapmodify ldapsearch ldapdelete)
# Packages of files no binary check on PATH finds missing: a library the daemons open at run time,
# and the CNI plugins containerd runs from /usr/lib/cni.
LIBRARIES=(libpmix-dev containernetworking-plugins)

library_missing() {
  local package
  for package in "${LIBRARIES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
      echo "$package"
    fi
  done
}
# Packages' daemons that postinst scripts could start; checked before and after installing.
DAEMONS=(munged mariadbd mysqld slurmdbd slurmctld slurmd containerd slapd)

missing=()
for bin in "${BINARIES[@]}"; do
  # Daemons live in /usr/sbin, which a non-login root shell may not have on PATH.
  if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$bin" >/dev/null 2>&1; then
    missing+=("$bin")
  fi
done
mapfile -t -O "${#missing[@]}" missing < <(library_missing)
if [ "${#missing[@]}" -eq 0 ]; then
  echo "sandbox packages: all binaries and libraries present; nothing to install"
  exit 0
fi
echo "sandbox packages: missing ${missing[*]}; installing ${PACKAGES[*]}"

if [ "$(id -u)" -ne 0 ]; then
  echo "sandbox packages: installing needs root (apt-get); run this script as root" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "sandbox packages: apt-get not found; this script supports Debian bookworm only" >&2
  exit 1
fi

# Read from /proc rather than with pgrep, which may itself be missing on a minimal system. A
# sandbox's own daemons (the supervisor marks their environment: sandbox/supervisor.py) are left
# out: one may start while this runs, and is no package script's.
daemon_pids() {
  local dir comm name
  for dir in /proc/[0-9]*; do
    comm="$(cat "$dir/comm" 2>/dev/null)" || continue
    for name in "${DAEMONS[@]}"; do
      [ "$comm" = "$name" ] || continue
      # The shell reports a redirection it cannot open (a process gone, or not ours to read)
      # before the command's own 2>/dev/null applies; hence the order.
      if ! tr '\0' '\n' 2>/dev/null <"$dir/environ" | grep -q '^GPU_TENANTS_SANDBOX_SERVICE='; then
        echo "${dir#/proc/}"
      fi
    done
  done | sort
}
before="$(daemon_pids)"

# policy-rc.d answering 101 forbids invoke-rc.d from starting services during postinst. Keep an
# existing one (e.g. a container's) and put it back afterwards.
policy=/usr/sbin/policy-rc.d
backup=""
if [ -e "$policy" ]; then
  backup="$(mktemp /usr/sbin/policy-rc.d.sandbox-backup.XXXXXX)"
  cp -p "$policy" "$backup"
fi
restore_policy() {
  if [ -n "$backup" ]; then mv -f "$backup" "$policy"; else rm -f "$policy"; fi
}
trap restore_policy EXIT
# Make an interrupted install still put the original policy back (EXIT traps run on exit only).
trap 'exit 130' INT TERM
printf '#!/bin/sh\n# Written by sandbox/install.sh while it installs packages.\nexit 101\n' >"$policy"
chmod 755 "$policy"

export DEBIAN_FRONTEND=noninteractive
# Other work on this machine may hold the dpkg lock for a while; wait for it instead of failing.
apt_opts=(-o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
if ! apt-get "${apt_opts[@]}" update; then
  echo "sandbox packages: 'apt-get update' failed; check the network and /etc/apt/sources.list.d" >&2
  exit 1
fi
if ! apt-get "${apt_opts[@]}" install -y --no-install-recommends "${PACKAGES[@]}"; then
  echo "sandbox packages: 'apt-get install ${PACKAGES[*]}' failed (see above); fix apt and rerun" >&2
  exit 1
fi

still_missing=()
for bin in "${BINARIES[@]}"; do
  if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$bin" >/dev/null 2>&1; then
    still_missing+=("$bin")
  fi
done
mapfile -t -O "${#still_missing[@]}" still_missing < <(library_missing)
if [ "${#still_missing[@]}" -gt 0 ]; then
  echo "sandbox packages: installed ${PACKAGES[*]} but ${still_missing[*]} still missing" >&2
  exit 1
fi

# Belt and braces: a postinst that bypasses invoke-rc.d would leave a daemon holding the package's
# default ports and files. Stop only those that appeared during this install.
after="$(daemon_pids)"
started="$(comm -13 <(echo "$before") <(echo "$after") | grep -v '^$' || true)"
if [ -n "$started" ]; then
  echo "sandbox packages: stopping daemons started by package scripts: $(echo "$started" | tr '\n' ' ')"
  # shellcheck disable=SC2086 # one pid per word
  kill $started 2>/dev/null || true
fi
echo "sandbox packages: installed ${PACKAGES[*]}"
