#!/bin/bash
# make install / make uninstall, and a consumer built against the installed copy.
#   compat-tests/install/run.sh
# Contract with the Makefile:
#   make install   DESTDIR=<d> PREFIX=<p> [LIBDIR=<l>]
#     $(DESTDIR)$(LIBDIR)/libibverbs.so.1.* + libibverbs.so.1 and libibverbs.so links,
#     $(DESTDIR)$(PREFIX)/include/infiniband/<public headers>,
#     $(DESTDIR)$(LIBDIR)/pkgconfig/libibverbs.pc;
#     LIBDIR defaults to $(PREFIX)/lib/$(gcc -print-multiarch)
#   make uninstall (same variables) removes exactly that.
# Scratch: build/compat-tests/install/.  Needs make, cc, pkg-config, readelf, ldd.
. "$(dirname "$0")/../lib.sh"
suite_begin install
W=$SCRATCH
CC=${CC:-cc}
# show (indented) the last lines of a log after a FAIL
show() { tail -n "${2:-15}" "$1" | sed 's/^/    /'; }

HEADERS="verbs.h verbs_api.h ib_user_ioctl_verbs.h opcode.h arch.h sa.h sa-kern-abi.h tm_types.h"
MULTIARCH=$($CC -print-multiarch 2>/dev/null)
[ -n "$MULTIARCH" ] || MULTIARCH=x86_64-linux-gnu
UPSTREAM_PC=/usr/lib/$MULTIARCH/pkgconfig/libibverbs.pc

need make "$CC" pkg-config readelf=binutils ldd
if [ ! -f Makefile ]; then
	fail Makefile "no Makefile in $ROOT (the install/uninstall targets are tested)"
	finish
fi

# ---- build first, so that a build failure is reported as such
if make -C "$ROOT" lib >"$W/build.log" 2>&1; then
	pass "make lib"
else
	fail "make lib" "build failed (log: $W/build.log)"
	show "$W/build.log"
	finish
fi
BUILT=$(readlink -f build/lib/libibverbs.so.1 2>/dev/null)

# ---- things install must not touch outside DESTDIR
sysstate() {
	{
		for f in /usr/lib/$MULTIARCH/libibverbs.so* /usr/include/infiniband/*.h "$UPSTREAM_PC"; do
			[ -e "$f" ] && sha256sum "$(readlink -f "$f")"
			[ -L "$f" ] && echo "$f -> $(readlink "$f")"
		done
		[ -e /opt/x ] && echo "/opt/x exists"
	} 2>/dev/null
}
sysstate >"$W/sys-before"

# in_list FILE LINE: is LINE a line of FILE
in_list() { grep -qxF -- "$2" "$1"; }

# one_config NAME PREFIX EXPECTED_LIBDIR LIBDIR_ARG SENTINELS(0/1) TWICE(0/1)
one_config() {
	local name=$1 prefix=$2 libdir=$3 libdir_arg=$4 sentinels=$5 twice=$6
	local C=$W/$name D=$W/$name/destdir
	local args=(DESTDIR="$D" PREFIX="$prefix")
	[ -n "$libdir_arg" ] && args+=(LIBDIR="$libdir_arg")
	local L=$D$libdir I=$D$prefix/include
	local tag="[$name: PREFIX=$prefix${libdir_arg:+ LIBDIR=$libdir_arg}]"
	rm -rf "$C"
	mkdir -p "$D"

	# files of other packages in the same directories: uninstall must keep them
	: >"$C/sentinels"
	if [ "$sentinels" = 1 ]; then
		mkdir -p "$L/pkgconfig" "$I/infiniband"
		echo other >"$L/libother.so.1"
		echo other >"$L/pkgconfig/other.pc"
		echo other >"$I/infiniband/mlx5dv.h"
		(cd "$D" && find . -mindepth 1 ! -type d | sort) >"$C/sentinels"
	fi

	if make -C "$ROOT" install "${args[@]}" >"$C/install.log" 2>&1; then
		pass "$tag make install"
	else
		fail "$tag make install" "failed (log: $C/install.log)"
		show "$C/install.log"
		return
	fi
	(cd "$D" && find . -mindepth 1 ! -type d | sort) >"$C/after-install"
	comm -23 "$C/after-install" "$C/sentinels" >"$C/installed"
	if [ "$twice" = 1 ]; then
		if make -C "$ROOT" install "${args[@]}" >"$C/install2.log" 2>&1 &&
			(cd "$D" && find . -mindepth 1 ! -type d | sort) | cmp -s - "$C/after-install"; then
			pass "$tag make install a second time (over an existing installation)"
		else
			fail "$tag make install a second time" "failed or installed a different set of files (log: $C/install2.log)"
			show "$C/install2.log" 5
		fi
	fi

	# -- library and links
	local real why=
	if [ ! -L "$L/libibverbs.so.1" ]; then
		why="$libdir/libibverbs.so.1 is not a symlink"
	elif [ ! -L "$L/libibverbs.so" ]; then
		why="$libdir/libibverbs.so is not a symlink"
	else
		real=$(readlink -f "$L/libibverbs.so.1")
		case "$(readlink "$L/libibverbs.so.1") $(readlink "$L/libibverbs.so")" in
		/* | */\ /*) why="links must be relative: libibverbs.so.1 -> $(readlink "$L/libibverbs.so.1"), libibverbs.so -> $(readlink "$L/libibverbs.so")" ;;
		esac
		if [ -n "$why" ]; then :
		elif [ ! -f "$real" ] || [ -L "$real" ]; then
			why="libibverbs.so.1 does not resolve to a regular file"
		elif [ "$(dirname "$real")" != "$(readlink -f "$L")" ]; then
			why="libibverbs.so.1 resolves outside $libdir: $real"
		elif [ "$(readlink -f "$L/libibverbs.so")" != "$real" ]; then
			why="libibverbs.so and libibverbs.so.1 resolve to different files"
		else
			case "$(basename "$real")" in
			libibverbs.so.1.*) ;;
			*) why="real file is named $(basename "$real"), expected libibverbs.so.1.*" ;;
			esac
		fi
		if [ -z "$why" ]; then
			if ! readelf -h "$real" 2>/dev/null | grep -q 'DYN (Shared object file)'; then
				why="$(basename "$real") is not an ELF shared object"
			elif ! readelf -d "$real" | grep -q 'Library soname: \[libibverbs.so.1\]'; then
				why="SONAME of $(basename "$real") is not libibverbs.so.1"
			elif [ -n "$BUILT" ] && ! cmp -s "$real" "$BUILT"; then
				why="installed $(basename "$real") differs from build/lib/libibverbs.so.1"
			fi
		fi
	fi
	if [ -z "$why" ]; then
		pass "$tag $libdir: $(basename "$real"), libibverbs.so.1 and libibverbs.so links"
	else
		fail "$tag library in $libdir" "$why"
	fi
	local mode
	mode=$([ -n "$real" ] && [ -f "$real" ] && stat -c %a "$real")
	case "$mode" in
	644 | 755) pass "$tag library mode $mode" ;;
	*) fail "$tag library mode" "${mode:-?} (expected 644 or 755)" ;;
	esac

	# -- headers
	why=
	for h in $HEADERS; do
		if [ ! -f "$I/infiniband/$h" ]; then
			why="$why missing:$h"
		elif ! cmp -s "$I/infiniband/$h" "include/infiniband/$h"; then
			why="$why differs-from-source:$h"
		elif [ "$(stat -c %a "$I/infiniband/$h")" != 644 ]; then
			why="$why mode-$(stat -c %a "$I/infiniband/$h"):$h"
		fi
	done
	if [ -z "$why" ]; then
		pass "$tag headers in $prefix/include/infiniband"
	else
		fail "$tag headers in $prefix/include/infiniband" "${why# }"
	fi
	local others
	others=$(grep -E "^\./${prefix#/}/include/" "$C/installed" | grep -vE "/infiniband/($(echo $HEADERS | sed 's/ /|/g; s/\./\\./g'))$" | tr '\n' ' ')
	[ -n "$others" ] && echo "    note: also installed under include/: $others"

	# -- pkg-config file
	local pc=$L/pkgconfig/libibverbs.pc
	if [ ! -f "$pc" ]; then
		fail "$tag pkg-config file" "$libdir/pkgconfig/libibverbs.pc missing"
	else
		local pv_libdir pv_incdir pv_ver up_ver
		pv_libdir=$(PKG_CONFIG_LIBDIR=$L/pkgconfig pkg-config --variable=libdir libibverbs 2>&1)
		pv_incdir=$(PKG_CONFIG_LIBDIR=$L/pkgconfig pkg-config --variable=includedir libibverbs 2>&1)
		pv_ver=$(PKG_CONFIG_LIBDIR=$L/pkgconfig pkg-config --modversion libibverbs 2>&1)
		up_ver=$(PKG_CONFIG_LIBDIR=$(dirname "$UPSTREAM_PC") pkg-config --modversion libibverbs 2>/dev/null)
		why=
		[ "$pv_libdir" = "$libdir" ] || why="$why libdir=$pv_libdir (expected $libdir);"
		[ "$pv_incdir" = "$prefix/include" ] || why="$why includedir=$pv_incdir (expected $prefix/include);"
		if [ -n "$up_ver" ]; then
			[ "$pv_ver" = "$up_ver" ] || why="$why version=$pv_ver (upstream $up_ver);"
		else
			[ -n "$pv_ver" ] || why="$why no version;"
		fi
		if [ -z "$why" ]; then
			pass "$tag pkg-config: libdir, includedir, version $pv_ver"
		else
			fail "$tag pkg-config variables" "${why# }"
		fi
	fi

	# -- a consumer built with the installed .pc, headers and library
	local flags rc
	# pkgconf keeps -I/usr/include and -L/usr/lib/<multiarch> once a sysroot is
	# set; freedesktop's pkg-config may drop them as "system" directories.
	flags=$(PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_LIBDIR=$L/pkgconfig \
		PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 \
		pkg-config --cflags --libs libibverbs 2>&1)
	rc=$?
	echo "$flags" >"$C/pkg-config.out"
	if [ $rc -ne 0 ]; then
		fail "$tag pkg-config --cflags --libs libibverbs" "$flags"
		return
	fi
	why=
	case " $flags " in *" -I$I "*) ;; *) why="$why no -I$I;" ;; esac
	case " $flags " in *" -L$L "*) ;; *) why="$why no -L$L;" ;; esac
	case " $flags " in *" -libverbs "*) ;; *) why="$why no -libverbs;" ;; esac
	if [ -z "$why" ]; then
		pass "$tag pkg-config (sysroot $D) gives -I/-L into the installed tree"
	else
		fail "$tag pkg-config --cflags --libs libibverbs" "${why# } (got: $flags)"
	fi
	# shellcheck disable=SC2086
	if $CC -Wall -Werror -o "$C/prog" compat-tests/install/prog.c $flags \
		-MD -MF "$C/prog.d" -Wl,--trace >"$C/compile.log" 2>&1; then
		pass "$tag compile + link a consumer with pkg-config flags"
	else
		fail "$tag compile + link a consumer" "failed (log: $C/compile.log)"
		show "$C/compile.log"
		return
	fi
	# headers used
	tr ' \\' '\n\n' <"$C/prog.d" | grep -v '^$' | grep 'infiniband/' | sort -u >"$C/headers-used"
	why=
	if grep -q '^/usr/include/infiniband/' "$C/headers-used"; then
		why="used $(grep '^/usr/include/infiniband/' "$C/headers-used" | tr '\n' ' ')"
	elif ! grep -qxF "$I/infiniband/verbs.h" "$C/headers-used"; then
		why="did not use $I/infiniband/verbs.h (used: $(tr '\n' ' ' <"$C/headers-used"))"
	fi
	if [ -z "$why" ]; then
		pass "$tag compile used the installed headers only"
	else
		fail "$tag compile used the installed headers" "$why"
	fi
	# library the linker took
	if grep -E '(^|[ (])'"$(printf '%s' "$L" | sed 's/[.[\*^$]/\\&/g')"'/libibverbs\.so' "$C/compile.log" >/dev/null; then
		pass "$tag link used $libdir/libibverbs.so"
	else
		fail "$tag link used the installed libibverbs.so" \
			"linker trace: $(grep -E 'libibverbs' "$C/compile.log" | tr '\n' ' ')"
	fi
	if readelf -d "$C/prog" | grep -q 'NEEDED.*\[libibverbs\.so\.1\]'; then
		pass "$tag consumer has NEEDED libibverbs.so.1"
	else
		fail "$tag consumer NEEDED" "$(readelf -d "$C/prog" | grep NEEDED | tr '\n' ' ')"
	fi
	local ldd_out
	ldd_out=$(LD_LIBRARY_PATH=$L ldd "$C/prog" 2>&1 | grep libibverbs)
	if [ "$(echo "$ldd_out" | awk '{print $3}')" = "$L/libibverbs.so.1" ]; then
		pass "$tag ldd (LD_LIBRARY_PATH=$libdir) resolves libibverbs.so.1 to the installed copy"
	else
		fail "$tag ldd resolves libibverbs.so.1 to the installed copy" "${ldd_out:-not listed}"
	fi
	local out
	out=$(LD_LIBRARY_PATH=$L timeout 60 "$C/prog" 2>&1)
	rc=$?
	echo "$out" >"$C/prog.out"
	local got
	got=$(echo "$out" | sed -n 's/^provider-of-ibv_get_device_list: //p')
	if [ $rc -ne 0 ]; then
		fail "$tag run the consumer" "exit $rc: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
	elif [ "$(readlink -f "$got")" != "$(readlink -f "$L/libibverbs.so.1")" ]; then
		fail "$tag run the consumer" "ibv_get_device_list came from ${got:-?}, not $libdir/libibverbs.so.1"
	else
		pass "$tag run the consumer ($(echo "$out" | head -n 1)); symbols from the installed copy"
	fi

	# -- uninstall
	if make -C "$ROOT" uninstall "${args[@]}" >"$C/uninstall.log" 2>&1; then
		pass "$tag make uninstall"
	else
		fail "$tag make uninstall" "failed (log: $C/uninstall.log)"
		show "$C/uninstall.log"
	fi
	(cd "$D" && find . -mindepth 1 ! -type d | sort) >"$C/after-uninstall"
	local left gone
	left=$(comm -23 "$C/after-uninstall" "$C/sentinels" | tr '\n' ' ')
	gone=$(comm -23 "$C/sentinels" "$C/after-uninstall" | tr '\n' ' ')
	if [ -z "$left" ]; then
		pass "$tag uninstall removed all $(wc -l <"$C/installed") installed files"
	else
		fail "$tag uninstall removed everything installed" "left: $left"
	fi
	if [ "$sentinels" = 1 ]; then
		if [ -z "$gone" ]; then
			pass "$tag uninstall kept other packages' files in the same directories"
		else
			fail "$tag uninstall kept other packages' files" "removed: $gone"
		fi
	fi
	# directories left: only (empty) standard ones
	local std="$D" p
	for p in "$libdir" "$libdir/pkgconfig" "$prefix/include"; do
		while [ -n "$p" ] && [ "$p" != / ]; do
			std="$std
$D$p"
			p=$(dirname "$p")
		done
	done
	[ "$sentinels" = 1 ] && std="$std
$I/infiniband"
	local extra_dirs=
	while IFS= read -r d; do
		if ! printf '%s\n' "$std" | grep -qxF -- "$d"; then
			extra_dirs="$extra_dirs ${d#"$D"}"
		fi
	done < <(find "$D" -type d)
	if [ -z "$extra_dirs" ]; then
		pass "$tag no directories left apart from standard ones"
	else
		fail "$tag directories left after uninstall" "${extra_dirs# }"
	fi
}

one_config default /usr "/usr/lib/$MULTIARCH" "" 0 1
one_config prefix /opt/x "/opt/x/lib/$MULTIARCH" "" 0 0
one_config libdir /opt/x /opt/x/lib64 /opt/x/lib64 1 0

sysstate >"$W/sys-after"
if cmp -s "$W/sys-before" "$W/sys-after"; then
	pass "nothing outside DESTDIR changed (system libibverbs, /usr/include/infiniband, /opt/x)"
else
	fail "files outside DESTDIR changed" "$(diff "$W/sys-before" "$W/sys-after" | grep '^[<>]' | tr '\n' ' ')"
fi
finish
