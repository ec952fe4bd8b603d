// SPDX-License-Identifier: GPL-2.0
/*
 * /init of the i386 test kernel's initramfs (kernel/build, flavor i386).
 *
 * Mounts /proc, /dev, /sys and Smack's smackfs, then for each disk
 * (virtio: vda btrfs, vdb xfs) mounts it on /mnt/FS and runs each program
 * there as root: /reflinkat_fsize_test as suite FS, /reflinkat_smack_test
 * as suite FS-smack.  What the host reads goes to the second serial port
 * (ttyS1), apart from the kernel's console (ttyS0): "suite-begin SUITE",
 * the program's TAP, "suite-end SUITE STATUS", and at the end "status N"
 * (0 when every program exited 0).  Then it reboots, which ends QEMU
 * (-no-reboot).
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

static const struct {
	const char *path, *suffix;
} programs[] = {
	{ "/reflinkat_fsize_test", "" },
	{ "/reflinkat_smack_test", "-smack" },
};

static int run(int out, const char *prog, const char *dir)
{
	char env[96];
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		snprintf(env, sizeof(env), "REFLINKAT_DIR=%s", dir);
		char *argv[] = { (char *)prog, NULL };
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
	char dir[64], suite[64];
	unsigned int i, p;
	int out, rc, failed = 0;

	mount("proc", "/proc", "proc", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	out = open("/dev/ttyS1", O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (out < 0) {
		printf("init: /dev/ttyS1: %s\n", strerror(errno));
		out = 1;
	}
	/*
	 * This kernel has Smack as its one module: without smackfs the
	 * Smack suites would only skip, which this boot must not pass.
	 */
	if (mount("smackfs", "/sys/fs/smackfs", "smackfs", 0, NULL)) {
		dprintf(out, "FAIL smackfs/mount: %s\n", strerror(errno));
		failed = 1;
	}
	for (i = 0; i < sizeof(disks) / sizeof(*disks); i++) {
		snprintf(dir, sizeof(dir), "/mnt/%s", disks[i].fs);
		mkdir(dir, 0755);
		if (mount(disks[i].dev, dir, disks[i].fs, 0, NULL)) {
			dprintf(out, "FAIL %s/mount: %s\n", disks[i].fs,
				strerror(errno));
			failed = 1;
			continue;
		}
		for (p = 0; p < sizeof(programs) / sizeof(*programs); p++) {
			snprintf(suite, sizeof(suite), "%s%s", disks[i].fs,
				 programs[p].suffix);
			dprintf(out, "suite-begin %s\n", suite);
			rc = run(out, programs[p].path, dir);
			dprintf(out, "suite-end %s %d\n", suite, rc);
			failed |= rc != 0;
		}
		if (umount(dir)) {
			dprintf(out, "FAIL %s/umount: %s\n", disks[i].fs,
				strerror(errno));
			failed = 1;
		}
	}
	sync();
	dprintf(out, "status %d\n", failed);
	reboot(RB_AUTOBOOT);
	return 0;
}
