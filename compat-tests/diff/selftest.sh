#!/bin/sh
# Self-test of the diff suite (not run by `make test`): proves that the suite
# fails when "our" library differs from upstream.  It feeds run.sh copies of
# upstream's library with one same-length byte patch each and checks that the
# expected checks FAIL (and that an unpatched copy passes).  Also exercises
# the child-process fallback (DIFF_MODE=fork).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 2
UPSTREAM_LIB=${UPSTREAM_LIB:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0}
out=build/compat-tests/diff/selftest
mkdir -p "$out"
np=0
nf=0

patch_copy() { # dest old new  (python3: exact, unique, same-length bytes)
	python3 - "$UPSTREAM_LIB" "$1" "$2" "$3" <<'EOF'
import sys
src, dst, old, new = sys.argv[1:]
old = old.encode().decode('unicode_escape').encode('latin1')
new = new.encode().decode('unicode_escape').encode('latin1')
assert len(old) == len(new), "patch must keep the length"
data = open(src, 'rb').read()
assert data.count(old) == 1, "pattern %r occurs %d times" % (old, data.count(old))
open(dst, 'wb').write(data.replace(old, new))
EOF
}

# name mode expect-fail-regex old new
try() {
	name=$1 mode=$2 expect=$3 old=$4 new=$5
	lib="$root/$out/$name.so"
	if [ -n "$old" ]; then
		patch_copy "$lib" "$old" "$new" || { echo "FAIL $name: patching failed"; nf=$((nf + 1)); return; }
	else
		cp "$UPSTREAM_LIB" "$lib"
	fi
	DIFF_MODE=$mode OUR_LIB="$lib" "$here/run.sh" >"$out/$name.log" 2>&1
	rc=$?
	fails=$(grep -c '^FAIL' "$out/$name.log")
	last=$(tail -n1 "$out/$name.log")
	if [ -z "$expect" ]; then
		if [ $rc -eq 0 ] && [ "$fails" -eq 0 ]; then
			echo "PASS $name ($last)"
			np=$((np + 1))
		else
			echo "FAIL $name: unpatched copy should pass (rc=$rc, $last)"
			nf=$((nf + 1))
		fi
	elif [ $rc -ne 0 ] && grep -Eq "^FAIL ($expect)" "$out/$name.log"; then
		printf 'PASS %s (rc=%s, %s FAIL lines, e.g. %s)\n' "$name" "$rc" "$fails" \
			"$(grep -E "^FAIL ($expect)" "$out/$name.log" | head -n1 | cut -c1-160)"
		np=$((np + 1))
	else
		echo "FAIL $name: expected FAIL matching '$expect' (rc=$rc, $last; see $out/$name.log)"
		nf=$((nf + 1))
	fi
}

try identical_copy ns '' '' ''
try identical_copy_forkmode fork '' '' ''
try node_type_string ns 'ibv_node_type_str\(6\):' 'usNIC UDP' 'usNIC UPD'
try node_type_string_forkmode fork 'ibv_node_type_str\(6\):' 'usNIC UDP' 'usNIC UPD'
try sysfs_class_path ns 'get_device_list\.sysfs_class_no_abi:' '%s/class/infiniband_verbs\x00' '%s/class/infiniband_verbz\x00'
try fork_env_name ns 'fork\.RDMAV_FORK_SAFE=1:' 'RDMAV_FORK_SAFE' 'RDMAV_FORK_SAFX'
try guid_format ns 'ibv_get_device_guid\.file_ok:' '%hx:%hx:%hx:%hx' '%hx:%hx-%hx:%hx'
try memlock_message ns 'get_device_list\.memlock_warning_nonroot\.output:' 'RLIMIT_MEMLOCK is' 'RLIMIT_MEMLOCK iz'
try symbol_version ns 'symbols\.ours:' 'IBVERBS_1.13\x00' 'IBVERBS_1.31\x00'

echo "selftest: $np passed, $nf failed"
[ $nf -eq 0 ]
