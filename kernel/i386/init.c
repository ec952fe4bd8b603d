// SPDX-License-Identifier: GPL-2.0
/*
 * /init of the i386 test kernel's initramfs (kernel/build, flavor i386).
 *
 * Mounts /proc and /dev, then for each disk (virtio: vda btrfs, vdb xfs)
 * mounts it on /mnt/FS and runs /reflinkat_fsize_test there as root.  What
 * the host reads goes to the second serial port (ttyS1), apart from the
 * kernel's console (ttyS0): "suite-begin FS", the program's TAP,
 * "suite-end FS STATUS", and at the end "status N" (0 when every program
 * exited 0).  Then it reboots, which ends QEMU (-no-reboot).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const struct {
	const char *dev, *fs;
} disks[] = {
	{ "/dev/vda", "btrfs" },
	{ "/dev/vdb", "xfs" },
};

static int run(int out, const char *dir)
{
	char env[96];
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		snprintf(env, sizeof(env), "REFLINKAT_DIR=%s", dir);
		char *argv[] = { "/reflinkat_fsize_test", NULL };
		char *envp[] = { env, "PATH=/", NULL };

		dup2(out, 1);
		dup2(out, 2);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(void)
{
	char dir[64];
	unsigned int i;
	int out, rc, failed = 0;

	mount("proc", "/proc", "proc", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	out = open("/dev/ttyS1", O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (out < 0) {
		printf("init: /dev/ttyS1: %s\n", strerror(errno));
		out = 1;
	}
	for (i = 0; i < sizeof(disks) / sizeof(*disks); i++) {
		snprintf(dir, sizeof(dir), "/mnt/%s", disks[i].fs);
		dprintf(out, "suite-begin %s\n", disks[i].fs);
		mkdir(dir, 0755);
		if (mount(disks[i].dev, dir, disks[i].fs, 0, NULL)) {
			dprintf(out, "FAIL %s/mount: %s\n", disks[i].fs,
				strerror(errno));
			rc = 1;
		} else {
			rc = run(out, dir);
			if (umount(dir)) {
				dprintf(out, "FAIL %s/umount: %s\n",
					disks[i].fs, strerror(errno));
				rc = rc ? rc : 1;
			}
		}
		dprintf(out, "suite-end %s %d\n", disks[i].fs, rc);
		failed |= rc != 0;
	}
	sync();
	dprintf(out, "status %d\n", failed);
	reboot(RB_AUTOBOOT);
	return 0;
}
