#!/usr/bin/env bash
# Check every exercise's worked solution: apply its patch to a scratch copy
# of the workspace, switch the exercise's test on, and run it together with
# the rest of the lesson's tests. A solution that no longer applies, or no
# longer passes, fails the check: the book's solutions cannot rot.
#
# Usage: docs/solutions/check.sh [NAME...]   (default: every *.patch here)
# Each patch is named LESSON-CRATE--TEST-NAME.patch, e.g.
# lesson1-threadpool--exercise_per_host_limit.patch.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
scratch="${SCRATCH:-$root/target/solutions-scratch}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/solutions}"

# One scratch copy, reset before each patch: the same paths every time, so
# cargo rebuilds only what a patch changed.
rm -rf "$scratch"
mkdir -p "$scratch"
(cd "$root" && git ls-files -z | xargs -0 -I{} cp --parents {} "$scratch/")
(cd "$scratch" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm base)

if [ "$#" -gt 0 ]; then
    patches=()
    for name in "$@"; do patches+=("$here/$name.patch"); done
else
    patches=("$here"/*.patch)
fi

for patch in "${patches[@]}"; do
    name="$(basename "$patch" .patch)"
    crate="${name%%--*}"
    test="${name#*--}"
    echo "== solution $name"
    (cd "$scratch" && git checkout -q -- . && git clean -qfd && git apply "$patch")
    # An exercise whose test calls code the learner writes keeps the test
    # behind a feature of the same name (exercise_x → exercise-x).
    features=()
    feature="${test//_/-}"
    if grep -q "^$feature = " "$scratch/$crate/Cargo.toml"; then
        features=(--features "$feature")
    fi
    (cd "$scratch" && cargo test -q -p "$crate" "${features[@]}" --test exercises -- --ignored --exact "$test")
    # The lesson's other tests, less any whose expectations the exercise
    # changes on purpose: NAME.skip lists those test files, one per line,
    # each with the reason after a `#`.
    targets=(--lib --bins)
    for file in "$scratch/$crate"/tests/*.rs; do
        target="$(basename "$file" .rs)"
        if [ -f "$here/$name.skip" ] && grep -qx "$target *#.*" "$here/$name.skip"; then
            echo "   (skipping tests/$target.rs: $(grep "^$target " "$here/$name.skip" | sed 's/^[^#]*# *//'))"
            continue
        fi
        targets+=(--test "$target")
    done
    (cd "$scratch" && cargo test -q -p "$crate" "${features[@]}" "${targets[@]}")
done
echo "== all ${#patches[@]} solutions pass"
