// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hold: holds a kfab_hfi unit or a kfab_efa device until killed, for
 * kfab_modules.sh.
 *
 *   kfab_hold hfi|efa [-n N] [-o] [-m] [-p] [-c]
 *
 *   -n N   open /dev/kfab_hfi<N> or /dev/kfab_efa<N> (default 0)
 *   -o     hfi: assign a context; efa: create a QP
 *   -m     map its queues and the status page, for efa also mr_state
 *          (implies -o)
 *   -p     hfi: pin a TID buffer (implies -o); efa: register (pin) a
 *          memory region
 *   -c     close the file descriptor once set up, so that only the
 *          mappings hold the file (needs -m)
 *
 * Prints "ready" on stdout once everything is held and sleeps until it is
 * killed. Errors go to stderr with exit status 1 (2 for bad usage).
 */

/* efa_util.h brings in the test harness, whose runner is not used here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "efa_util.h"
#pragma GCC diagnostic pop

#define HOLD_PAGES	16

struct hold {
	unsigned int n;
	bool obj, map, pin;
};

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s hfi|efa [-n N] [-o] [-m] [-p] [-c]\n",
		prog);
	exit(2);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "kfab_hold: %s: %s\n", what, strerror(err));
	exit(1);
}

/* @ret, unless it is -errno: then the program ends, saying @what failed. */
static int must(int ret, const char *what)
{
	if (ret < 0)
		die(what, -ret);
	return ret;
}

/* HOLD_PAGES of anonymous memory to pin. */
static __u8 *hold_buffer(void)
{
	__u8 *buf = hfi_anon(HOLD_PAGES * HFI_PAGE);

	if (!buf)
		die("buffer", errno);
	memset(buf, 1, HOLD_PAGES * HFI_PAGE);
	return buf;
}

/* The unit's file, with what @h asks for. */
static int hold_hfi(const struct hold *h)
{
	struct hfi_ctx c;
	__u8 uuid[16];

	if (!h->obj && !h->pin)
		return must(hfi_open(h->n), "open");
	hfi_uuid_random(uuid);
	must(hfi_ctx_assign(&c, h->n, uuid, KFAB_HFI_PKEY_DEFAULT, 0),
	     "assign");
	if (h->map)
		must(hfi_ctx_map(&c), "mmap");
	if (h->pin)
		must(hfi_tid_update(c.fd, hold_buffer(), HOLD_PAGES * HFI_PAGE,
				    NULL, NULL), "TID_UPDATE");
	return c.fd;
}

/* The device's file, with what @h asks for. */
static int hold_efa(const struct hold *h)
{
	struct efa_qp q;
	struct efa_dev d;

	must(efa_dev_open(&d, h->n, h->map), "open");
	if (h->obj)
		must(efa_qp_create(&q, d.fd, h->map), "CREATE_QP");
	if (h->pin)
		must(efa_reg_mr(d.fd, hold_buffer(), HOLD_PAGES * EFA_PAGE,
				KFAB_EFA_ACCESS_ALL, NULL), "REG_MR");
	return d.fd;
}

int main(int argc, char **argv)
{
	struct hold h = { 0 };
	bool close_fd = false;
	int (*hold)(const struct hold *h);
	unsigned long n;
	char *end;
	int opt, fd;

	if (argc < 2)
		usage(argv[0]);
	if (!strcmp(argv[1], "hfi"))
		hold = hold_hfi;
	else if (!strcmp(argv[1], "efa"))
		hold = hold_efa;
	else
		usage(argv[0]);
	optind = 2;
	while ((opt = getopt(argc, argv, "n:ompc")) != -1) {
		switch (opt) {
		case 'n':
			n = strtoul(optarg, &end, 0);
			if (*optarg == '\0' || *end != '\0' || n > UINT32_MAX)
				usage(argv[0]);
			h.n = (unsigned int)n;
			break;
		case 'o':
			h.obj = true;
			break;
		case 'm':
			h.map = h.obj = true;
			break;
		case 'p':
			h.pin = true;
			break;
		case 'c':
			close_fd = true;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc || (close_fd && !h.map))
		usage(argv[0]);

	fd = hold(&h);
	if (close_fd)
		close(fd);

	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
