// SPDX-License-Identifier: GPL-2.0
/*
 * hfi_hold: holds a kfab_hfi unit until killed, for kfab_modules.sh.
 *
 *   hfi_hold [-u UNIT] [-a] [-m] [-t] [-c]
 *
 *   -u UNIT  open /dev/kfab_hfi<UNIT> (default 0)
 *   -a       assign a context
 *   -m       map its queues and the status page (implies -a)
 *   -t       pin a TID buffer (implies -a)
 *   -c       close the file descriptor once set up, so that only the
 *            mappings hold the file (needs -m)
 *
 * Prints "ready" on stdout once everything is held and sleeps until it is
 * killed. Errors go to stderr with exit status 1 (2 for bad usage).
 */

/* hfi_util.h brings in the test harness, whose runner is not used here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "hfi_util.h"
#pragma GCC diagnostic pop

#define HOLD_TID_PAGES	16

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-u UNIT] [-a] [-m] [-t] [-c]\n", prog);
	exit(2);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "hfi_hold: %s: %s\n", what, strerror(err));
	exit(1);
}

int main(int argc, char **argv)
{
	bool assign = false, map = false, tid = false, close_fd = false;
	unsigned long unit = 0;
	struct hfi_ctx c;
	__u8 uuid[16];
	char *end;
	__u8 *buf;
	int opt, ret;

	while ((opt = getopt(argc, argv, "u:amtc")) != -1) {
		switch (opt) {
		case 'u':
			unit = strtoul(optarg, &end, 0);
			if (*optarg == '\0' || *end != '\0' || unit > UINT32_MAX)
				usage(argv[0]);
			break;
		case 'a':
			assign = true;
			break;
		case 'm':
			map = assign = true;
			break;
		case 't':
			tid = assign = true;
			break;
		case 'c':
			close_fd = true;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc || (close_fd && !map))
		usage(argv[0]);

	if (!assign) {
		ret = hfi_open((unsigned int)unit);
		if (ret < 0)
			die("open", -ret);
	} else {
		hfi_uuid_random(uuid);
		ret = hfi_ctx_assign(&c, (unsigned int)unit, uuid,
				     KFAB_HFI_PKEY_DEFAULT, 0);
		if (ret)
			die("assign", -ret);
	}
	if (map) {
		ret = hfi_ctx_map(&c);
		if (ret)
			die("mmap", -ret);
	}
	if (tid) {
		buf = mmap(NULL, HOLD_TID_PAGES * HFI_PAGE,
			   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
		if (buf == MAP_FAILED)
			die("buffer", errno);
		ret = hfi_tid_update(c.fd, buf, HOLD_TID_PAGES * HFI_PAGE,
				     NULL, NULL);
		if (ret)
			die("TID_UPDATE", -ret);
	}
	if (close_fd)
		close(c.fd);

	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
