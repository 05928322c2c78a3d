#!/bin/sh
# Self-test of the tools suite (not run by `make test`): feeds run.sh copies of
# upstream's library, one unpatched and others with a same-length byte patch,
# and checks that the patched ones make the expected checks FAIL.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 2
UPSTREAM_LIB=${UPSTREAM_LIB:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0}
out=$root/build/compat-tests/tools-selftest
mkdir -p "$out"
np=0
nf=0

patch_copy() { # dest old new  (exact, unique, same-length bytes)
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

# name expect-fail-regex old new
try() {
	name=$1 expect=$2 old=$3 new=$4
	mkdir -p "$out/$name"
	lib="$out/$name/libibverbs.so.1"
	if [ -n "$old" ]; then
		patch_copy "$lib" "$old" "$new" || { echo "FAIL $name: patching failed"; nf=$((nf + 1)); return; }
	else
		cp "$UPSTREAM_LIB" "$lib"
	fi
	OUR_LIB="$lib" "$here/run.sh" >"$out/$name.log" 2>&1
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
			"$(grep -E "^FAIL ($expect)" "$out/$name.log" | head -n1 | cut -c1-200)"
		np=$((np + 1))
	else
		echo "FAIL $name: expected FAIL matching '$expect' (rc=$rc, $last; see $out/$name.log)"
		nf=$((nf + 1))
	fi
}

try identical_copy '' '' ''
try sysfs_class_path 'SYSFS_PATH=class-no-devices ibv_devinfo:' '%s/class/infiniband_verbs\x00' '%s/class/infiniband_verbz\x00'
try missing_symbol 'ibv_devices:' 'ibv_get_device_list\x00' 'ibv_get_device_lisT\x00'
try sysfs_env_name 'SYSFS_PATH=class-no-devices ibv_devices:' 'SYSFS_PATH\x00' 'SYSFS_PATX\x00'

echo "tools-selftest: $np passed, $nf failed"
[ $nf -eq 0 ]
