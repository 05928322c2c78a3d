# shellcheck shell=bash
# The Soft-RoCE VM harness: sourced by vm-run.sh and run.sh.
#
#   vm_prepare            download/unpack kernel, qemu, busybox into the cache
#                         (idempotent), extract vmlinux, build the initramfs
#   vm_run SCRIPT [MODE]  boot the VM, set up rxe0/rxe1 on veth0/veth1, run
#                         SCRIPT as root (cwd = the caller's cwd, repo at the
#                         same path), copy its stdout/stderr out, return its
#                         exit status.  MODE: "shell" for an interactive shell.
#
# Environment (all optional):
#   VM_CACHE     cache dir                 (default <repo>/build/vm-cache)
#   VM_KERNEL_PKG  e.g. linux-image-6.1.0-56-amd64 (default: newest 6.1.0-N-amd64
#                  apt knows, or the newest already in the cache)
#   VM_TIMEOUT   hard limit of one VM run in seconds (default 300)
#   VM_MEM, VM_SMP  (default 2G, 2)
#   VM_VERBOSE=1 show the guest console live (always saved in console.log)
#   VM_KEEP=1    keep the run directory (build/vm-run/<pid>)
#   VM_RUN_DIR   use this run directory (created, kept)
#   VM_PATHS     the host directories a run needs besides the repository
#                (PATH:PATH...: a library, a release root): the guest sees
#                the host's root, but puts its own tmpfs on /tmp, /run and
#                /var/tmp, so those under them are shared at their paths;
#                one the guest cannot see (under /dev, /proc, /sys, or a
#                blank in its path) stops the run with a message naming it
# Exit statuses of vm_run other than the script's own: 125 = the VM could not
# be prepared/started or the guest setup failed; 124 = timeout.

VM_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_REPO=$(cd "$VM_HERE/../.." && pwd)
VM_CACHE=${VM_CACHE:-$VM_REPO/build/vm-cache}
VM_TIMEOUT=${VM_TIMEOUT:-300}
VM_MEM=${VM_MEM:-2G}
VM_SMP=${VM_SMP:-2}
# The guest's CPU model (VM_CPU): "max" by default.  The suites that are
# mostly user-space work in the guest (Debian's tools, perftest, rdma-core's
# Python tests: pyverbs.sh, perftest.sh, release.sh) ask for qemu64 (x86-64's
# baseline, what Debian's amd64 packages are built for), 10-17 % faster under
# TCG: glibc's AVX2 paths under "max" are what TCG emulates slowly
# (vm-pyverbs 46.6 s against 51.7 s, vm-perftest 63 s against 76 s); the
# suites that push packets through the guest's rxe are not (vm-hostile's VM
# run: max 235 s, qemu64 263 s, Westmere 301 s, one run each).
VM_CPU=${VM_CPU:-max}
VM_MODULES="virtio_pci 9pnet_virtio 9p crc32_generic crc32-pclmul veth ib_core ib_uverbs udp_tunnel ip6_udp_tunnel rdma_rxe"
VM_QEMU_PKGS="qemu-system-x86 qemu-system-data qemu-system-common seabios"

vm_msg() { echo "vm: $*" >&2; }
vm_die() { echo "vm: ERROR: $*" >&2; return 125; }

# apt-get download PKG... into $VM_CACHE/debs (quietly; sandbox warning dropped)
vm_download() {
    mkdir -p "$VM_CACHE/debs" || return 1
    local out
    if ! out=$(cd "$VM_CACHE/debs" && apt-get download "$@" 2>&1); then
        echo "$out" | grep -v 'unsandboxed' >&2
        return 1
    fi
}

vm_deb() { # newest downloaded .deb of package $1
    ls -t "$VM_CACHE/debs/$1"_*.deb 2>/dev/null | head -1
}

vm_pick_kernel() {
    if [ -n "${VM_KERNEL_PKG:-}" ]; then echo "$VM_KERNEL_PKG"; return; fi
    local newest cached
    newest=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null |
             awk '{print $1}' | sort -t- -k4,4n | tail -1)
    cached=$(vm_cached_kernel)
    if [ -n "$newest" ]; then echo "$newest"; else echo "$cached"; fi
}

vm_cached_kernel() { # newest kernel package already unpacked in the cache
    ls -d "$VM_CACHE"/kernel/linux-image-6.1.0-*-amd64/.complete 2>/dev/null |
        sed -E 's|.*/(linux-image-[^/]*)/\.complete$|\1|' | sort -t- -k4,4n | tail -1
}

vm_prepare_kernel() {
    local pkg deb kdir
    pkg=$(vm_pick_kernel)
    [ -n "$pkg" ] || { vm_die "no linux-image-6.1.0-N-amd64 package known to apt (apt-get update?) and none in $VM_CACHE/kernel"; return; }
    kdir=$VM_CACHE/kernel/$pkg
    if [ ! -e "$kdir/.complete" ]; then
        deb=$(vm_deb "$pkg")
        if [ -z "$deb" ]; then
            vm_msg "downloading $pkg"
            if ! vm_download "$pkg" || [ -z "$(vm_deb "$pkg")" ]; then
                [ -z "${VM_KERNEL_PKG:-}" ] || { vm_die "apt-get download $VM_KERNEL_PKG failed"; return; }
                # fall back to a kernel already in the cache
                local old
                old=$(vm_cached_kernel)
                if [ -n "$old" ]; then
                    pkg=$old; kdir=$VM_CACHE/kernel/$pkg
                    vm_msg "cannot download the newest kernel; using cached $pkg"
                else
                    vm_die "apt-get download $pkg failed: no kernel for the VM"; return
                fi
            fi
            deb=$(vm_deb "$pkg")
        fi
        if [ ! -e "$kdir/.complete" ]; then
            rm -rf "$kdir" && mkdir -p "$kdir"
            dpkg -x "$deb" "$kdir" || { vm_die "dpkg -x $deb failed"; return; }
            touch "$kdir/.complete"
        fi
    fi
    VM_KDIR=$kdir
    VM_KVER=$(ls "$kdir/lib/modules" | head -1)
    [ -n "$VM_KVER" ] || { vm_die "no modules in $kdir/lib/modules"; return; }
    VM_VMLINUX=$VM_CACHE/vmlinux-$VM_KVER
    if [ ! -s "$VM_VMLINUX" ]; then
        vm_msg "extracting $VM_VMLINUX"
        python3 "$VM_HERE/vmtool.py" extract-vmlinux "$kdir/boot/vmlinuz-$VM_KVER" "$VM_VMLINUX" >&2 ||
            { vm_die "cannot extract vmlinux from $kdir/boot/vmlinuz-$VM_KVER"; return; }
    fi
}

vm_prepare_qemu() {
    local q=$VM_CACHE/qemu p deb missing round
    VM_QEMU_DIR=$q
    VM_QEMU_LIBS=$q/usr/lib/x86_64-linux-gnu:$q/lib/x86_64-linux-gnu
    if [ ! -e "$q/.complete" ]; then
        rm -rf "$q" && mkdir -p "$q"
        for p in $VM_QEMU_PKGS; do
            [ -n "$(vm_deb "$p")" ] || { vm_msg "downloading $p"; vm_download "$p"; } ||
                { vm_die "apt-get download $p failed: cannot provide qemu-system-x86_64"; return; }
            dpkg -x "$(vm_deb "$p")" "$q" || { vm_die "dpkg -x $p failed"; return; }
        done
        # shared libraries qemu needs that this machine lacks: libfoo.so.N -> libfooN
        for round in 1 2 3 4; do
            missing=$(LD_LIBRARY_PATH=$VM_QEMU_LIBS ldd "$q/usr/bin/qemu-system-x86_64" 2>/dev/null |
                      awk '/not found/ {print $1}')
            [ -n "$missing" ] || break
            for lib in $missing; do
                local base=${lib%%.so.*} ver=${lib#*.so.}
                ver=${ver%%.*}
                case "$base" in *[0-9]) p=$base-$ver;; *) p=$base$ver;; esac
                p=${p,,}; p=${p//_/-}
                if [ -z "$(vm_deb "$p")" ]; then
                    vm_msg "downloading $p (for $lib)"
                    vm_download "$p" || { vm_die "qemu needs $lib: apt-get download $p failed"; return; }
                fi
                dpkg -x "$(vm_deb "$p")" "$q" || { vm_die "dpkg -x $p failed"; return; }
            done
        done
        missing=$(LD_LIBRARY_PATH=$VM_QEMU_LIBS ldd "$q/usr/bin/qemu-system-x86_64" 2>&1 | awk '/not found/ {print $1}')
        [ -z "$missing" ] || { vm_die "qemu-system-x86_64 still lacks: $missing"; return; }
        touch "$q/.complete"
    fi
    VM_QEMU=$q/usr/bin/qemu-system-x86_64
    LD_LIBRARY_PATH=$VM_QEMU_LIBS "$VM_QEMU" --version >/dev/null 2>&1 ||
        { vm_die "$VM_QEMU does not run: $(LD_LIBRARY_PATH=$VM_QEMU_LIBS "$VM_QEMU" --version 2>&1 | head -3)"; return; }
}

vm_prepare_initramfs() {
    local bb=$VM_CACHE/busybox/bin/busybox mods m specs
    if [ ! -x "$bb" ]; then
        [ -n "$(vm_deb busybox-static)" ] || { vm_msg "downloading busybox-static"; vm_download busybox-static; } ||
            { vm_die "apt-get download busybox-static failed"; return; }
        rm -rf "$VM_CACHE/busybox"
        dpkg -x "$(vm_deb busybox-static)" "$VM_CACHE/busybox" || { vm_die "dpkg -x busybox-static failed"; return; }
        [ -x "$bb" ] || { vm_die "busybox-static has no bin/busybox"; return; }
    fi
    VM_INITRD=$VM_CACHE/initramfs-$VM_KVER.cpio
    if [ -s "$VM_INITRD" ] && [ "$VM_INITRD" -nt "$VM_HERE/initramfs-init" ] &&
       [ "$VM_INITRD" -nt "$VM_HERE/vmtool.py" ] && [ "$VM_INITRD" -nt "$VM_HERE/lib.sh" ]; then
        return 0
    fi
    vm_msg "building $VM_INITRD"
    mods=$(python3 "$VM_HERE/vmtool.py" moddeps "$VM_KDIR/lib/modules/$VM_KVER" $VM_MODULES) ||
        { vm_die "cannot resolve the kernel modules"; return; }
    local list=$VM_CACHE/modules-$VM_KVER.list
    : > "$list"
    specs=(dir:bin dir:dev dir:lib dir:lib/modules dir:proc dir:sys dir:newroot
           chr:dev/console=5,1 chr:dev/null=1,3 chr:dev/ttyS0=4,64
           "file:init=$VM_HERE/initramfs-init:755" "file:bin/busybox=$bb:755" link:bin/sh=busybox)
    for m in $mods; do
        specs+=("file:lib/modules/$(basename "$m")=$VM_KDIR/lib/modules/$VM_KVER/$m")
        basename "$m" >> "$list"
    done
    specs+=("file:modules.list=$list")
    python3 "$VM_HERE/vmtool.py" mkcpio "$VM_INITRD" "${specs[@]}" || { vm_die "cannot build the initramfs"; return; }
}

vm_prepare() {
    mkdir -p "$VM_CACHE" || { vm_die "cannot create $VM_CACHE"; return; }
    command -v python3 >/dev/null || { vm_die "python3 missing"; return; }
    local chosen=$VM_CACHE/.kernel.$$
    (
        flock 9
        vm_prepare_qemu && vm_prepare_kernel && vm_prepare_initramfs &&
            basename "$VM_KDIR" > "$chosen"
    ) 9>"$VM_CACHE/.lock" || { rm -f "$chosen"; return 125; }
    # the subshell's variables are lost: recompute (cheap, everything cached),
    # with the kernel the subshell chose
    local pkg; pkg=$(cat "$chosen"); rm -f "$chosen"
    vm_prepare_qemu && VM_KERNEL_PKG=$pkg vm_prepare_kernel && vm_prepare_initramfs >/dev/null
}

# vm_run SCRIPT [shell]
vm_run() {
    local script=$1 mode=${2:-} run rc qrc console_opts
    vm_prepare || return 125
    if [ -n "${VM_RUN_DIR:-}" ]; then
        run=$VM_RUN_DIR; mkdir -p "$run" && run=$(cd "$run" && pwd) || { vm_die "cannot create $VM_RUN_DIR"; return; }
        rm -f "$run"/{stdout,stderr,status,setup.log,setup-failed,console.log,shell,script.sh,env}
    else
        run=$VM_REPO/build/vm-run/$$.$RANDOM
        rm -rf "$run"; mkdir -p "$run" || { vm_die "cannot create $run"; return; }
    fi
    case "$run" in *[[:space:]]*) vm_die "run directory path contains whitespace: $run"; return;; esac
    if [ "$mode" = shell ]; then
        touch "$run/shell"; : > "$run/script.sh"
    else
        cp "$script" "$run/script.sh" || { vm_die "cannot read $script"; return; }
    fi
    {
        printf 'VM_CWD=%q\n' "$PWD"
        printf 'export VM_RUN_DIR=%q\n' "$run"
        printf 'VM_BUSYBOX=%q\n' "$VM_CACHE/busybox/bin/busybox"
        local v
        for v in OUR_LIB UPSTREAM_LIB OUR_INCLUDE UPSTREAM_INCLUDE; do
            [ -n "${!v:-}" ] && printf 'export %s=%q\n' "$v" "${!v}"
        done
    } > "$run/env"

    if [ "$mode" = shell ]; then
        console_opts=(-chardev "stdio,id=con,mux=on,signal=off,logfile=$run/console.log" -serial chardev:con -mon chardev=con)
    elif [ -n "${VM_VERBOSE:-}" ]; then
        console_opts=(-chardev "stdio,id=con,signal=off,logfile=$run/console.log" -serial chardev:con)
    else
        console_opts=(-chardev "file,id=con,path=$run/console.log" -serial chardev:con)
    fi
    # what the run needs (VM_PATHS, the cache) under the guest's private
    # /tmp, /run or /var/tmp and outside the repository: kept visible
    local paths="" p need
    IFS=: read -r -a need <<<"${VM_PATHS:-}:$VM_CACHE"
    for p in "${need[@]}"; do
        case "$p" in
            "") ;;
            *[[:space:]]*) vm_die "$p (needed by the run): a blank in its path, which the guest cannot be given"; return ;;
            "$VM_REPO"|"$VM_REPO"/*) ;;
            /dev|/dev/*|/proc|/proc/*|/sys|/sys/*)
                vm_die "$p (needed by the run) is not visible in the guest: put it elsewhere"; return ;;
            /tmp|/tmp/*|/run|/run/*|/var/tmp|/var/tmp/*) paths=${paths:+$paths:}$p ;;
        esac
    done
    local append="console=ttyS0 panic=-1 quiet loglevel=4 rdinit=/init net.ifnames=0 vminit=$VM_HERE/guest-init.sh vmrun=$run vmkeep=$VM_REPO${paths:+:$paths}"
    [ -n "${VM_VERBOSE:-}" ] && append=${append/ quiet loglevel=4/}
    local qemu_cmd=(
        "$VM_QEMU" -nodefaults -no-user-config -M pc -accel tcg,thread=multi -cpu "$VM_CPU"
        -smp "$VM_SMP" -m "$VM_MEM" -no-reboot -nic none -display none
        -L "$VM_QEMU_DIR/usr/share/qemu" -L "$VM_QEMU_DIR/usr/share/seabios"
        -kernel "$VM_VMLINUX" -initrd "$VM_INITRD" -append "$append"
        -fsdev local,id=root,path=/,readonly=on,security_model=none,multidevs=remap
        -device virtio-9p-pci,fsdev=root,mount_tag=hostroot
        -fsdev "local,id=run,path=$run,security_model=none,multidevs=remap"
        -device virtio-9p-pci,fsdev=run,mount_tag=vmrun
        "${console_opts[@]}"
    )
    [ -n "${VM_VERBOSE:-}" ] && vm_msg "run dir $run; qemu: ${qemu_cmd[*]}"
    if [ "$mode" = shell ]; then
        LD_LIBRARY_PATH=$VM_QEMU_LIBS QEMU_MODULE_DIR=$VM_QEMU_DIR/usr/lib/x86_64-linux-gnu/qemu \
            timeout --foreground "${VM_SHELL_TIMEOUT:-86400}" "${qemu_cmd[@]}"
    else
        LD_LIBRARY_PATH=$VM_QEMU_LIBS QEMU_MODULE_DIR=$VM_QEMU_DIR/usr/lib/x86_64-linux-gnu/qemu \
            timeout -k 10 "$VM_TIMEOUT" "${qemu_cmd[@]}" < /dev/null > "$run/qemu.out" 2>&1
    fi
    qrc=$?
    if [ -e "$run/status" ]; then
        [ -e "$run/stdout" ] && cat "$run/stdout"
        [ -e "$run/stderr" ] && cat "$run/stderr" >&2
        rc=$(cat "$run/status")
    else
        if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
            vm_msg "ERROR: the VM run hit the hard timeout (${VM_TIMEOUT}s)"; rc=124
        elif [ -e "$run/setup-failed" ]; then
            vm_msg "ERROR: guest setup failed: $(cat "$run/setup-failed")"; rc=125
        else
            vm_msg "ERROR: the VM ended without a result (qemu exit status $qrc)"; rc=125
        fi
        if [ -s "$run/qemu.out" ]; then vm_msg "qemu said:"; sed 's/^/  | /' "$run/qemu.out" >&2; fi
        if [ -s "$run/console.log" ]; then vm_msg "guest console (tail):"; tail -n 40 "$run/console.log" | sed 's/^/  | /' >&2; fi
        [ -e "$run/stdout" ] && { vm_msg "partial stdout:"; cat "$run/stdout"; }
        [ -e "$run/stderr" ] && { vm_msg "partial stderr:"; cat "$run/stderr" >&2; }
        vm_msg "run directory kept: $run"
        return "$rc"
    fi
    if [ -z "${VM_RUN_DIR:-}" ] && [ -z "${VM_KEEP:-}" ]; then rm -rf "$run"; fi
    return "$rc"
}
