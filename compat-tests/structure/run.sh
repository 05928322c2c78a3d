#!/bin/bash
# compat-tests/structure: the code's shape, not its behaviour.
#   cargo fmt --all --check                       the workspace is rustfmt-clean
#   cargo fmt --check (fuzz/, its own workspace)  so are the fuzz targets
#   cargo check (fuzz/)                           which still compile
#   cargo clippy --workspace --all-targets -- -D warnings
#   modgraph.py --self-test                       the cycle finder on its fixtures
#   modgraph.py                                   no import cycles between the
#                                                 library's modules (src/)
#   modgraph.py --src providers/swrdma/src        nor between the provider's
#                                                 (swrdma)
#   no #[path] attribute in any *.rs              every module where its name says
#   no `static mut` in src/ and providers/
#   tx_lock only in providers/swrdma/src/links.rs the links' lock order, by types
#   fnlen.py --self-test                          the fn measurer on its fixtures
#   fnlen.py --max 150                            no function longer than 150
#                                                 lines in providers/ nor in src/
#                                                 (the *.rs git tracks there,
#                                                 test code left out)
# One PASS/FAIL line each; a FAIL is followed by (indented) what failed.
# Environment: CARGO (default cargo), STRUCTURE_TIMEOUT (s per cargo step, 1200).
# Scratch: build/compat-tests/structure/ (each step's full output).
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin structure
CARGO=${CARGO:-cargo}
TO=${STRUCTURE_TIMEOUT:-1200}
need "$CARGO=rustup" python3 git grep

# show FILE [N]: its first N (20) lines, indented
show() { head -n "${2:-20}" "$1" | sed 's/^/    /'; }

# step NAME LOG CMD...: PASS when CMD exits 0, else FAIL with its output
step() {
    local name=$1 log=$2 rc
    shift 2
    timeout "$TO" "$@" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        pass "$name"
    else
        local why="exit status $rc"
        [ $rc -eq 124 ] && why="timed out after ${TO}s"
        fail "$name" "$why (full output: $log)"
        show "$log"
    fi
}

step "cargo fmt --all --check" "$SCRATCH/fmt.log" "$CARGO" fmt --all --check -- --color=never
step "cargo fmt --check (fuzz/)" "$SCRATCH/fmt-fuzz.log" "$CARGO" fmt --manifest-path fuzz/Cargo.toml --check -- --color=never
# The fuzz targets are built only by `make fuzz` (nightly): check here that
# they still compile against today's APIs.
step "cargo check (fuzz/ targets)" "$SCRATCH/check-fuzz.log" "$CARGO" check --manifest-path fuzz/Cargo.toml --bins

# --keep-going: every crate's diagnostics, not only the first failing crate's.
timeout "$TO" "$CARGO" clippy --keep-going --workspace --all-targets -- -D warnings >"$SCRATCH/clippy.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
    pass "cargo clippy --workspace --all-targets -- -D warnings"
else
    grep -E '^(error|warning)(\[[^]]*\])?: ' -A1 "$SCRATCH/clippy.log" |
        grep -vE '^--$|could not compile|build failed|generated [0-9]+ warning' >"$SCRATCH/clippy.short"
    n=$(grep -cE '^(error|warning)' "$SCRATCH/clippy.short")
    fail "cargo clippy --workspace --all-targets -- -D warnings" \
        "exit status $rc, $n diagnostics (full output: $SCRATCH/clippy.log)"
    head -n 40 "$SCRATCH/clippy.short" | sed 's/^/    /'
fi

if python3 compat-tests/structure/modgraph.py --self-test >"$SCRATCH/modgraph-self-test.txt" 2>&1; then
    pass "modgraph.py self-test (a fixture crate with and without a cycle)"
else
    fail "modgraph.py self-test" "$(tail -n 1 "$SCRATCH/modgraph-self-test.txt")"
fi

# cycles DIR LOG: no import cycles between the modules of the crate whose
# lib.rs is in DIR (a trailing / is only for the step's name).
# The FAIL line names each cycle (a -> b -> a), the lines below give the
# edges that close it with their file:line.
cycles() {
    local name="no import cycles between the modules of $1 (modgraph.py)"
    if python3 compat-tests/structure/modgraph.py --src "${1%/}" >"$2" 2>&1; then
        pass "$name"
    else
        fail "$name" "$(head -n1 "$2") (full output: $2)"
        tail -n +2 "$2" | head -n 40 | sed 's/^/    /'
    fi
}
cycles src/ "$SCRATCH/modgraph.txt"
cycles providers/swrdma/src "$SCRATCH/modgraph-swrdma.txt"

# Code lines only: a match after // (a comment) does not count, nor does
# &'static mut (a lifetime).
git ls-files -co --exclude-standard -- '*.rs' >"$SCRATCH/rs-files"
xargs -d '\n' -r grep -nP '^(?:(?!//).)*#\s*!?\s*\[\s*path\b' <"$SCRATCH/rs-files" >"$SCRATCH/path-attr.txt"
if [ ! -s "$SCRATCH/path-attr.txt" ]; then
    pass "no #[path] attribute in any *.rs ($(wc -l <"$SCRATCH/rs-files") files)"
else
    fail "no #[path] attribute in any *.rs" "$(wc -l <"$SCRATCH/path-attr.txt") found"
    show "$SCRATCH/path-attr.txt"
fi

grep -E '^(src|providers)/' "$SCRATCH/rs-files" |
    xargs -d '\n' -r grep -nP "^(?:(?!//).)*(?<!')\\bstatic\\s+mut\\b" >"$SCRATCH/static-mut.txt"
if [ ! -s "$SCRATCH/static-mut.txt" ]; then
    pass "no static mut in src/ and providers/"
else
    fail "no static mut in src/ and providers/" "$(wc -l <"$SCRATCH/static-mut.txt") found"
    show "$SCRATCH/static-mut.txt"
fi

# The same-machine links' lock order (providers/swrdma/src/links.rs): a
# link's producer lock is taken only through OutLink / InLink there.
grep -E '^providers/swrdma/src/' "$SCRATCH/rs-files" | grep -v '^providers/swrdma/src/links\.rs$' |
    xargs -d '\n' -r grep -nP '^(?:(?!//).)*\btx_lock\b' >"$SCRATCH/tx-lock.txt"
if [ ! -s "$SCRATCH/tx-lock.txt" ]; then
    pass "the links' producer lock is taken only in providers/swrdma/src/links.rs (the lock order's types)"
else
    fail "the links' producer lock is taken only in providers/swrdma/src/links.rs" "$(wc -l <"$SCRATCH/tx-lock.txt") other uses"
    show "$SCRATCH/tx-lock.txt"
fi

FNLEN_MAX=150
if python3 compat-tests/structure/fnlen.py --self-test >"$SCRATCH/fnlen-self-test.txt" 2>&1; then
    pass "fnlen.py self-test (fns short and long, braces in strings, chars and comments, no body, nested)"
else
    fail "fnlen.py self-test" "$(tail -n 1 "$SCRATCH/fnlen-self-test.txt")"
fi
# The *.rs git tracks (so no build output); fnlen.py leaves out tests.rs
# and #[cfg(test)] code.  fnlen_step NAME MAX PATHSPEC...
fnlen_step() {
    local name=$1 max=$2 files rc out
    shift 2
    out=$SCRATCH/fnlen-${name%/}.txt
    mapfile -t files < <(git ls-files -- "$@")
    python3 compat-tests/structure/fnlen.py --max "$max" "${files[@]}" >"$out" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        pass "no function longer than $max lines in $name ($(tail -n 1 "$out"))"
    elif [ $rc -eq 1 ]; then
        fail "no function longer than $max lines in $name" \
            "$(tail -n 1 "$out") (full output: $out)"
        head -n -1 "$out" | head -n 40 | sed 's/^/    /'
    else
        fail "no function longer than $max lines in $name" "exit status $rc (full output: $out)"
        show "$out"
    fi
}
fnlen_step providers/ "$FNLEN_MAX" 'providers/*.rs'
fnlen_step src/ "$FNLEN_MAX" 'src/*.rs'

finish
