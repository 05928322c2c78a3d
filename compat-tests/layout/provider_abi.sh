#!/bin/bash
# Provider-ABI check: our include/infiniband/driver.h (with kern-abi.h and
# cmd_ioctl.h) against the rdma-core 44 facts pinned in provider_abi.expected.
#
#   compat-tests/layout/provider_abi.sh           check, one PASS/FAIL line per key
#   compat-tests/layout/provider_abi.sh --print   only print what the probe measures
#
# Every non-comment line of the table is "<key> <value>"; the value is the last
# word.  Key kinds (the C expression the probe evaluates is shown on the right):
#   sizeof struct|union|enum T        sizeof(struct T)
#   sizeof typedef T                  sizeof(T)
#   alignof struct|union T            _Alignof(struct T)
#   offsetof struct T m[.n]           offsetof(struct T, m.n)
#   membersize struct T m[.n]         sizeof(((struct T *)0)->m.n)
#   type struct T m[.n] TYPE...       1 if the member's type is compatible with TYPE
#   typedef T TYPE...                 1 if typedef T is compatible with TYPE
#   proto F TYPE...                   1 if &F is compatible with TYPE (a pointer type)
#   enum C | macro M                  the integer value of C / M
#   defined M                         1 if M is a macro
# Members of anonymous structs/unions are named as C names them (without the
# anonymous level).
#
# Environment: OUR_INCLUDE (default include), CC (default cc),
#   PROVIDER_ABI_CFLAGS (default "-I$OUR_INCLUDE"; point it at another tree's
#   headers together with --print to regenerate the table),
#   LAYOUT_QUIET=1 hides PASS lines.
# Scratch: build/compat-tests/layout/provider_abi/.
cd "$(dirname "$0")/../.." || exit 1

SUITE=provider_abi
OUR_INCLUDE="${OUR_INCLUDE:-include}"
CC="${CC:-cc}"
CFLAGS_PROBE="${PROVIDER_ABI_CFLAGS:--I$OUR_INCLUDE}"
TABLE=compat-tests/layout/provider_abi.expected
SCRATCH=build/compat-tests/layout/provider_abi
PRINT_ONLY=0
[ "$1" = "--print" ] && PRINT_ONLY=1

fatal() {
	echo "FAIL $SUITE: $*"
	echo "$SUITE: 0 passed, 1 failed"
	exit 1
}

command -v "$CC" >/dev/null 2>&1 || fatal "C compiler '$CC' not found"
[ -r "$TABLE" ] || fatal "$TABLE not readable"
mkdir -p "$SCRATCH" || fatal "cannot create $SCRATCH"

KEYS="$SCRATCH/keys"
EXCLUDE="$SCRATCH/excluded"
: >"$EXCLUDE"
# key list (table without values and comments)
awk '!/^[ \t]*(#|$)/ { $NF = ""; sub(/ $/, ""); print }' "$TABLE" >"$KEYS"

# Write the probe for all keys not in $EXCLUDE.  Each measured key occupies
# exactly one source line so that compiler diagnostics map back to keys; the
# key's index is written to $SCRATCH/probe.map next to its line number.
gen_probe() {
	awk -v map="$SCRATCH/probe.map" -v excl="$EXCLUDE" '
	BEGIN {
		while ((getline x < excl) > 0) skip[x] = 1
		print "#include <stddef.h>"
		print "#include <stdio.h>"
		print "#include <infiniband/driver.h>"
		print "#define P(k, v) printf(\"%s %lld\\n\", k, (long long)(v))"
		print "int main(void)"
		print "{"
		line = 6
		printf "" > map
	}
	function rest(from,    s, i) {
		s = $from
		for (i = from + 1; i <= NF; i++) s = s " " $i
		return s
	}
	function emit(expr) {
		line++
		print "\tP(\"" $0 "\", " expr ");"
		print line, NR >> map
	}
	{
		if ($0 in skip) next
		k = $1
		if (k == "sizeof" && $2 == "typedef")	emit("sizeof(" $3 ")")
		else if (k == "sizeof")			emit("sizeof(" $2 " " $3 ")")
		else if (k == "alignof")		emit("_Alignof(" $2 " " $3 ")")
		else if (k == "offsetof")		emit("offsetof(" $2 " " $3 ", " $4 ")")
		else if (k == "membersize")		emit("sizeof(((" $2 " " $3 " *)0)->" $4 ")")
		else if (k == "type")			emit("__builtin_types_compatible_p(__typeof__(((" $2 " " $3 " *)0)->" $4 "), " rest(5) ")")
		else if (k == "typedef")		emit("__builtin_types_compatible_p(" $2 ", " rest(3) ")")
		else if (k == "proto")			emit("__builtin_types_compatible_p(__typeof__(&" $2 "), " rest(3) ")")
		else if (k == "enum" || k == "macro")	emit("(" $2 ")")
		else if (k == "defined") {
			print "#ifdef " $2; print "\tP(\"" $0 "\", 1);"
			print "#else"; print "\tP(\"" $0 "\", 0);"; print "#endif"
			line += 5
		}
		else { print "bad table key: " $0 > "/dev/stderr"; exit 2 }
	}
	END { print "\treturn 0;"; print "}" }
	' "$KEYS" >"$SCRATCH/probe.c"
}

# Compile; on errors, drop the keys whose probe lines failed and retry.
declare -A WHY
compiled=0
for attempt in 1 2 3 4 5 6 7 8; do
	gen_probe || fatal "cannot generate the probe"
	if $CC -std=gnu11 -w $CFLAGS_PROBE -o "$SCRATCH/probe" \
		"$SCRATCH/probe.c" 2>"$SCRATCH/cc.log"; then
		compiled=1
		break
	fi
	# probe.c:<line>:<col>: error: <message>  ->  key index, message
	bad=$(awk -v map="$SCRATCH/probe.map" '
		BEGIN { while ((getline x < map) > 0) { split(x, a, " "); idx[a[1]] = a[2] } }
		/probe\.c:[0-9]+:[0-9]+: (fatal )?error:/ {
			match($0, /probe\.c:[0-9]+:/)
			n = substr($0, RSTART + 8, RLENGTH - 9)
			m = $0; sub(/.*error: /, "", m)
			if (n in idx && !(n in done)) { done[n] = 1; print idx[n] "\t" m }
		}' "$SCRATCH/cc.log")
	[ -n "$bad" ] || break
	while IFS=$'\t' read -r idx msg; do
		key=$(sed -n "${idx}p" "$KEYS")
		printf '%s\n' "$key" >>"$EXCLUDE"
		WHY["$key"]="$msg"
	done <<<"$bad"
done
if [ "$compiled" != 1 ]; then
	echo "FAIL $SUITE: probe does not compile against $CFLAGS_PROBE:"
	sed -n '1,15s/^/    /p' "$SCRATCH/cc.log"
	echo "$SUITE: 0 passed, 1 failed"
	exit 1
fi
"$SCRATCH/probe" >"$SCRATCH/actual" || fatal "probe failed to run"

if [ "$PRINT_ONLY" = 1 ]; then
	cat "$SCRATCH/actual"
	if [ -s "$EXCLUDE" ]; then
		echo "$SUITE: these keys did not compile:" >&2
		sed 's/^/    /' "$EXCLUDE" >&2
		exit 1
	fi
	exit 0
fi

pass=0
fail=0
quiet="${LAYOUT_QUIET:-0}"
while IFS= read -r line; do
	case "$line" in '' | '#'*) continue ;; esac
	key="${line% *}"
	want="${line##* }"
	if [ -n "${WHY[$key]+x}" ]; then
		echo "FAIL $key: does not compile against our headers (${WHY[$key]})"
		fail=$((fail + 1))
	fi
done <"$TABLE"
# compare measured values with the table (keys that did not compile are
# reported above and absent from $SCRATCH/actual)
while IFS=$'\t' read -r status key want got; do
	if [ "$status" = ok ]; then
		[ "$quiet" = 1 ] || echo "PASS $key"
		pass=$((pass + 1))
	else
		echo "FAIL $key: expected $want, got $got"
		fail=$((fail + 1))
	fi
done < <(awk '
	function split_kv(s, out,    i) {
		i = match(s, / [^ ]*$/)
		out[1] = substr(s, 1, i - 1); out[2] = substr(s, i + 1)
	}
	FNR == NR { split_kv($0, kv); got[kv[1]] = kv[2]; next }
	/^[ \t]*(#|$)/ { next }
	{
		split_kv($0, kv)
		if (!(kv[1] in got)) next
		print (got[kv[1]] == kv[2] ? "ok" : "bad") "\t" kv[1] "\t" kv[2] "\t" got[kv[1]]
	}' "$SCRATCH/actual" "$TABLE")

# The header must also be clean for providers built with warnings enabled.
printf '#include <infiniband/driver.h>\nint main(void) { return 0; }\n' \
	>"$SCRATCH/warn.c"
if $CC -std=gnu11 -Wall -Wextra -Werror $CFLAGS_PROBE -c -o "$SCRATCH/warn.o" \
	"$SCRATCH/warn.c" 2>"$SCRATCH/warn.log"; then
	[ "$quiet" = 1 ] || echo "PASS driver.h compiles with -Wall -Wextra -Werror"
	pass=$((pass + 1))
else
	echo "FAIL driver.h compiles with -Wall -Wextra -Werror: $(grep -m1 'error' "$SCRATCH/warn.log")"
	fail=$((fail + 1))
fi

echo "$SUITE: $pass passed, $fail failed"
[ "$fail" = 0 ]
