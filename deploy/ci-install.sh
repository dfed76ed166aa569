#!/bin/sh
# Installs what the tests run for real, from Debian's packages: promtool and
# a Prometheus server (`prometheus`, test/deploy/) and PgBouncer (`pgbouncer`,
# test/store/postgres-pgbouncer.test.ts). Called by .ci/run.
#
# Both packages register a system service. The tests never use them: they
# start their own Prometheus (own port, own temporary storage) and their own
# pgbouncer (own config in a temporary directory, own port) and kill them by
# PID. policy-rc.d exit 101 keeps the packages from starting their services
# at install time, so nothing outlives the run.
set -eu
PACKAGES=""
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || PACKAGES="prometheus"
{ command -v pgbouncer || [ -x /usr/sbin/pgbouncer ]; } >/dev/null 2>&1 || PACKAGES="$PACKAGES pgbouncer"
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
