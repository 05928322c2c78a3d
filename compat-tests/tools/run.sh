#!/bin/bash
# Runs Debian's unmodified ibverbs-utils binaries once against upstream's
# libibverbs and once against ours (LD_LIBRARY_PATH=<dir of OUR_LIB>, plus a
# few LD_PRELOAD=<OUR_LIB> variants) and compares stdout, stderr and exit
# status byte for byte.  For each run against ours it also checks that the
# binary really bound its ibv_* symbols to OUR library, at the same symbol
# versions as against upstream (LD_DEBUG=bindings), that the loader maps
# libibverbs.so.1 to our file (LD_TRACE_LOADED_OBJECTS=1), and that no
# "version ... not found" error appears.  One PASS/FAIL per (tool, args).
# Follows compat-tests/CONVENTIONS.md.
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin tools --clean
out=$SCRATCH
BIN=${IBV_TOOLS_BIN:-/usr/bin}
TIMEOUT=${TOOLS_TIMEOUT:-20}

# ---- prerequisites -------------------------------------------------------
need "$UPSTREAM_LIB=install libibverbs1" \
	$(for t in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong \
		ibv_srq_pingpong ibv_xsrq_pingpong ibv_asyncwatch; do echo "$BIN/$t=ibverbs-utils"; done) \
	"$OUR_LIB=run make" timeout=coreutils
OUR_LIB=$(abspath "$OUR_LIB")
UPSTREAM_LIB=$(abspath "$UPSTREAM_LIB")

# ---- library directories for LD_LIBRARY_PATH ------------------------------
# Ours: the directory of OUR_LIB if the file is called libibverbs.so.1 there,
# else a directory holding a libibverbs.so.1 symlink to it.
if [ "$(basename "$OUR_LIB")" = libibverbs.so.1 ]; then
	our_dir=$(dirname "$OUR_LIB")
else
	our_dir=$out/lib-ours
	mkdir -p "$our_dir"
	ln -sf "$OUR_LIB" "$our_dir/libibverbs.so.1"
fi
our_loaded=$our_dir/libibverbs.so.1
our_real=$(readlink -f "$our_loaded")

# Upstream: the system copy as is, unless UPSTREAM_LIB names another file.
sys_lib=$(ldconfig -p 2>/dev/null | awk '/libibverbs\.so\.1 .*x86-64/ { print $NF; exit }')
[ -n "$sys_lib" ] || sys_lib=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
up_real=$(readlink -f "$UPSTREAM_LIB")
if [ "$(readlink -f "$sys_lib")" = "$up_real" ]; then
	up_dir=
else
	up_dir=$out/lib-upstream
	mkdir -p "$up_dir"
	ln -sf "$UPSTREAM_LIB" "$up_dir/libibverbs.so.1"
fi

# ---- fake sysfs trees -----------------------------------------------------
mkdir -p "$out/sysfs/empty" "$out/sysfs/class/class/infiniband_verbs"
echo 6 >"$out/sysfs/class/class/infiniband_verbs/abi_version"

# ---- running ---------------------------------------------------------------
# Variables that change libibverbs' behaviour are cleared for every run.
clean_env=(env -u LD_LIBRARY_PATH -u LD_PRELOAD -u LD_DEBUG -u LD_DEBUG_OUTPUT
	-u LD_TRACE_LOADED_OBJECTS -u SYSFS_PATH -u RDMAV_FORK_SAFE -u IBV_FORK_SAFE
	-u RDMAV_HUGEPAGES_SAFE -u IBV_SHOW_WARNINGS -u VERBS_LOG_LEVEL
	-u VERBS_LOG_FILE -u RDMAV_DRIVERS LC_ALL=C LANG=C)

# run <dir> <how> <extra-env> <tool> [args...]
#   how: up | lib (LD_LIBRARY_PATH) | pre (LD_PRELOAD)
# writes <dir>/{stdout,stderr,rc,bindings,trace}
run() {
	local d=$1 how=$2 extra=$3 tool=$4
	shift 4
	local -a ldenv=()
	case $how in
	up) [ -n "$up_dir" ] && ldenv=(LD_LIBRARY_PATH="$up_dir") ;;
	lib) ldenv=(LD_LIBRARY_PATH="$our_dir") ;;
	pre) ldenv=(LD_PRELOAD="$OUR_LIB") ;;
	esac
	local -a xenv=()
	[ -n "$extra" ] && read -r -a xenv <<<"$extra"
	mkdir -p "$d"
	"${clean_env[@]}" "${ldenv[@]}" "${xenv[@]}" \
		timeout "$TIMEOUT" "$BIN/$tool" "$@" </dev/null >"$d/stdout" 2>"$d/stderr"
	echo $? >"$d/rc"
	# which library did the binary's own references bind to, at which version
	rm -f "$d"/ld.*
	"${clean_env[@]}" "${ldenv[@]}" "${xenv[@]}" LD_DEBUG=bindings LD_DEBUG_OUTPUT="$d/ld" \
		timeout "$TIMEOUT" "$BIN/$tool" "$@" </dev/null >/dev/null 2>"$d/stderr.bindings-run"
	cat "$d"/ld.* 2>/dev/null |
		sed -n "s#^ *[0-9]*:[[:space:]]*binding file $BIN/$tool \[0\] to \(.*\) \[0\]: normal symbol \`\(ibv_[^']*\|mbps_to_ibv_rate\|mult_to_ibv_rate\)' \(\[[^]]*\]\).*#\1 \2 \3#p" |
		sort -u >"$d/bindings"
	rm -f "$d"/ld.*
	"${clean_env[@]}" "${ldenv[@]}" "${xenv[@]}" LD_TRACE_LOADED_OBJECTS=1 \
		"$BIN/$tool" </dev/null >"$d/trace" 2>&1
}

clip() { # one-line, bounded rendering of a file
	head -c 300 "$1" | cat -v | sed 's/$/\\n/' | tr -d '\n'
	[ "$(wc -c <"$1")" -gt 300 ] && printf '...'
	true
}

# check <label> <how> <extra-env> <tool> [args...]
check() {
	local label=$1 how=$2 extra=$3 tool=$4
	shift 4
	local d=$out/cases/$(printf '%s' "$label" | tr -c 'A-Za-z0-9_.=-' '_')
	run "$d/upstream" up "$extra" "$tool" "$@"
	run "$d/ours" "$how" "$extra" "$tool" "$@"
	local why=() f
	local rc_u rc_o
	rc_u=$(cat "$d/upstream/rc")
	rc_o=$(cat "$d/ours/rc")
	[ "$rc_u" = "$rc_o" ] || why+=("exit status upstream=$rc_u ours=$rc_o")
	for f in stdout stderr; do
		cmp -s "$d/upstream/$f" "$d/ours/$f" ||
			why+=("$f differs: upstream=[$(clip "$d/upstream/$f")] ours=[$(clip "$d/ours/$f")]")
	done
	# the upstream run must really be upstream (sanity of the harness)
	if [ ! -s "$d/upstream/bindings" ]; then
		why+=("no ibv_* bindings recorded for the upstream run")
	elif awk '{ print $1 }' "$d/upstream/bindings" | sort -u | while read -r p; do
		[ "$(readlink -f "$p")" = "$up_real" ] || echo x
	done | grep -q x; then
		why+=("upstream run bound to: $(awk '{ print $1 }' "$d/upstream/bindings" | sort -u | tr '\n' ' ')")
	fi
	# the run against ours must bind every ibv_* reference to our file ...
	local targets
	targets=$(awk '{ print $1 }' "$d/ours/bindings" | sort -u)
	if [ -z "$targets" ]; then
		why+=("no ibv_* bindings recorded for the run against ours")
	else
		for f in $targets; do
			[ "$(readlink -f "$f")" = "$our_real" ] ||
				why+=("bound to $f instead of $our_loaded")
		done
	fi
	# ... at the same symbols and versions as against upstream
	awk '{ print $2, $3 }' "$d/upstream/bindings" >"$d/upstream/symvers"
	awk '{ print $2, $3 }' "$d/ours/bindings" >"$d/ours/symvers"
	cmp -s "$d/upstream/symvers" "$d/ours/symvers" ||
		why+=("symbol bindings differ: $(diff "$d/upstream/symvers" "$d/ours/symvers" | grep '^[<>]' | head -n 6 | tr '\n' ' ')")
	# the loader maps libibverbs.so.1 to our file (LD_PRELOAD: preloaded object)
	local mapped
	if [ "$how" = pre ]; then
		grep -q "$OUR_LIB" "$d/ours/trace" || why+=("LD_TRACE_LOADED_OBJECTS does not list $OUR_LIB")
	else
		mapped=$(sed -n 's|^[[:space:]]*libibverbs\.so\.1 => \(.*\) (0x.*|\1|p' "$d/ours/trace")
		[ -n "$mapped" ] && [ "$(readlink -f "$mapped")" = "$our_real" ] ||
			why+=("LD_TRACE_LOADED_OBJECTS maps libibverbs.so.1 to '${mapped:-nothing}'")
	fi
	local loader_re="version \`[^']*' not found|=> not found|cannot open shared object|symbol lookup error|undefined symbol"
	if grep -Eqs "$loader_re" "$d/ours/trace" "$d/ours/stderr" "$d/ours/stderr.bindings-run"; then
		why+=("loader error: $(grep -Ehs "$loader_re" "$d/ours/trace" "$d/ours/stderr" "$d/ours/stderr.bindings-run" | head -n 2 | tr '\n' ' ')")
	fi
	if [ ${#why[@]} -eq 0 ]; then
		pass "$label"
	else
		local IFS=';'
		fail "$label" "${why[*]} (outputs in $d)"
	fi
}

S_EMPTY="SYSFS_PATH=$out/sysfs/empty"
S_CLASS="SYSFS_PATH=$out/sysfs/class"

# --- on this machine: no RDMA devices, no RDMA kernel support ---
check "ibv_devices" lib "" ibv_devices
check "ibv_devices -h" lib "" ibv_devices -h
check "ibv_devices extra args" lib "" ibv_devices foo bar
check "ibv_devinfo" lib "" ibv_devinfo
check "ibv_devinfo -v" lib "" ibv_devinfo -v
check "ibv_devinfo -l" lib "" ibv_devinfo -l
check "ibv_devinfo -d nonexistent" lib "" ibv_devinfo -d nonexistent
check "ibv_devinfo -i 1" lib "" ibv_devinfo -i 1
check "ibv_devinfo -i 0" lib "" ibv_devinfo -i 0
check "ibv_devinfo -h" lib "" ibv_devinfo -h
check "ibv_devinfo --help" lib "" ibv_devinfo --help
check "ibv_devinfo --bogus" lib "" ibv_devinfo --bogus
check "ibv_asyncwatch" lib "" ibv_asyncwatch
check "ibv_asyncwatch -h" lib "" ibv_asyncwatch -h
check "ibv_asyncwatch -d nonexistent" lib "" ibv_asyncwatch -d nonexistent
for p in ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong ibv_xsrq_pingpong; do
	check "$p" lib "" "$p"
	check "$p -h" lib "" "$p" -h
	check "$p -d nonexistent" lib "" "$p" -d nonexistent
done

# --- with SYSFS_PATH pointing at fake trees ---
check "SYSFS_PATH=empty-dir ibv_devinfo" lib "$S_EMPTY" ibv_devinfo
check "SYSFS_PATH=empty-dir ibv_devices" lib "$S_EMPTY" ibv_devices
check "SYSFS_PATH=class-no-devices ibv_devices" lib "$S_CLASS" ibv_devices
check "SYSFS_PATH=class-no-devices ibv_devinfo" lib "$S_CLASS" ibv_devinfo
check "SYSFS_PATH=class-no-devices ibv_devinfo -v" lib "$S_CLASS" ibv_devinfo -v
check "SYSFS_PATH=class-no-devices ibv_devinfo -l" lib "$S_CLASS" ibv_devinfo -l
check "SYSFS_PATH=class-no-devices ibv_devinfo -d nonexistent" lib "$S_CLASS" ibv_devinfo -d nonexistent
check "SYSFS_PATH=class-no-devices ibv_asyncwatch" lib "$S_CLASS" ibv_asyncwatch
check "SYSFS_PATH=class-no-devices ibv_rc_pingpong" lib "$S_CLASS" ibv_rc_pingpong
check "SYSFS_PATH=class-no-devices ibv_ud_pingpong -d nonexistent" lib "$S_CLASS" ibv_ud_pingpong -d nonexistent
check "SYSFS_PATH=class-no-devices RDMAV_FORK_SAFE=1 ibv_devices" lib "$S_CLASS RDMAV_FORK_SAFE=1" ibv_devices

# --- LD_PRELOAD=<OUR_LIB> instead of LD_LIBRARY_PATH ---
check "LD_PRELOAD ibv_devices" pre "" ibv_devices
check "LD_PRELOAD ibv_devinfo" pre "" ibv_devinfo
check "LD_PRELOAD ibv_devinfo -l" pre "" ibv_devinfo -l
check "LD_PRELOAD SYSFS_PATH=class-no-devices ibv_devinfo" pre "$S_CLASS" ibv_devinfo
check "LD_PRELOAD SYSFS_PATH=class-no-devices ibv_devices" pre "$S_CLASS" ibv_devices

finish
