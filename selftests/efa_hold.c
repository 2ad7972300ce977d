// SPDX-License-Identifier: GPL-2.0
/*
 * efa_hold: holds a kfab_efa device until killed, for kfab_modules.sh.
 *
 *   efa_hold [-d DEV] [-q] [-m] [-r] [-c]
 *
 *   -d DEV   open /dev/kfab_efa<DEV> (default 0)
 *   -q       create a QP
 *   -m       map its queues, the status page and mr_state (implies -q)
 *   -r       register (pin) a memory region
 *   -c       close the file descriptor once set up, so that only the
 *            mappings hold the file (needs -m)
 *
 * Prints "ready" on stdout once everything is held and sleeps until it is
 * killed. Errors go to stderr with exit status 1 (2 for bad usage).
 */

/* efa_util.h brings in the test harness, whose runner is not used here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "efa_util.h"
#pragma GCC diagnostic pop

#define HOLD_MR_PAGES	16

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-d DEV] [-q] [-m] [-r] [-c]\n", prog);
	exit(2);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "efa_hold: %s: %s\n", what, strerror(err));
	exit(1);
}

int main(int argc, char **argv)
{
	bool qp = false, map = false, mr = false, close_fd = false;
	unsigned long dev = 0;
	struct efa_qp q;
	struct efa_dev d;
	char *end;
	__u8 *buf;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:qmrc")) != -1) {
		switch (opt) {
		case 'd':
			dev = strtoul(optarg, &end, 0);
			if (*optarg == '\0' || *end != '\0' || dev > UINT32_MAX)
				usage(argv[0]);
			break;
		case 'q':
			qp = true;
			break;
		case 'm':
			map = qp = true;
			break;
		case 'r':
			mr = true;
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

	ret = efa_dev_open(&d, (unsigned int)dev, map);
	if (ret)
		die("open", -ret);
	if (qp) {
		ret = efa_qp_create(&q, d.fd, map);
		if (ret)
			die("CREATE_QP", -ret);
	}
	if (mr) {
		buf = efa_anon(HOLD_MR_PAGES * EFA_PAGE);
		if (!buf)
			die("buffer", errno);
		memset(buf, 1, HOLD_MR_PAGES * EFA_PAGE);
		ret = efa_reg_mr(d.fd, buf, HOLD_MR_PAGES * EFA_PAGE,
				 KFAB_EFA_ACCESS_ALL, NULL);
		if (ret)
			die("REG_MR", -ret);
	}
	if (close_fd)
		close(d.fd);

	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
