#!/usr/bin/env bash
# The login image: the root filesystem the login release's pods run on the sandbox's real node,
# made from Debian's packages by mmdebstrap as one reproducible tar ($1), the image's one layer.
# Packages only: the release (sandbox/kubernetes/login_release.py, in the chart's place) mounts
# every setting, the entry point and the secrets, so nothing here holds a key. Its cache directory
# is named by this file's digest (toolchain/paths.sh): a changed list makes a new image.
set -euo pipefail
target=$1

SUITE=bookworm
# sshd and its PAM; nslcd with the NSS and PAM modules that ask it (users and groups from LDAP);
# the Slurm client and munge as the sandbox's own Slurm (22.05); lsof for offboarding's check
# that nothing holds the tenant's files; procps for ps and pgrep.
PACKAGES=(openssh-server nslcd libnss-ldapd libpam-ldapd slurm-client munge lsof procps
  ca-certificates)
MIRRORS=(
  "deb http://deb.debian.org/debian $SUITE main"
  "deb http://deb.debian.org/debian $SUITE-updates main"
  "deb http://deb.debian.org/debian-security $SUITE-security main"
)

# The host keys and the munge key the packages' scripts make would be the same in every pod of
# every tenant: the release mounts its own.
drop_keys='rm -f "$1"/etc/ssh/ssh_host_*_key "$1"/etc/ssh/ssh_host_*_key.pub "$1"/etc/munge/munge.key'
# Every date in the tar is this one, so the same packages make the same bytes.
export SOURCE_DATE_EPOCH=0
mkdir -p "$(dirname "$target")"
mmdebstrap --quiet --format=tar --variant=essential --include="$(
  IFS=,
  echo "${PACKAGES[*]}"
)" \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook="$drop_keys" \
  "$SUITE" "$target.partial" "${MIRRORS[@]}"
mv "$target.partial" "$target"
