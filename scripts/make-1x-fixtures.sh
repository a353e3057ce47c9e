#!/usr/bin/env bash
# Makes the 1.x session files the migration tests open (Tests/Fixtures/1x), with a
# `sessionctl` built from the last 1.x commit:
#
#   git worktree add /tmp/one-x 747a71a && (cd /tmp/one-x && swift build --product sessionctl)
#   scripts/make-1x-fixtures.sh /tmp/one-x/.build/debug/sessionctl
#
# Each file is what 1.x code wrote; nothing here edits a file by other means.
set -euo pipefail
sessionctl=${1:?usage: $0 PATH-TO-1.x-sessionctl}
out=$(cd "$(dirname "$0")/.." && pwd)/Tests/Fixtures/1x
mkdir -p "$out"
rm -f "$out"/*.db
one() { SESSIONCTL_ORIGIN=sessionctl "$sessionctl" --db "$out/$1" "${@:2}" > /dev/null; }

# A session that signed in, out, was renamed and signed in again: four changes.
one signed-in.db login alice
one signed-in.db logout
one signed-in.db rename bob
one signed-in.db login bob

# A file that was created and never changed: no username, no change.
one never-signed-in.db logout

# A signed-out session whose oldest changes were compacted away, with a retention policy.
one compacted.db login alice
one compacted.db logout
one compacted.db login carol
one compacted.db logout
one compacted.db compact --keep 1
one compacted.db retention --keep 50

# sessionctl's last connection checkpoints and removes the -wal and -shm as it closes.
if ls "$out"/*-wal "$out"/*-shm > /dev/null 2>&1; then echo "a -wal or -shm was left beside a file" >&2; exit 1; fi
ls -l "$out"
