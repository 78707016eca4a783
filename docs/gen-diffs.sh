#!/usr/bin/env bash
# Regenerate the lesson-to-lesson diffs that the book includes, from the code.
#
#   docs/gen-diffs.sh           write docs/src/generated/*.diff
#   docs/gen-diffs.sh --check   exit 1 if a generated file is out of date
#
# Each diff is `diff -u` of one file in two adjacent lessons, with fixed
# labels instead of file timestamps so that the output only changes when the
# code does.
set -euo pipefail
cd "$(dirname "$0")/.."

out=docs/src/generated
check=false
[[ "${1:-}" == "--check" ]] && check=true

# "old-crate new-crate file output-name"
diffs=(
  "lesson1-threadpool lesson2-callbacks crawler.rs lesson1-lesson2-crawler.diff"
  "lesson1-threadpool lesson2-callbacks lib.rs lesson1-lesson2-lib.diff"
)

mkdir -p "$out"
stale=0
for entry in "${diffs[@]}"; do
  read -r old new file name <<<"$entry"
  a="$old/src/$file"
  b="$new/src/$file"
  if [[ ! -f "$a" || ! -f "$b" ]]; then
    echo "gen-diffs: missing $a or $b" >&2
    exit 2
  fi
  # diff exits 1 when the files differ, which is the expected case.
  text=$(diff -u --label "$a" --label "$b" "$a" "$b" || [[ $? -eq 1 ]])
  if $check; then
    if [[ "$text" != "$(cat "$out/$name" 2>/dev/null)" ]]; then
      echo "gen-diffs: $out/$name is stale; run docs/gen-diffs.sh" >&2
      stale=1
    fi
  else
    printf '%s\n' "$text" >"$out/$name"
    echo "wrote $out/$name"
  fi
done
exit "$stale"
