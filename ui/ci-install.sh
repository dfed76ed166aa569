#!/bin/sh
# The dashboard's end-to-end tests drive Debian's Chromium (/usr/bin/chromium) through playwright-core.
set -eu
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update
  apt-get install -y --no-install-recommends chromium
fi
