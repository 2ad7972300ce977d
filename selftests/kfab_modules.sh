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
# other parameters visible in the devices. efa_hold is its holder.
#
# It reloads the modules, so it runs last; it leaves them as it found them
# (loaded with the same parameters, or not loaded). Needs root, hfi_hold
# (and efa_hold) next to it and the built modules in ../kmod.

ksft_skip=4

DIR=$(dirname "$(readlink -f "$0")")
KMOD=$(readlink -f "$DIR/../kmod")
CORE_KO=$KMOD/kfab_core.ko
HFI_KO=$KMOD/hfi_ctx/kfab_hfi.ko
HOLD=$DIR/hfi_hold
EFA_KO=$KMOD/efa_helper/kfab_efa.ko
EHOLD=$DIR/efa_hold

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
# kfab_efa's tests run when the module and its holder are built.
with_efa=0
if [[ -r $EFA_KO && -x $EHOLD ]]; then
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

	local prog=$HOLD

	if [[ $1 == efa ]]; then
		prog=$EHOLD
		shift
	fi
	"$prog" "$@" >"$tmp/hold" &
	hold_pid=$!
	if ! read -r -t 20 -u "$holdfd" line || [[ $line != ready ]]; then
		echo "# ${prog##*/} $* did not get ready"
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
if loaded kfab_hfi; then
	was_hfi=1
	for p in /sys/module/kfab_hfi/parameters/*; do
		v=$(<"$p")
		[[ -n $v ]] && found_params+=("${p##*/}=$v")
	done
fi
if loaded kfab_efa; then
	was_efa=1
	for p in /sys/module/kfab_efa/parameters/*; do
		v=$(<"$p")
		[[ -n $v ]] && found_efa_params+=("${p##*/}=$v")
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

# ---------------------------------------------------------------- kfab_efa

no_efa_devices_left() {
	! compgen -G '/dev/kfab_efa*' >/dev/null &&
		! compgen -G '/sys/class/kfab/efa*' >/dev/null &&
		! grep -qw kfab_efa /proc/devices
}

efa_leftovers() {
	loaded kfab_efa && problem "kfab_efa is loaded"
	compgen -G '/dev/kfab_efa*' >/dev/null &&
		problem "device nodes left:" /dev/kfab_efa*
	compgen -G '/sys/class/kfab/efa*' >/dev/null &&
		problem "class devices left:" /sys/class/kfab/efa*
	grep -qw kfab_efa /proc/devices &&
		problem "kfab_efa still in /proc/devices"
}

# efa_busy DESC HOLD_ARGS...
efa_busy() {
	local desc="rmmod kfab_efa refused while $1"

	shift
	if hold_start efa "$@"; then
		rmmod_refused kfab_efa
		[[ -e /dev/kfab_efa0 ]] || problem "devices gone"
		hold_stop
	else
		problem "efa_hold $* did not get ready"
	fi
	result "$desc"
}

if ((with_efa)); then
	last_dev=$(($(</sys/module/kfab_efa/parameters/num_devices) - 1))
	efa_busy "a device is open" -d "$last_dev"
	efa_busy "a QP is mapped and an MR pinned" -m -r
	efa_busy "only a mapping holds the file" -m -c

	rmmod_refused kfab_core
	result "rmmod kfab_core refused while kfab_efa is loaded"

	out=$(rmmod kfab_efa 2>&1) || problem "rmmod kfab_efa: $out"
	until_true 5 no_efa_devices_left || efa_leftovers
	result "rmmod kfab_efa once its holders are gone" ||
		bail "kfab_efa could not be unloaded"
fi

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

# ---------------------------------------------------------------- kfab_efa insmod

efa_devices_ok() {
	local d

	for ((d = 0; d < $1; d++)); do
		[[ -c /dev/kfab_efa$d ]] || return 1
	done
}

if ((with_efa)); then
	for params in "${EFA_BAD_PARAMS[@]}"; do
		desc="insmod kfab_efa $params: refused, nothing left"
		name=${params##* }
		name=${name%%=*}
		logged=$(dmesg | grep -c "kfab_efa: $name:")
		# shellcheck disable=SC2086 # params are words on purpose
		insmod "$EFA_KO" $params 2>/dev/null && problem "insmod succeeded"
		((logged < $(dmesg | grep -c "kfab_efa: $name:"))) ||
			problem "no kernel log line about $name"
		efa_leftovers
		result "$desc"
		if loaded kfab_efa; then
			rmmod kfab_efa || bail "cannot unload kfab_efa $params"
		fi
	done

	if ! out=$(insmod "$EFA_KO" num_devices=3 qps_per_device=2 \
		   rx_entries=16 mtu=16384 max_mrs=3 2>&1); then
		problem "insmod: $out"
	elif ! until_true 5 efa_devices_ok 3; then
		problem "no /dev/kfab_efa0..2:" /dev/kfab_efa*
	else
		[[ -e /sys/class/kfab/efa3 || -e /dev/kfab_efa3 ]] &&
			problem "a fourth device exists"
		for kv in num_devices=3 qps_per_device=2 rx_entries=16 \
			  mtu=16384 max_mrs=3; do
			v=$(cat "/sys/module/kfab_efa/parameters/${kv%%=*}")
			[[ $v == "${kv#*=}" ]] ||
				problem "${kv%%=*} reads $v, not ${kv#*=}"
		done
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
	if hold_start efa -d 2 -m; then
		v=$(</sys/class/kfab/efa2/nfreeqps)
		[[ $v == 1 ]] || problem "efa2/nfreeqps is $v with one holder"
		hold_stop
		until_true 5 grep -qx 2 /sys/class/kfab/efa2/nfreeqps ||
			problem "efa2/nfreeqps is not 2 again"
		v=$(</sys/class/kfab/efa2/counters/qps)
		[[ $v == 0 ]] || problem "efa2/counters/qps is $v"
	else
		problem "no QP on device 2"
	fi
	result "device 2 of 3 creates and frees a QP"

	out=$(rmmod kfab_efa 2>&1) || problem "rmmod kfab_efa: $out"
	until_true 5 no_efa_devices_left || efa_leftovers
	result "rmmod kfab_efa num_devices=3"
fi

# ---------------------------------------------------------------- restore

if ((with_efa && was_efa)); then
	if ! out=$(insmod "$EFA_KO" "${found_efa_params[@]}" 2>&1); then
		problem "insmod kfab_efa ${found_efa_params[*]}: $out"
	elif ! until_true 5 test -e /dev/kfab_efa0; then
		problem "no /dev/kfab_efa0"
	fi
	for kv in "${found_efa_params[@]}"; do
		v=$(cat "/sys/module/kfab_efa/parameters/${kv%%=*}" 2>&1)
		[[ $v == "${kv#*=}" ]] || problem "${kv%%=*} is $v, not ${kv#*=}"
	done
fi
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
result "modules back as found (kfab_hfi ${found_params[*]:-not loaded}${found_efa_params[*]:+, kfab_efa ${found_efa_params[*]}})"

((nfail == 0)) || exit 1
exit 0
