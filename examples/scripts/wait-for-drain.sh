#!/usr/bin/env bash
# wait-for-drain.sh: wait until an Engine Monitor engine has no pending items, print a summary, and
# fail if any item failed. For CI jobs and git hooks: enqueue work, then call this.
#
#   examples/scripts/wait-for-drain.sh [options] [URL]
#
# Needs curl and jq. Run `wait-for-drain.sh --help` for the options and exit codes.
set -euo pipefail

PROG=$(basename "$0")

usage() {
  cat <<EOF
Usage: $PROG [options] [URL]

Waits until the engine at URL has no pending items, prints a summary, and exits non-zero if any
item failed.

  URL                   the engine's base URL, e.g. http://127.0.0.1:7411
                        (default: \$ENGINE_MONITOR_URL, which VS Code's integrated terminals have)
  -t, --timeout SEC     give up after SEC seconds (default 0: wait as long as it takes)
  -i, --interval SEC    seconds between checks (default 1; fractions allowed)
  -s, --ignore-scheduled
                        do not wait for items whose runAt is still in the future
  -q, --quiet           no progress lines, only the summary and errors
  -h, --help            this text

Environment: ENGINE_MONITOR_URL, ENGINE_MONITOR_TOKEN (sent as "Authorization: Bearer <token>").

Exit codes:
  0  drained, no item failed
  1  drained, but at least one item failed (they are listed)
  2  bad arguments
  3  the engine cannot be asked: unreachable, an HTTP error (e.g. 401 without the right token),
     or curl/jq missing
  4  timed out with items still pending
EOF
}

die() { # die <exit code> <message>
  echo "$PROG: $2" >&2
  exit "$1"
}

bad_usage() {
  echo "$PROG: $1" >&2
  echo "Try '$PROG --help'." >&2
  exit 2
}

is_number() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }
is_positive() { is_number "$1" && [[ ! $1 =~ ^0+([.]0+)?$ ]]; }

url=${ENGINE_MONITOR_URL:-}
timeout=0
interval=1
ignore_scheduled=false
quiet=false
url_given=false

while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    -t | --timeout)
      (($# >= 2)) || bad_usage "$1 needs a number of seconds"
      is_number "$2" || bad_usage "$1: not a number of seconds: '$2'"
      timeout=$2; shift 2 ;;
    --timeout=*)
      timeout=${1#*=}; is_number "$timeout" || bad_usage "--timeout: not a number of seconds: '$timeout'"; shift ;;
    -i | --interval)
      (($# >= 2)) || bad_usage "$1 needs a number of seconds"
      is_positive "$2" || bad_usage "$1: not a positive number of seconds: '$2'"
      interval=$2; shift 2 ;;
    --interval=*)
      interval=${1#*=}
      is_positive "$interval" || bad_usage "--interval: not a positive number of seconds: '$interval'"
      shift ;;
    -s | --ignore-scheduled) ignore_scheduled=true; shift ;;
    -q | --quiet) quiet=true; shift ;;
    --) shift; break ;;
    -*) bad_usage "unknown option: $1" ;;
    *)
      ! $url_given || bad_usage "more than one URL: '$url' and '$1'"
      url=$1; url_given=true; shift ;;
  esac
done
if (($#)); then
  if $url_given || (($# > 1)); then bad_usage "unexpected arguments: $*"; fi
  url=$1
fi

[[ -n $url ]] || bad_usage "no engine URL: give one, or set ENGINE_MONITOR_URL"
[[ $url =~ ^https?://[^/[:space:]]+/?$ ]] || bad_usage "not an engine base URL (http://host:port): '$url'"
url=${url%/}

command -v curl >/dev/null || die 3 "curl is not installed"
command -v jq >/dev/null || die 3 "jq is not installed (Debian/Ubuntu: apt-get install jq)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The token goes to curl in a file, not on its command line, where other users could see it in ps.
auth=()
if [[ -n ${ENGINE_MONITOR_TOKEN:-} ]]; then
  (umask 077 && printf 'Authorization: Bearer %s\n' "$ENGINE_MONITOR_TOKEN" >"$work/auth")
  auth=(-H "@$work/auth")
fi

# api <path>: the JSON body of GET <url><path> in $work/body; exits 3 when that is impossible.
# curl retries a refused connection a few times, so an engine that is just starting or restarting
# (VS Code restarts it when its settings change) is waited for.
api() {
  local status
  if ! status=$(curl --silent --show-error --max-time 10 --retry 3 --retry-connrefused --retry-delay 1 \
    "${auth[@]}" -H 'Accept: application/json' -o "$work/body" -w '%{http_code}' "$url$1" 2>"$work/err"); then
    die 3 "cannot reach the engine at $url: $(tail -n 1 "$work/err")"
  fi
  case $status in
    200) ;;
    401) die 3 "the engine at $url wants a token: set ENGINE_MONITOR_TOKEN (HTTP 401)" ;;
    *)
      local why
      why=$(jq -r '.error.message // empty' <"$work/body" 2>/dev/null || true)
      die 3 "GET $url$1 answered HTTP $status${why:+: $why}" ;;
  esac
  jq -e 'type == "object" or type == "array"' <"$work/body" >/dev/null 2>&1 || die 3 "GET $url$1 did not answer JSON: is this an Engine Monitor engine?"
}

# ISO 8601 with milliseconds (as the engine writes them) to milliseconds since the epoch.
JQ_MS='def ms: if . == null then null else capture("^(?<s>[^.]+)(\\.(?<f>[0-9]+))?Z$") | ((.s + "Z") | fromdateiso8601) * 1000 + ((.f // "0") + "00" | .[0:3] | tonumber) end;'

# The engine only sees a queue file when it scans. Files written just before this script started
# are seen by the first scan that *started* after that, so "drained" needs such a scan to have
# completed (scanner.lastScanAt is its end; minus lastScanDurationMs, its start). Times are all
# the engine's, so clock skew with a remote engine does not matter.
api /status
read -r started_ms < <(jq -r "$JQ_MS"' .timestamp | ms' <"$work/body") || true
[[ $started_ms =~ ^[0-9]+$ ]] || die 3 "GET $url/status: no timestamp: is this an Engine Monitor engine?"

# Milliseconds since the epoch (EPOCHREALTIME's separator follows the locale: keep the digits).
now_ms() { local t=${EPOCHREALTIME//[!0-9]/}; echo $((10#$t / 1000)); }
deadline=0
if is_positive "$timeout"; then
  deadline=$(($(now_ms) + $(awk -v t="$timeout" 'BEGIN { printf "%d", t * 1000 }')))
fi

# Items scheduled by runAt for later: counted only with --ignore-scheduled.
count_scheduled() {
  local offset=0 total=0 n
  while :; do
    api "/items?outcome=pending&limit=1000&offset=$offset"
    n=$(jq '[.items[] | select(.phase == "scheduled")] | length' <"$work/body")
    total=$((total + n))
    offset=$((offset + $(jq '.items | length' <"$work/body")))
    if (($(jq '.items | length' <"$work/body") == 0 || $(jq '.total' <"$work/body") <= offset)); then break; fi
  done
  echo "$total"
}

last_line=""
last_state=""
first=true
while :; do
  $first || api /status
  first=false
  IFS=$'\t' read -r total launched pending failed launches failed_attempts state running rejected scan_start < <(
    jq -r "$JQ_MS"' [.stats.total, .stats.launched, .stats.pending, .stats.failed, .stats.totalLaunches,
      .stats.totalFailed, .engine.state, .engine.running, .scanner.itemsRejected,
      (if .scanner.lastScanAt == null then -1 else (.scanner.lastScanAt | ms) - (.scanner.lastScanDurationMs // 0) end)]
      | @tsv' <"$work/body"
  ) || true
  [[ $pending =~ ^[0-9]+$ ]] || die 3 "GET $url/status: unexpected body: is this an Engine Monitor engine?"

  scheduled=0
  if $ignore_scheduled && ((pending > 0)); then scheduled=$(count_scheduled); fi
  waiting_for=$((pending - scheduled))

  if [[ $state != "$last_state" ]]; then
    case $state in
      stopped) echo "$PROG: the engine is stopped: nothing launches until it is started" >&2 ;;
      restricted) echo "$PROG: the engine is restricted (untrusted workspace): nothing launches until the workspace is trusted" >&2 ;;
      stalled) echo "$PROG: the engine is stalled: it has not polled for 3 poll intervals" >&2 ;;
    esac
    last_state=$state
  fi

  if ((waiting_for == 0 && scan_start >= started_ms)); then break; fi

  if ! $quiet; then
    later=""
    if ((scheduled > 0)); then later=", $scheduled scheduled for later"; fi
    line="waiting: $pending pending ($running running$later), $launched launched, $failed failed"
    ((waiting_for > 0)) || line="waiting for the engine to scan the queue"
    [[ $line == "$last_line" ]] || echo "$line"
    last_line=$line
  fi

  if ((deadline > 0 && $(now_ms) >= deadline)); then
    die 4 "timed out after ${timeout}s: $pending pending ($running running), $launched launched, $failed failed"
  fi
  sleep "$interval"
done

later=""
if ((scheduled > 0)); then later=" ($scheduled scheduled for later)"; fi
echo "drained: $total items, $launched launched, $failed failed, $pending pending$later; $launches launch attempts, $failed_attempts failed"

# A rejected file or entry is not an item, so it cannot fail; but it is usually a typo that
# someone wants to hear about.
if ((rejected > 0)); then
  entries="entries were"
  if ((rejected == 1)); then entries="entry was"; fi
  echo "$PROG: $rejected queue $entries rejected since the engine started: curl -s '$url/logs?action=item_rejected'" >&2
fi

if ((failed > 0)); then
  api "/items?outcome=failed&limit=50"
  echo "failed items:"
  jq -r '.items[] | "  \(.id)\(if .name != .id then " (\(.name))" else "" end): \(.attempts) attempt\(if .attempts == 1 then "" else "s" end), last: \(.lastError // "failed")"' <"$work/body"
  shown=$(jq '.items | length' <"$work/body")
  ((failed <= shown)) || echo "  … and $((failed - shown)) more: curl -s '$url/items?outcome=failed'"
  echo "$PROG: $failed item(s) failed" >&2
  exit 1
fi
exit 0
