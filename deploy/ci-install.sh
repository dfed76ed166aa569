#!/bin/sh
# Installs what the deploy tests (test/deploy/) run for real: promtool and a
# Prometheus server, from Debian's `prometheus` package. Called by .ci/run.
#
# The package registers a system service. The tests never use it: they start
# their own Prometheus (own port, own temporary storage) and kill it by PID.
# policy-rc.d exit 101 keeps the package from starting the service at
# install time, so nothing outlives the run.
set -eu
if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
  exit 0
fi
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
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends prometheus
command -v promtool >/dev/null && command -v prometheus >/dev/null
