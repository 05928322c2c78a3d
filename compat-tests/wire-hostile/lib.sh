# shellcheck shell=bash
# compat-tests/wire-hostile/lib.sh: the hostile-packet run against one
# victim, shared by the host suite (run.sh: the victim on ours' rw0) and the
# VM part (compat-tests/vm/hostile-guest.sh: the victim on the kernel's rxe).
# The caller has started the victim's server and client (victim.c) with
# their stdin/stdout on fds 3/4 (server) and 5/6 (client), connected them,
# and defines
#   ATTACK ARGS...   runs roce_hostile as the attacker (its netns, SRC, DST)
#   pass/fail/skip   as compat-tests/lib.sh
# hostile_run OUT: every kind (roce_hostile list) in turn; for each, one
# check "kind/NAME" (PASS: both victim processes answer, the traffic went
# on, no data differed, the guard pages and the canary are intact, the
# device sent back no more than 4x the bytes it was sent + 8 kB, and the
# kind's own condition, see kind_ok) and a line
#   NAME<TAB>CLASSES<TAB>hstate=H
# in OUT (CLASSES: the answer classes, comma-separated, or none; H: the
# state of the attacker's RC QP afterwards); then rss/server, rss/client:
# VmRSS growth from after control-send to the end under RSS_BOUND_KB.
RSS_BOUND_KB=${RSS_BOUND_KB:-1024}
# KINDS: an extended regex, only the kinds it matches run (debugging)
PROGRESS_S=${PROGRESS_S:-10}

# (No program is started per question or field: under TCG, in the VM
# part, each start costs a good part of a second.)
ask() { # FD_IN FD_OUT CMD: one answer line (empty when none in 10 s)
    local l=""
    echo "${EPOCHREALTIME:6:8} ask $3" >>"$LOG"
    echo "$3" >&"$1" 2>/dev/null || { echo ""; return; }
    read -r -t "${ASK_T:-10}" l <&"$2" || l=""
    echo "$l"
}
sstat() { ask 3 4 stat; }
cstat() { ask 5 6 stat; }
field() { # N LINE: the LINE's Nth field (blank-separated)
    local -a w
    read -r -a w <<<"$2"
    echo "${w[$1 - 1]}"
}

# kind_ok NAME: the kind's own condition (after), from the globals
# S0/S1 (server stat before/after), STATES, PEEK0, PEEK8, ANS
kind_ok() {
    local h0 h1 d0 d1
    h0=$(field 4 "$S0") h1=$(field 4 "$S1")
    d0=$(field 6 "$S0") d1=$(field 6 "$S1")
    case "$1" in
        control-send) [ "$h1" = $((h0 + 1)) ] && case "$ANS" in *ACK*) true ;; *) false ;; esac ||
            { WHY="the SEND was not received and ACKed (HRECV $h0 -> $h1, answer $ANS): the attacker's packets do not reach the device"; return 1; } ;;
        right-qkey) [ "$d1" = $((d0 + 1)) ] || { WHY="the UD SEND with the right Q_Key was not received ($d0 -> $d1)"; return 1; } ;;
        wrong-qkey) [ "$d1" = "$d0" ] || { WHY="a UD SEND with a wrong Q_Key was received ($d0 -> $d1)"; return 1; } ;;
        stranger) [ "$ANS" = none ] || { WHY="the traffic QP answered a stranger: $ANS"; return 1; } ;;
        dup-atomic-replay) [ "$PEEK0" = 0100000000000000 ] && [ "$PEEK8" = 0000000000000000 ] ||
            { WHY="the atomic was executed more than once or at another address (HMR[0] $PEEK0, HMR[8] $PEEK8)"; return 1; } ;;
        out-of-mr-write | dead-rkey | foreign-pd-rkey | reth-write-len-max)
            [ "$PEEK0" = 0000000000000000 ] || { WHY="HMR changed: $PEEK0"; return 1; } ;;
    esac
    return 0
}

# hostile_one NAME: one kind; sets OK, WHY, ANS, STATES
hostile_one() {
    local k=$1 arm out c0 c1 i t0 sent_b="" ans_b="" l
    arm=$(ask 3 4 arm)
    case "$arm" in armed\ *) ;; *) OK=0 WHY="arm: '$arm'"; return ;; esac
    set -- $arm
    S0=$(sstat) c0=$(cstat)
    out=$(ATTACK "$k" t="$TQPN" $TARGETS h="$2" u="$3" 2>&1)
    echo "== $k: $out" >>"$LOG"
    ANS=""
    while IFS= read -r l; do
        case "$l" in
            "answer "*) ANS=${ANS:+$ANS$'\n'}${l#answer } ;;
            "answer-bytes "*) ans_b=${ans_b:+$ans_b$'\n'}${l#answer-bytes } ;;
            "sent "*) [[ $l =~ ^sent\ [0-9]*\ (.*)$ ]] && sent_b=${sent_b:+$sent_b$'\n'}${BASH_REMATCH[1]} ;;
        esac
    done <<<"$out"
    PEEK0=$(field 3 "$(ask 3 4 "peek 0")") PEEK8=$(field 3 "$(ask 3 4 "peek 8")")
    STATES=$(ask 3 4 states)
    t0=$SECONDS
    while :; do
        S1=$(sstat) c1=$(cstat)
        [ -n "$S1" ] && [ -n "$c1" ] || break
        [ "$(field 2 "$c1")" -gt "$(field 2 "$c0")" ] && break
        [ $((SECONDS - t0)) -ge "$PROGRESS_S" ] && break
        sleep 0.2
    done
    echo "   before: $S0 | $c0   after: $S1 | $c1   $STATES peek $PEEK0 $PEEK8" >>"$LOG"
    OK=0
    if [ -z "$sent_b" ] || [ -z "$ANS" ]; then WHY="roce_hostile: $(echo "$out" | tail -2 | tr '\n' ' ')"
    elif [ -z "$S1" ]; then WHY="the victim's server does not answer (crashed or hung)"
    elif [ -z "$c1" ]; then WHY="the victim's client does not answer (crashed or hung)"
    elif [ "$(field 4 "$c1")" != 0 ]; then WHY="the traffic failed: completion status $(field 4 "$c1")"
    elif ! [ "$(field 2 "$c1")" -gt "$(field 2 "$c0")" ]; then WHY="the traffic stopped (no iteration in ${PROGRESS_S} s)"
    elif [ "$(field 3 "$c1")" != 0 ] || [ "$(field 3 "$S1")" != 0 ]; then WHY="data differed: client $c1, server $S1"
    elif [ "$(ask 3 4 check)" != "check 1 1" ]; then WHY="guard pages or canary changed"
    elif [ "$k" != flood ] && [ "$ans_b" -gt $((4 * sent_b + 8192)) ]; then WHY="amplification: $ans_b bytes back for $sent_b sent"
    elif kind_ok "$k"; then OK=1
    fi
}

classes() { # "ACK*3 NAK-INV*1" -> "ACK,NAK-INV"
    local w r=""
    for w in $1; do r="$r${r:+,}${w%%\**}"; done
    echo "$r"
}

hostile_run() {
    local out=$1 k r0s r0c r1s r1c
    : >"$out"
    for k in $("$CRAFT_HOSTILE" list); do
        [[ $k =~ ${KINDS:-.} ]] || continue
        hostile_one "$k"
        if [ "$OK" = 1 ]; then pass "kind/$k (answer: $ANS)"; else fail "kind/$k" "$WHY (answer: $ANS)"; fi
        printf '%s\t%s\thstate=%s\n' "$k" "$(classes "$ANS")" "$(field 2 "$STATES")" >>"$out"
        if [ "$k" = control-send ]; then
            r0s=$(field 7 "$(sstat)") r0c=$(field 5 "$(cstat)")
        fi
    done
    r1s=$(field 7 "$(sstat)") r1c=$(field 5 "$(cstat)")
    echo "rss: server $r0s -> $r1s kB, client $r0c -> $r1c kB" >>"$LOG"
    RSS_LINE="server $r0s -> $r1s kB, client $r0c -> $r1c kB"
    for r in "server $r0s $r1s" "client $r0c $r1c"; do
        set -- $r
        if [ -n "$2" ] && [ -n "$3" ] && [ $(($3 - $2)) -lt "$RSS_BOUND_KB" ]; then
            pass "rss/$1 VmRSS growth $(($3 - $2)) kB < $RSS_BOUND_KB kB ($2 -> $3 kB)"
        else
            fail "rss/$1" "VmRSS $2 -> $3 kB (bound: growth < $RSS_BOUND_KB kB)"
        fi
    done
}
