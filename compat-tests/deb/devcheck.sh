#!/bin/sh
# Runs in a release's root (chroot, cwd = a scratch directory holding
# devcheck.c): what Debian's libibverbs-dev gives a developer, one line per
# check, the same whichever libibverbs1 is installed (the deb suite compares
# the lines from before our packages with those after):
#   headers     the headers under /usr/include/infiniband
#   pkgconfig   pkg-config's flags for each library of the -dev package
#   compile     devcheck.c with those flags
#   static      the same, linked with -static (as far as it did)
#   man         where `man -w` finds the pages (section 3 and 7), and how
#               many section 3 pages libibverbs-dev has
LIBS="libibverbs libmlx5 libmlx4 libefa libmana"
echo "headers: $(cd /usr/include/infiniband 2>/dev/null && ls | tr '\n' ' ')"
for l in $LIBS; do
    echo "pkgconfig $l: $(pkg-config --cflags --libs "$l" 2>&1 | tr '\n' ' ')"
done
# shellcheck disable=SC2046,SC2086
if cc -Wall -Werror -o devcheck devcheck.c $(pkg-config --cflags --libs $LIBS) >compile.log 2>&1; then
    echo "compile: ok"
else
    echo "compile: failed: $(head -c 300 compile.log | tr '\n' ' ')"
fi
# shellcheck disable=SC2046,SC2086
if cc -static -o devcheck-static devcheck.c $(pkg-config --static --cflags --libs $LIBS) >static.log 2>&1; then
    echo "static: ok"
else
    echo "static: failed ($(grep -c 'undefined reference\|cannot find' static.log) undefined or missing)"
fi
for p in "3 ibv_post_send" "3 ibv_get_device_list" "3 mlx5dv_create_qp" "3 efadv_query_device" \
         "3 manadv_set_context_attr" "3 mlx4dv_query_device" "7 mlx5dv" "7 mlx4dv" "7 efadv" "7 manadv"; do
    # shellcheck disable=SC2086
    echo "man $p: $(man -w $p 2>&1)"
done
echo "man3 pages of libibverbs-dev: $(dpkg -L libibverbs-dev 2>/dev/null | grep -c '/man3/')"
