#!/usr/bin/env bash
# run-item.sh: enqueue one command as an Engine Monitor item, print its output live, and exit with
# its outcome. A CI step or a make target that runs through the engine (and shows up in its views)
# instead of in the calling shell. Built on the command-line client; no curl, no jq.
#
#   examples/scripts/run-item.sh [options] ID -- COMMAND [ARG...]
#
# Run `run-item.sh --help` for the options and exit codes.
set -euo pipefail

PROG=$(basename "$0")

usage() {
  cat <<EOF
Usage: $PROG [options] ID -- COMMAND [ARG...]

Writes an item with this id, command and args into the queue folder, waits for the engine to
discover it, prints its output as it runs (engine-monitor output ID --follow) and exits with the
outcome of its attempt (one attempt, no retries). ID must be new to the engine.

  -q, --queue DIR       the queue folder (default .engine/queue, relative to this folder)
  -t, --timeout SEC     how long to wait for the engine to discover the item (default 60)
  -h, --help            this text

The engine is found as the client finds it: \$ENGINE_MONITOR_URL, else the nearest
.engine/state/endpoint.json; a token from \$ENGINE_MONITOR_TOKEN. The client is the
engine-monitor command, or \$ENGINE_MONITOR_CLI (e.g. "node path/to/dist/cli.js").

Exit codes:
  0  the attempt succeeded
  1  the attempt failed (its output shows why), or the engine refused the item
  2  bad arguments, or an ID the engine already has
  3  the engine cannot be reached, or did not discover the item within --timeout
EOF
}

bad_usage() {
  echo "$PROG: $1" >&2
  echo "Try '$PROG --help'." >&2
  exit 2
}

queue=.engine/queue
timeout=60
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    -q | --queue) (($# >= 2)) || bad_usage "$1 needs a folder"; queue=$2; shift 2 ;;
    -t | --timeout)
      (($# >= 2)) || bad_usage "$1 needs a number of seconds"
      [[ $2 =~ ^[0-9]+$ ]] || bad_usage "$1: not a whole number of seconds: '$2'"
      timeout=$2; shift 2 ;;
    --) bad_usage "missing ID before --" ;;
    -*) bad_usage "unknown option: $1" ;;
    *) break ;;
  esac
done
(($# >= 1)) || bad_usage "missing ID"
id=$1; shift
[[ $id =~ ^[A-Za-z0-9._-]+$ ]] || bad_usage "ID '$id' must be letters, digits, '.', '_' or '-' (it names the queue file)"
(($# >= 1)) && [[ $1 == -- ]] || bad_usage "missing '--' before the command"
shift
(($# >= 1)) || bad_usage "missing COMMAND after --"
[[ -d $queue ]] || bad_usage "no queue folder '$queue' (give --queue DIR)"

read -ra client <<<"${ENGINE_MONITOR_CLI:-engine-monitor}"

# An id the engine already knows would not run again (a launched item's new definition is
# rejected): this would follow its old attempt. Exit 3 here too if the engine cannot be asked.
status=0
seen=$("${client[@]}" logs --item "$id" --limit 1 2>/dev/null) || status=$?
((status != 3)) || exec "${client[@]}" logs --item "$id" --limit 1
[[ -z $seen ]] || bad_usage "the engine already has an item '$id': pick a new ID"

# The item as JSON, written under a temporary name and renamed, so the engine never reads half a
# file. node (which the client needs anyway) does the quoting.
file="$queue/$id.json"
node -e 'const [id, command, ...args] = process.argv.slice(1); process.stdout.write(JSON.stringify({ id, command, args, maxAttempts: 1 }) + "\n")' \
  "$id" "$@" >"$file.tmp"
mv "$file.tmp" "$file"

# Discovered once the log has an entry for it. The client's exit code 3 (unreachable) ends the
# wait at once: run it again without hiding its message, which says why.
deadline=$((SECONDS + timeout))
while :; do
  status=0
  seen=$("${client[@]}" logs --item "$id" --limit 1 2>/dev/null) || status=$?
  ((status != 3)) || exec "${client[@]}" logs --item "$id" --limit 1
  [[ -z $seen ]] || break
  if ((SECONDS >= deadline)); then
    echo "$PROG: the engine did not discover $file within ${timeout}s: does it watch $queue?" >&2
    exit 3
  fi
  sleep 0.2
done

# Follows the first attempt (waiting for it if the item is queued behind others), printing its
# output, and exits 0 if it succeeded, 1 if it failed.
exec "${client[@]}" output "$id" --follow
