# Helpers shared by the guest scripts.

# disk_by_serial SERIAL: the /dev node of the virtio disk QEMU named SERIAL.
disk_by_serial() {
	local d
	for d in /sys/block/vd*; do
		[ "$(cat "$d/serial" 2>/dev/null)" = "$1" ] && {
			echo "/dev/${d##*/}"
			return 0
		}
	done
	return 1
}

# wait_disk SERIAL: as disk_by_serial, waiting up to 30 s for udev/probing.
wait_disk() {
	local i
	for i in $(seq 60); do
		disk_by_serial "$1" && return 0
		sleep 0.5
	done
	return 1
}
