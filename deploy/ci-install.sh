#!/bin/sh
# Installs what the tests run for real, from Debian's packages: promtool and
# a Prometheus server (`prometheus`, test/deploy/), PgBouncer (`pgbouncer`,
# test/store/postgres-pgbouncer.test.ts), and Patroni, etcd and HAProxy
# (`patroni`, `etcd-server`, `haproxy`: the failover suite,
# test/faults/failover.*.test.ts, which runs them over the PostgreSQL 15 server
# binaries). Called by .ci/run; installs only what is missing.
#
# These packages register system services. The tests never use them: they
# start their own Prometheus (own port, own temporary storage), their own
# pgbouncer (own config in a temporary directory, own port) and their own
# etcd, Patroni members and HAProxy (own ports and directory, test/faults/
# patroni.ts), and kill them by PID. policy-rc.d exit 101 keeps the packages
# from starting their services at install time, so nothing outlives the run.
set -eu
PACKAGES=""
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || PACKAGES="prometheus"
{ command -v pgbouncer || [ -x /usr/sbin/pgbouncer ]; } >/dev/null 2>&1 || PACKAGES="$PACKAGES pgbouncer"
{ command -v patroni && command -v patronictl; } >/dev/null 2>&1 || PACKAGES="$PACKAGES patroni"
command -v etcd >/dev/null 2>&1 || PACKAGES="$PACKAGES etcd-server"
{ command -v haproxy || [ -x /usr/sbin/haproxy ]; } >/dev/null 2>&1 || PACKAGES="$PACKAGES haproxy"
[ -n "$PACKAGES" ] || exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
POLICY=/usr/sbin/policy-rc.d
CREATED_POLICY=""
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod +x "$POLICY"
  CREATED_POLICY=1
fi
cleanup() { [ -z "$CREATED_POLICY" ] || $SUDO rm -f "$POLICY"; }
trap cleanup EXIT
$SUDO apt-get update
# shellcheck disable=SC2086 # a list of package names
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $PACKAGES
command -v promtool >/dev/null && command -v prometheus >/dev/null && [ -x /usr/sbin/pgbouncer ]
command -v patroni >/dev/null && command -v patronictl >/dev/null && command -v etcd >/dev/null && [ -x /usr/sbin/haproxy ]
