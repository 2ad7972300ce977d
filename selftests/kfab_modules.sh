#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kfab_modules.sh: unloading and loading the kfab modules.
#
#  - rmmod kfab_hfi is refused while a process holds a unit open, a context
#    with a pinned TID buffer, or only a mapping; kfab_core while kfab_hfi
#    is loaded;
#  - once the holder is killed both go, and take their devices, the kfab
#    class and the character device region with them;
#  - insmod with a parameter out of range fails, says why in the kernel log
#    and leaves nothing registered;
#  - insmod with other parameters shows them in the devices.
#
# It reloads the modules, so it runs last; it leaves them as it found them
# (loaded with the same parameters, or not loaded). Needs root, hfi_hold
# next to it and the built modules in ../kmod.

ksft_skip=4

DIR=$(dirname "$(readlink -f "$0")")
KMOD=$(readlink -f "$DIR/../kmod")
CORE_KO=$KMOD/kfab_core.ko
HFI_KO=$KMOD/hfi_ctx/kfab_hfi.ko
HOLD=$DIR/hfi_hold

BAD_PARAMS=(
	"num_units=0"
	"num_units=9"
	"ctxts_per_unit=0"
	"rhq_entries=100"
	"eager_count=8"
	"eager_size=1000"
	"pin_limit_mb=1048577"
	"num_units=1 unit_numa=-1,-1"
)
NTESTS=$((9 + ${#BAD_PARAMS[@]}))

skip_all() {
	echo "TAP version 13"
	echo "1..0 # SKIP $*"
	exit $ksft_skip
}

((EUID == 0)) || skip_all "needs root to load and unload modules"
[[ -r $CORE_KO && -r $HFI_KO ]] || skip_all "no modules in $KMOD"
[[ -x $HOLD ]] || skip_all "$HOLD is not built"

n=0
nfail=0

ok() {
	n=$((n + 1))
	echo "ok $n $*"
}

not_ok() {
	n=$((n + 1))
	nfail=$((nfail + 1))
	echo "not ok $n $*"
}

# result DESC: ok when problems[] is empty, else each is shown; clears it.
result() {
	if ((${#problems[@]} == 0)); then
		ok "$1"
		return 0
	fi
	printf '# %s\n' "${problems[@]}"
	problems=()
	not_ok "$1"
	return 1
}

# The rest cannot run with the modules in an unknown state.
bail() {
	echo "# $*"
	while ((n < NTESTS)); do
		not_ok "not run: $*"
	done
	exit 1
}

loaded() {
	[[ -d /sys/module/$1 ]]
}

# until_true SECS CMD...: CMD succeeds within SECS seconds.
until_true() {
	local deadline=$((SECONDS + $1))

	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.05
	done
}

no_units_left() {
	! compgen -G '/dev/kfab_hfi*' >/dev/null &&
		! compgen -G '/sys/class/kfab/hfi*' >/dev/null &&
		! grep -qw kfab_hfi /proc/devices
}

# Each check below adds what is wrong to problems[], which result() reports.
problems=()

problem() {
	problems+=("$*")
}

# What kfab_hfi left registered.
leftovers() {
	loaded kfab_hfi && problem "kfab_hfi is loaded"
	compgen -G '/dev/kfab_hfi*' >/dev/null &&
		problem "device nodes left:" /dev/kfab_hfi*
	compgen -G '/sys/class/kfab/*' >/dev/null &&
		problem "class devices left:" /sys/class/kfab/*
	grep -qw kfab_hfi /proc/devices &&
		problem "kfab_hfi still in /proc/devices"
}

# ---------------------------------------------------------------- holders

tmp=$(mktemp -d)
mkfifo "$tmp/hold"
# Read-write, so that neither side ever blocks in open().
exec {holdfd}<>"$tmp/hold"
hold_pid=

hold_start() {
	local line=

	"$HOLD" "$@" >"$tmp/hold" &
	hold_pid=$!
	if ! read -r -t 20 -u "$holdfd" line || [[ $line != ready ]]; then
		echo "# hfi_hold $* did not get ready"
		hold_stop
		return 1
	fi
}

hold_stop() {
	[[ -n $hold_pid ]] || return 0
	kill -KILL "$hold_pid" 2>/dev/null
	wait "$hold_pid" 2>/dev/null
	hold_pid=
}

cleanup() {
	hold_stop
	exec {holdfd}<&-
	rm -rf "$tmp"
}
trap cleanup EXIT

# ---------------------------------------------------------------- state found

# kfab_hfi's parameters as loaded, as insmod arguments (unset arrays left out).
found_params=()
was_core=0
was_hfi=0
loaded kfab_core && was_core=1
if loaded kfab_hfi; then
	was_hfi=1
	for p in /sys/module/kfab_hfi/parameters/*; do
		v=$(<"$p")
		[[ -n $v ]] && found_params+=("${p##*/}=$v")
	done
fi

echo "TAP version 13"
echo "1..$NTESTS"

if ((!was_core)); then
	insmod "$CORE_KO" || bail "cannot load $CORE_KO"
fi
if ((!was_hfi)); then
	insmod "$HFI_KO" || bail "cannot load $HFI_KO"
	until_true 5 test -e /dev/kfab_hfi0 || bail "no /dev/kfab_hfi0"
fi
last_unit=$(($(</sys/module/kfab_hfi/parameters/num_units) - 1))

# ---------------------------------------------------------------- rmmod

# rmmod_refused MODULE: an rmmod that must be refused.
rmmod_refused() {
	local out refcnt

	if out=$(rmmod "$1" 2>&1); then
		problem "rmmod $1 succeeded"
		return
	fi
	[[ $out == *"in use"* ]] || problem "rmmod $1 said: $out"
	refcnt=$(cat "/sys/module/$1/refcnt" 2>&1)
	[[ $refcnt =~ ^[1-9][0-9]*$ ]] || problem "$1 refcnt: $refcnt"
}

# busy DESC HOLD_ARGS...
busy() {
	local desc="rmmod kfab_hfi refused while $1"

	shift
	if hold_start "$@"; then
		rmmod_refused kfab_hfi
		[[ -e /dev/kfab_hfi$last_unit ]] || problem "devices gone"
		hold_stop
	else
		problem "hfi_hold $* did not get ready"
	fi
	result "$desc"
}

busy "a unit is open" -u "$last_unit"
busy "a context holds a pinned TID buffer" -t
busy "only a mapping holds the file" -m -c

rmmod_refused kfab_core
result "rmmod kfab_core refused while kfab_hfi is loaded"

out=$(rmmod kfab_hfi 2>&1) || problem "rmmod kfab_hfi: $out"
until_true 5 no_units_left || leftovers
result "rmmod kfab_hfi once its holders are gone" ||
	bail "kfab_hfi could not be unloaded"

out=$(rmmod kfab_core 2>&1) || problem "rmmod kfab_core: $out"
loaded kfab_core && problem "kfab_core is loaded"
[[ -e /sys/class/kfab ]] && problem "/sys/class/kfab is left"
result "rmmod kfab_core, and the kfab class is gone" ||
	bail "kfab_core could not be unloaded"

# ---------------------------------------------------------------- insmod

insmod "$CORE_KO" || bail "cannot load $CORE_KO again"

# Each bad value is refused with a kernel log line naming its parameter.
for params in "${BAD_PARAMS[@]}"; do
	desc="insmod kfab_hfi $params: refused, nothing left"
	# the offending parameter is the last one
	name=${params##* }
	name=${name%%=*}
	logged=$(dmesg | grep -c "kfab_hfi: $name:")
	# shellcheck disable=SC2086 # params are words on purpose
	insmod "$HFI_KO" $params 2>/dev/null && problem "insmod succeeded"
	((logged < $(dmesg | grep -c "kfab_hfi: $name:"))) ||
		problem "no kernel log line about $name"
	leftovers
	result "$desc"
	if loaded kfab_hfi; then
		rmmod kfab_hfi || bail "cannot unload kfab_hfi $params"
	fi
done

units_ok() {
	local u

	for ((u = 0; u < $1; u++)); do
		[[ -c /dev/kfab_hfi$u ]] || return 1
	done
}

# check_unit UNIT NCTXTS: the unit's attributes, all contexts free.
check_unit() {
	local u=$1 a v want

	for a in unit lid nctxts nfreectxts; do
		case $a in
		unit) want=$u ;;
		lid) want=$((u + 1)) ;;
		*) want=$2 ;;
		esac
		v=$(cat "/sys/class/kfab/hfi$u/$a" 2>&1)
		[[ $v == "$want" ]] || problem "hfi$u/$a is $v, not $want"
	done
}

if ! out=$(insmod "$HFI_KO" num_units=4 ctxts_per_unit=3 2>&1); then
	problem "insmod: $out"
elif ! until_true 5 units_ok 4; then
	problem "no /dev/kfab_hfi0..3:" /dev/kfab_hfi*
else
	[[ -e /sys/class/kfab/hfi4 || -e /dev/kfab_hfi4 ]] &&
		problem "a fifth unit exists"
	[[ $(</sys/module/kfab_hfi/parameters/num_units) == 4 ]] ||
		problem "num_units does not read 4"
	[[ $(</sys/module/kfab_hfi/parameters/ctxts_per_unit) == 3 ]] ||
		problem "ctxts_per_unit does not read 3"
	for u in 0 1 2 3; do
		check_unit $u 3
	done
fi
result "insmod kfab_hfi num_units=4 ctxts_per_unit=3: 4 units of 3 contexts"

# The last of the four units hands out its contexts.
if hold_start -u 3 -a; then
	v=$(</sys/class/kfab/hfi3/nfreectxts)
	[[ $v == 2 ]] || problem "hfi3/nfreectxts is $v with one holder"
	hold_stop
	until_true 5 grep -qx 3 /sys/class/kfab/hfi3/nfreectxts ||
		problem "hfi3/nfreectxts is not 3 again"
else
	problem "no context on unit 3"
fi
result "unit 3 of 4 assigns and frees a context"

# ---------------------------------------------------------------- restore

out=$(rmmod kfab_hfi 2>&1) || problem "rmmod kfab_hfi: $out"
if ((was_hfi)); then
	if ! out=$(insmod "$HFI_KO" "${found_params[@]}" 2>&1); then
		problem "insmod kfab_hfi ${found_params[*]}: $out"
	elif ! until_true 5 test -e /dev/kfab_hfi0; then
		problem "no /dev/kfab_hfi0"
	fi
	for kv in "${found_params[@]}"; do
		v=$(cat "/sys/module/kfab_hfi/parameters/${kv%%=*}" 2>&1)
		[[ $v == "${kv#*=}" ]] || problem "${kv%%=*} is $v, not ${kv#*=}"
	done
else
	until_true 5 no_units_left || leftovers
fi
if ((!was_core)); then
	out=$(rmmod kfab_core 2>&1) || problem "rmmod kfab_core: $out"
fi
result "modules back as found (kfab_hfi ${found_params[*]:-not loaded})"

((nfail == 0)) || exit 1
exit 0
