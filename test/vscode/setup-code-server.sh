#!/usr/bin/env bash
# Installs what the real-VS-Code tests need (see test/vscode/codeServer.ts):
#   - Debian packages: chromium (the browser that drives the workbench), ripgrep (stands in for
#     @vscode/ripgrep's GitHub download, see below), libkrb5-dev (gssapi/gssapi.h for a native
#     module VS Code builds on install), plus the compiler toolchain node-gyp needs;
#   - code-server (VS Code 1.100.3 served to a browser, with a real Node extension host) into
#     <repo>/.vscode-test/code-server/, outside the project's own node_modules.
#
# Idempotent: when everything is present it only checks and exits in well under a second.
# Non-interactive: works as root with CI=true and no stdin. Exits non-zero with a message on failure.
#
# Usage: bash test/vscode/setup-code-server.sh [--force]   (--force reinstalls code-server)

set -euo pipefail

# 4.100.3 is the newest code-server whose engines field accepts Node 20 (4.103+ needs Node 22).
CODE_SERVER_VERSION="4.100.3"

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
INSTALL_DIR="$REPO_ROOT/.vscode-test/code-server"
PKG_DIR="$INSTALL_DIR/node_modules/code-server"
# Written last, only after a complete and verified install; its presence is the "all done" check.
MARKER="$INSTALL_DIR/.installed-$CODE_SERVER_VERSION"

FORCE=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "setup-code-server: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

log()  { echo "[setup-code-server] $*"; }
fail() { echo "[setup-code-server] ERROR: $*" >&2; exit 1; }
trap 'rc=$?; [ $rc -eq 0 ] || echo "[setup-code-server] FAILED (exit $rc) at line $LINENO" >&2' EXIT

# ---------------------------------------------------------------------------------------------
# 1. Debian packages
# ---------------------------------------------------------------------------------------------
APT_PACKAGES=(chromium ripgrep libkrb5-dev)
# Not for code-server: libfaketime moves the engine's wall clock in test/unit/clock.test.ts. Here
# because this script is where `npm test` installs what its tests need on a fresh machine.
APT_PACKAGES+=(faketime)
# node-gyp builds VS Code's native modules from source (their prebuilt binaries come from GitHub,
# which is unreachable here), so a compiler, make and python3 must exist too.
command -v make    >/dev/null 2>&1 || APT_PACKAGES+=(make)
command -v g++     >/dev/null 2>&1 || APT_PACKAGES+=(g++)
command -v python3 >/dev/null 2>&1 || APT_PACKAGES+=(python3)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || fail "not root and no sudo: install these Debian packages first: ${missing[*]}"
    SUDO="sudo -n"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq </dev/null || fail "apt-get update failed"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null \
    || fail "apt-get install ${missing[*]} failed"
else
  log "Debian packages present: ${APT_PACKAGES[*]}"
fi
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium is missing after installing the chromium package"
[ -x /usr/bin/rg ]       || fail "/usr/bin/rg is missing after installing the ripgrep package"

# ---------------------------------------------------------------------------------------------
# 2. code-server
# ---------------------------------------------------------------------------------------------
if [ $FORCE -eq 0 ] && [ -f "$MARKER" ] && [ -f "$PKG_DIR/out/node/entry.js" ]; then
  log "code-server $CODE_SERVER_VERSION already installed: $PKG_DIR/out/node/entry.js"
  exit 0
fi

command -v node >/dev/null 2>&1 || fail "node is not on PATH"
command -v npm  >/dev/null 2>&1 || fail "npm is not on PATH"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" = "20" ] || fail "code-server $CODE_SERVER_VERSION needs Node 20; found $(node -v)"

# code-server's postinstall calls `npx`, which would prompt (the machine's npm config says
# yes = false); without stdin that prompt fails, so answer yes up front.
export npm_config_yes=true
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/setup-code-server.XXXXXX")"
trap 'rc=$?; rm -rf "$WORK_DIR"; [ $rc -eq 0 ] || echo "[setup-code-server] FAILED (exit $rc)" >&2' EXIT

# --- 2a. Pre-seed @vscode/ripgrep's download cache --------------------------------------------
# code-server's postinstall runs `npm install` in lib/vscode, whose @vscode/ripgrep postinstall
# downloads an rg binary from GitHub releases: unreachable here, so the whole install would fail.
# Before downloading, it looks in <os.tmpdir()>/vscode-ripgrep-cache-<package version>/ for
# ripgrep-<release>-<target>.tar.gz and, if found, just unpacks `rg` from it. We put a tarball of
# Debian's /usr/bin/rg there. Both the package version and the release string (e.g. v13.0.0-10)
# vary between @vscode/ripgrep versions, so read them from the exact versions code-server pins
# instead of hard-coding them.
log "reading which @vscode/ripgrep versions code-server $CODE_SERVER_VERSION pins"
(cd "$WORK_DIR" && npm pack --silent "code-server@$CODE_SERVER_VERSION" >/dev/null) \
  || fail "npm pack code-server@$CODE_SERVER_VERSION failed (is the npm registry reachable?)"
tar -xzf "$WORK_DIR/code-server-$CODE_SERVER_VERSION.tgz" -C "$WORK_DIR" --wildcards '*npm-shrinkwrap.json' \
  || fail "could not read code-server's npm-shrinkwrap.json files"
rg_versions="$(node -e '
  const fs = require("fs"), path = require("path");
  const found = new Set();
  const walk = d => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name === "npm-shrinkwrap.json") {
      const pk = JSON.parse(fs.readFileSync(p, "utf8")).packages || {};
      for (const [k, v] of Object.entries(pk)) if (k.endsWith("node_modules/@vscode/ripgrep")) found.add(v.version);
    } } };
  walk(process.argv[1]);
  console.log([...found].join(" "));
' "$WORK_DIR/package")"
[ -n "$rg_versions" ] || fail "found no @vscode/ripgrep in code-server's shrinkwrap files; the ripgrep workaround needs updating"

TMP_BASE="$(node -p 'require("os").tmpdir()')"   # what @vscode/ripgrep will see during npm install
for v in $rg_versions; do
  (cd "$WORK_DIR" && npm pack --silent "@vscode/ripgrep@$v" >/dev/null) || fail "npm pack @vscode/ripgrep@$v failed"
  mkdir -p "$WORK_DIR/rg-$v"
  tar -xzf "$WORK_DIR/vscode-ripgrep-$v.tgz" -C "$WORK_DIR/rg-$v"
  # Prints "<cache dir> <asset file name>", computed the way that version's lib/postinstall.js and
  # lib/download.js compute them (release constant + target triple), or fails loudly.
  read -r cache_dir asset < <(node -e '
    const fs = require("fs"), os = require("os"), path = require("path");
    const [dir, tmp] = process.argv.slice(1);
    const src = fs.readFileSync(path.join(dir, "lib/postinstall.js"), "utf8");
    const dl = fs.readFileSync(path.join(dir, "lib/download.js"), "utf8");
    const version = (src.match(/const VERSION = [\x27"]([^\x27"]+)[\x27"]/) || [])[1];
    if (!version) { console.error("no `const VERSION = ...` in lib/postinstall.js"); process.exit(1); }
    if (!/vscode-ripgrep-cache-\$\{packageVersion\}/.test(dl)) { console.error("lib/download.js no longer uses vscode-ripgrep-cache-${packageVersion}"); process.exit(1); }
    const targets = { x64: "x86_64-unknown-linux-musl", arm64: "aarch64-unknown-linux-musl" };
    const target = targets[process.env.npm_config_arch || os.arch()];
    if (!target) { console.error("unsupported architecture " + os.arch()); process.exit(1); }
    const pkgVersion = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
    console.log(path.join(tmp, "vscode-ripgrep-cache-" + pkgVersion), ["ripgrep", version, target].join("-") + ".tar.gz");
  ' "$WORK_DIR/rg-$v/package" "$TMP_BASE") || fail "could not work out @vscode/ripgrep@$v's cache file name"
  [ -n "${asset:-}" ] || fail "could not work out @vscode/ripgrep@$v's cache file name"
  mkdir -p "$cache_dir"
  # `rg` at the root of the archive, which is where unzipRipgrep expects it.
  tar -czf "$cache_dir/$asset" -C /usr/bin rg
  log "seeded ripgrep cache for @vscode/ripgrep@$v: $cache_dir/$asset (Debian's $(/usr/bin/rg --version | head -1))"
done

# --- 2b. npm install --------------------------------------------------------------------------
mkdir -p "$INSTALL_DIR"
rm -f "$INSTALL_DIR"/.installed-*
# Own package.json: without it npm would walk up to the repo's package.json and install into the
# project's node_modules.
if [ ! -f "$INSTALL_DIR/package.json" ]; then
  echo '{ "name": "vscode-test-code-server", "private": true, "description": "Installed by test/vscode/setup-code-server.sh" }' \
    > "$INSTALL_DIR/package.json"
fi
log "installing code-server@$CODE_SERVER_VERSION into $INSTALL_DIR (about 300 MB, a minute or two)"
start=$(date +%s)
# --unsafe-perm: code-server's postinstall refuses to run as root without it.
if ! (cd "$INSTALL_DIR" && npm install --prefix "$INSTALL_DIR" --unsafe-perm --no-save \
        --loglevel=error "code-server@$CODE_SERVER_VERSION" </dev/null); then
  fail "npm install code-server@$CODE_SERVER_VERSION failed (see the npm output above)"
fi
log "npm install took $(( $(date +%s) - start )) s"

# --- 2c. Verify ---------------------------------------------------------------------------------
[ -f "$PKG_DIR/out/node/entry.js" ] || fail "code-server's entry point is missing: $PKG_DIR/out/node/entry.js"
rg_bin="$(find "$PKG_DIR/lib/vscode/node_modules/@vscode/ripgrep/bin" -maxdepth 1 -name rg 2>/dev/null | head -1)"
[ -n "$rg_bin" ] && "$rg_bin" --version >/dev/null 2>&1 || fail "VS Code's ripgrep binary is missing or broken under $PKG_DIR/lib/vscode/node_modules/@vscode/ripgrep/bin"
# XDG_* point into the scratch dir: on first run code-server writes a default config.yaml (with a
# generated password) and logs under ~/.config and ~/.local/share; keep the user's home clean.
version_out="$(XDG_CONFIG_HOME="$WORK_DIR/xdg" XDG_DATA_HOME="$WORK_DIR/xdg" \
  node "$PKG_DIR/out/node/entry.js" --version 2>&1)" || fail "code-server --version failed: $version_out"
version_line="$(printf '%s\n' "$version_out" | grep -E "^$CODE_SERVER_VERSION " | head -1)" \
  || fail "unexpected code-server --version output: $version_out"
touch "$MARKER"
log "done: code-server $version_line at $PKG_DIR/out/node/entry.js"
