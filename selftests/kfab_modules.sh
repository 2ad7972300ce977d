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
# The same for kfab_efa when it is built (../kmod/efa_helper/kfab_efa.ko):
# rmmod refused while a device is open, a QP is mapped or an MR pinned,
# kfab_core refused while kfab_efa is loaded, bad parameters refused,
# other parameters visible in the devices.
#
# It reloads the modules, so it runs last; it leaves them as it found them
# (loaded with the same parameters, or not loaded). Needs root, kfab_hold
# (the holder of both) next to it and the built modules in ../kmod.

ksft_skip=4

DIR=$(dirname "$(readlink -f "$0")")
KMOD=$(readlink -f "$DIR/../kmod")
CORE_KO=$KMOD/kfab_core.ko
HFI_KO=$KMOD/hfi_ctx/kfab_hfi.ko
HOLD=$DIR/kfab_hold
EFA_KO=$KMOD/efa_helper/kfab_efa.ko

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
EFA_BAD_PARAMS=(
	"num_devices=0"
	"num_devices=9"
	"qps_per_device=0"
	"qps_per_device=1025"
	"rx_entries=100"
	"rx_entries=8"
	"rx_entries=8192"
	"mtu=1000"
	"mtu=131072"
	"max_mrs=0"
	"max_mrs=65537"
	"num_devices=1 device_numa=-1,-1"
)
NTESTS=$((9 + ${#BAD_PARAMS[@]}))
# kfab_efa's tests run when the module is built.
with_efa=0
if [[ -r $EFA_KO ]]; then
	with_efa=1
	NTESTS=$((NTESTS + 8 + ${#EFA_BAD_PARAMS[@]}))
fi

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

# none_left hfi|efa: no device node, class device or region of kfab_DEV.
none_left() {
	! compgen -G "/dev/kfab_$1*" >/dev/null &&
		! compgen -G "/sys/class/kfab/$1*" >/dev/null &&
		! grep -qw "kfab_$1" /proc/devices
}

# devices_ok hfi|efa N: /dev/kfab_DEV0 to N - 1 are there.
devices_ok() {
	local i

	for ((i = 0; i < $2; i++)); do
		[[ -c /dev/kfab_$1$i ]] || return 1
	done
}

# Each check below adds what is wrong to problems[], which result() reports.
problems=()

problem() {
	problems+=("$*")
}

# params_are MODULE NAME=VALUE...: its parameters read these values.
params_are() {
	local mod=$1 kv v

	shift
	for kv in "$@"; do
		v=$(cat "/sys/module/$mod/parameters/${kv%%=*}" 2>&1)
		[[ $v == "${kv#*=}" ]] || problem "${kv%%=*} is $v, not ${kv#*=}"
	done
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

# hold_start hfi|efa HOLD_ARGS...
hold_start() {
	local line=

	"$HOLD" "$@" >"$tmp/hold" &
	hold_pid=$!
	if ! read -r -t 20 -u "$holdfd" line || [[ $line != ready ]]; then
		echo "# kfab_hold $* did not get ready"
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
found_efa_params=()
was_core=0
was_hfi=0
was_efa=0
loaded kfab_core && was_core=1
# params_of MODULE: its parameters that are set, one NAME=VALUE a line.
params_of() {
	local p v

	for p in /sys/module/$1/parameters/*; do
		v=$(<"$p")
		[[ -n $v ]] && echo "${p##*/}=$v"
	done
}

if loaded kfab_hfi; then
	was_hfi=1
	mapfile -t found_params < <(params_of kfab_hfi)
fi
if loaded kfab_efa; then
	was_efa=1
	mapfile -t found_efa_params < <(params_of kfab_efa)
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
if ((with_efa && !was_efa)); then
	insmod "$EFA_KO" || bail "cannot load $EFA_KO"
	until_true 5 test -e /dev/kfab_efa0 || bail "no /dev/kfab_efa0"
fi

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

# busy hfi|efa DESC HOLD_ARGS...: rmmod kfab_DEV refused while held.
busy() {
	local dev=$1 desc="rmmod kfab_$1 refused while $2"

	shift 2
	if hold_start "$dev" "$@"; then
		rmmod_refused "kfab_$dev"
		compgen -G "/dev/kfab_$dev*" >/dev/null ||
			problem "devices gone"
		hold_stop
	else
		problem "kfab_hold $dev $* did not get ready"
	fi
	result "$desc"
}

busy hfi "a unit is open" -n "$last_unit"
busy hfi "a context holds a pinned TID buffer" -p
busy hfi "only a mapping holds the file" -m -c

rmmod_refused kfab_core
result "rmmod kfab_core refused while kfab_hfi is loaded"

# ---------------------------------------------------------------- kfab_efa

efa_leftovers() {
	loaded kfab_efa && problem "kfab_efa is loaded"
	compgen -G '/dev/kfab_efa*' >/dev/null &&
		problem "device nodes left:" /dev/kfab_efa*
	compgen -G '/sys/class/kfab/efa*' >/dev/null &&
		problem "class devices left:" /sys/class/kfab/efa*
	grep -qw kfab_efa /proc/devices &&
		problem "kfab_efa still in /proc/devices"
}

if ((with_efa)); then
	last_dev=$(($(</sys/module/kfab_efa/parameters/num_devices) - 1))
	busy efa "a device is open" -n "$last_dev"
	busy efa "a QP is mapped and an MR pinned" -m -p
	busy efa "only a mapping holds the file" -m -c

	rmmod_refused kfab_core
	result "rmmod kfab_core refused while kfab_efa is loaded"

	out=$(rmmod kfab_efa 2>&1) || problem "rmmod kfab_efa: $out"
	until_true 5 none_left efa || efa_leftovers
	result "rmmod kfab_efa once its holders are gone" ||
		bail "kfab_efa could not be unloaded"
fi

out=$(rmmod kfab_hfi 2>&1) || problem "rmmod kfab_hfi: $out"
until_true 5 none_left hfi || leftovers
result "rmmod kfab_hfi once its holders are gone" ||
	bail "kfab_hfi could not be unloaded"

out=$(rmmod kfab_core 2>&1) || problem "rmmod kfab_core: $out"
loaded kfab_core && problem "kfab_core is loaded"
[[ -e /sys/class/kfab ]] && problem "/sys/class/kfab is left"
result "rmmod kfab_core, and the kfab class is gone" ||
	bail "kfab_core could not be unloaded"

# ---------------------------------------------------------------- insmod

insmod "$CORE_KO" || bail "cannot load $CORE_KO again"

# bad_params MODULE KO LEFTOVERS PARAMS...: each of PARAMS is refused with a
# kernel log line naming its parameter, and LEFTOVERS finds nothing left.
bad_params() {
	local mod=$1 ko=$2 leftovers=$3 params name logged

	shift 3
	for params in "$@"; do
		# the offending parameter is the last one
		name=${params##* }
		name=${name%%=*}
		logged=$(dmesg | grep -c "$mod: $name:")
		# shellcheck disable=SC2086 # params are words on purpose
		insmod "$ko" $params 2>/dev/null && problem "insmod succeeded"
		((logged < $(dmesg | grep -c "$mod: $name:"))) ||
			problem "no kernel log line about $name"
		"$leftovers"
		result "insmod $mod $params: refused, nothing left"
		if loaded "$mod"; then
			rmmod "$mod" || bail "cannot unload $mod $params"
		fi
	done
}

bad_params kfab_hfi "$HFI_KO" leftovers "${BAD_PARAMS[@]}"

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

# insmod_with hfi|efa KO N PARAMS...: N devices come and no more, with
# PARAMS read back; fails (after saying why) when they did not come.
insmod_with() {
	local dev=$1 ko=$2 n=$3 out

	shift 3
	if ! out=$(insmod "$ko" "$@" 2>&1); then
		problem "insmod: $out"
		return 1
	fi
	if ! until_true 5 devices_ok "$dev" "$n"; then
		problem "no /dev/kfab_${dev}0..$((n - 1)):" /dev/kfab_"$dev"*
		return 1
	fi
	[[ -e /sys/class/kfab/$dev$n || -e /dev/kfab_$dev$n ]] &&
		problem "device $dev$n exists"
	params_are "kfab_$dev" "$@"
}

# hands_out hfi|efa N ATTR FREE HOLD_ARGS...: a holder of device N takes
# one of the FREE that ATTR counts, and gives it back when it ends.
hands_out() {
	local dev=$1 n=$2 path=/sys/class/kfab/$1$2/$3 free=$4 v

	shift 4
	if ! hold_start "$dev" -n "$n" "$@"; then
		problem "kfab_hold $dev -n $n $* did not get ready"
		return
	fi
	v=$(<"$path")
	[[ $v == $((free - 1)) ]] || problem "$dev$n/$3 is $v with one holder"
	hold_stop
	until_true 5 grep -qx "$free" "$path" ||
		problem "$dev$n/$3 is not $free again"
}

if insmod_with hfi "$HFI_KO" 4 num_units=4 ctxts_per_unit=3; then
	for u in 0 1 2 3; do
		check_unit $u 3
	done
fi
result "insmod kfab_hfi num_units=4 ctxts_per_unit=3: 4 units of 3 contexts"

# The last of the four units hands out its contexts.
hands_out hfi 3 nfreectxts 3 -o
result "unit 3 of 4 assigns and frees a context"

# ---------------------------------------------------------------- kfab_efa insmod

if ((with_efa)); then
	bad_params kfab_efa "$EFA_KO" efa_leftovers "${EFA_BAD_PARAMS[@]}"

	if insmod_with efa "$EFA_KO" 3 num_devices=3 qps_per_device=2 \
		       rx_entries=16 mtu=16384 max_mrs=3; then
		for d in 0 1 2; do
			for kv in device=$d max_qps=2 nfreeqps=2 rx_entries=16 \
				  mtu=16384; do
				v=$(cat "/sys/class/kfab/efa$d/${kv%%=*}" 2>&1)
				[[ $v == "${kv#*=}" ]] ||
					problem "efa$d/${kv%%=*} is $v, not ${kv#*=}"
			done
			v=$(cat "/sys/class/kfab/efa$d/gid" 2>&1)
			[[ $v == "fe80:0000:0000:0000:6b66:6162:0000:000$((d + 1))" ]] ||
				problem "efa$d/gid is $v"
		done
	fi
	result "insmod kfab_efa num_devices=3 qps_per_device=2 ...: 3 devices as asked"

	# The last device hands out a QP and takes it back.
	hands_out efa 2 nfreeqps 2 -m
	v=$(</sys/class/kfab/efa2/counters/qps)
	[[ $v == 0 ]] || problem "efa2/counters/qps is $v"
	result "device 2 of 3 creates and frees a QP"

	out=$(rmmod kfab_efa 2>&1) || problem "rmmod kfab_efa: $out"
	until_true 5 none_left efa || efa_leftovers
	result "rmmod kfab_efa num_devices=3"
fi

# ---------------------------------------------------------------- restore

# reload hfi|efa KO PARAMS...: insmod KO with PARAMS, which it then reads.
reload() {
	local out

	if ! out=$(insmod "$2" "${@:3}" 2>&1); then
		problem "insmod kfab_$1 ${*:3}: $out"
	elif ! until_true 5 test -e "/dev/kfab_${1}0"; then
		problem "no /dev/kfab_${1}0"
	fi
	params_are "kfab_$1" "${@:3}"
}

if ((with_efa && was_efa)); then
	reload efa "$EFA_KO" "${found_efa_params[@]}"
fi
out=$(rmmod kfab_hfi 2>&1) || problem "rmmod kfab_hfi: $out"
if ((was_hfi)); then
	reload hfi "$HFI_KO" "${found_params[@]}"
else
	until_true 5 none_left hfi || leftovers
fi
if ((!was_core)); then
	out=$(rmmod kfab_core 2>&1) || problem "rmmod kfab_core: $out"
fi
result "modules back as found (kfab_hfi ${found_params[*]:-not loaded}${found_efa_params[*]:+, kfab_efa ${found_efa_params[*]}})"

((nfail == 0)) || exit 1
exit 0
