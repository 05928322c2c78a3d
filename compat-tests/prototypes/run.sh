#!/bin/bash
# compat-tests/prototypes: the C prototypes cbindgen generates for every
# #[no_mangle] extern "C" function of the library (its macro-expanded
# source: most exports come from the export! macro) against the prototypes
# of the same names in our include/infiniband/*.h.  One PASS/FAIL per
# function; exports no public header declares (the IBVERBS_1.0 compat names,
# .symver targets of undeclared names) are listed as SKIP.  See prototypes.py.
#
# Environment: OUR_INCLUDE, CC, CLANG, CARGO (default cargo), CBINDGEN
# (default: cbindgen on the PATH or in ~/.cargo/bin; cargo install cbindgen --locked).
# Scratch: build/compat-tests/prototypes/ (expanded.rs, generated.h, probe.c).
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin prototypes
CARGO=${CARGO:-cargo}
CBINDGEN=${CBINDGEN:-$(command -v cbindgen || echo "$HOME/.cargo/bin/cbindgen")}
need "$CARGO" "$CBINDGEN=cargo install cbindgen --locked" python3 clang "${CC:-cc}"

# The library's source with every macro expanded (RUSTC_BOOTSTRAP: the
# stable toolchain's -Zunpretty).
if ! RUSTC_BOOTSTRAP=1 timeout 1200 "$CARGO" rustc -q -p ibverbs_rs --lib -- -Zunpretty=expanded \
    >"$SCRATCH/expanded.rs" 2>"$SCRATCH/expand.log"; then
    fail_early "macro expansion" "cargo rustc -Zunpretty=expanded failed: $(tail -n 3 "$SCRATCH/expand.log" | tr '\n' ' ')"
fi
if ! "$CBINDGEN" --quiet --config compat-tests/prototypes/cbindgen.toml --lang c \
    -o "$SCRATCH/generated.h" "$SCRATCH/expanded.rs" 2>"$SCRATCH/cbindgen.log"; then
    fail_early cbindgen "cbindgen failed on $SCRATCH/expanded.rs: $(tail -n 3 "$SCRATCH/cbindgen.log" | tr '\n' ' ')"
fi
export OUR_INCLUDE
exec python3 compat-tests/prototypes/prototypes.py --generated "$SCRATCH/generated.h" --scratch "$SCRATCH"
