// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: end-to-end test of a libfabric provider's FI_EP_RDM
 * messaging, RMA and atomics, through the public API only (fi_msg(3),
 * fi_tagged(3), fi_rma(3), fi_atomic(3), fi_mr(3), fi_cq(3), fi_cntr(3),
 * fi_av(3), fi_endpoint(3)). It is the judge of kfab_opx and is
 * validated against libfabric's own shm, tcp and sockets providers, so
 * that a failure means a provider bug. Each case is a function that runs
 * on every rank and opens with what it checks; cases[] lists them (-l).
 *
 * Rank 0 (this process) prints TAP. For each case it creates a socketpair
 * per peer, forks and re-executes itself as that peer (so each peer
 * initialises libfabric from its own environment, e.g. FI_OPX_UUID), and
 * the ranks exchange endpoint names over the sockets and insert each other
 * into their AVs. Peers send their checks to rank 0, which prints them as
 * points ("rank 1: ..."). Every wait is bounded (-t): a completion that
 * never comes is a failed point, not a hang; a case stuck inside a
 * libfabric call is ended by a watchdog ("Bail out!") that kills the peers.
 *
 *   fi_msg_test [-p PROV] [-c CASE[,CASE...]] [-l] [-f] [-t MS]
 *               [-n COUNT] [-s SIZE[,SIZE...]] [-T SEC]
 *
 *   -p PROV   provider (default $FI_PROVIDER, else kfab_opx); when
 *             fi_getinfo has no such provider, every case is skipped (4)
 *   -c CASES  run only these cases; -l lists the cases
 *   -f        also run the kfab_* only cases (deadpeer, rma_deadpeer,
 *             jobs, sleep, auto) on other providers, where they are
 *             expected to fail: to check the test
 *   -t MS     timeout of each wait for a completion or a peer (10000)
 *   -n, -s    stress: message count ($FI_MSG_TEST_COUNT, 2000) and the
 *             sizes it picks from ($FI_MSG_TEST_SIZES, k and m suffixes)
 *   -T SEC    stress: time limit ($FI_MSG_TEST_TIME, 120)
 *
 *   build/ulib-tests/fi_msg_test -p shm
 *   FI_PROVIDER_PATH=build/prov build/ulib-tests/fi_msg_test -p kfab_opx
 *   KFAB_SHM_DROP_PPM=10000 FI_PROVIDER_PATH=build/prov \
 *           build/ulib-tests/fi_msg_test -p kfab_opx -c stress -n 20000
 *
 * The RMA and atomic cases alone ask for FI_RMA or FI_ATOMIC (skipped
 * when the provider lacks them; sep does RMA only if it is offered), offering mr_mode FI_MR_VIRT_ADDR,
 * FI_MR_PROV_KEY and FI_MR_ALLOCATED, and follow what comes back: keys
 * from fi_mr_key, virtual addresses or offsets (kfab_opx: mr_mode 0,
 * FI_MR_SCALABLE), FI_MR_ENDPOINT binds, descriptors always passed
 * (rma_basic, rma_basic14 and rma_scalable ask for fi_mr(3)'s legacy
 * FI_MR_BASIC and FI_MR_SCALABLE instead). Each
 * rank registers windows with guard bytes and keeps an image of what
 * they must hold; ranks exchange keys and bases over the control socket.
 *
 * Provider behaviour the API leaves open is assumed only where the check
 * says so; known gaps of libfabric's own providers are in known_gaps[]
 * (util.c).
 * Exit: 0 all points passed, 1 a point failed, 4 provider not available.
 *
 * fi_msg.h is the harness, which the files of cases share: ctl.c (ranks,
 * control channel, points), cq.c, post.c, batch.c, side.c, util.c; the
 * cases are in the files named after what they test.
 */
#include "fi_msg.h"

#include "tests/tap.h"

const char *opt_prov;
int opt_wait_ms = 10000;
bool opt_force;
unsigned long opt_count = 2000;
int opt_stress_s = 120;
const char *opt_sizes = "1,64,1000,4096,8192,16385,65536,262144";
size_t stress_sizes[32];
unsigned int stress_nsizes;

/* ---- TAP output: its count lives in this file, for every file ---- */

void print_point(bool ok, const char *file, int line, const char *text,
		 const char *detail)
{
	tap_point(ok, file, line, "%s", text);
	if (!ok && detail && detail[0])
		tap_diag("  %s", detail);
}

void print_diag(int rank, const char *text)
{
	if (rank)
		tap_diag("rank %d: %s", rank, text);
	else
		tap_diag("%s", text);
}

void skip(const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	tap_skip("%s", text);
}

/* ---- processes ---- */

/* Each case runs on every rank; its function opens with what it checks. */
static const struct tcase cases[] = {
	{ .name = "sizes", .run = case_sizes, .nranks = 2,
	  .desc = "every size, msg and tagged, posted and unexpected" },
	{ .name = "vector", .run = case_vector, .nranks = 2,
	  .desc = "sendv/recvv, sendmsg/recvmsg, tagged forms, 1..4 iovs" },
	{ .name = "inject", .run = case_inject, .nranks = 2,
	  .desc = "inject, injectdata, tinject, tinjectdata; sendmsg and tsendmsg FI_INJECT|FI_COMPLETION; senddata" },
	{ .name = "inject_opflags", .run = case_inject_opflags, .nranks = 2,
	  .desc = "inject and tinject take the op flags but the completion ones: FI_DELIVERY_COMPLETE does not hold them",
	  .cfg = { .cntrs = true, .tx_op_flags = FI_DELIVERY_COMPLETE } },
	{ .name = "tagmatch", .run = case_tagmatch, .nranks = 2,
	  .desc = "tags, ignore bits, permuted receives, same-tag order" },
	{ .name = "directed", .run = case_directed, .nranks = 3,
	  .cfg = { .caps = FI_DIRECTED_RECV },
	  .desc = "FI_DIRECTED_RECV with two senders" },
	{ .name = "multirecv", .run = case_multirecv, .nranks = 2,
	  .cfg = { .caps = FI_MULTI_RECV, .min_multi_recv = MULTI_MIN },
	  .desc = "FI_MULTI_RECV and FI_OPT_MIN_MULTI_RECV" },
	{ .name = "peek", .run = case_peek, .nranks = 2,
	  .desc = "FI_PEEK, FI_CLAIM, FI_DISCARD" },
	{ .name = "tpeek", .run = case_peek, .nranks = 2,
	  .cfg = { .peek_hints = true, .wait_obj = FI_WAIT_UNSPEC,
		   .kfab_offers = true },
	  .desc = "peek with fi_rdm_tagged_peek's hints, FI_WAIT_UNSPEC CQs" },
	{ .name = "tpeek_basic", .run = case_peek, .nranks = 2,
	  .cfg = { .peek_hints = true, .wait_obj = FI_WAIT_UNSPEC,
		   .api_minor = 4, .mr_legacy = FI_MR_BASIC,
		   .kfab_offers = true },
	  .desc = "tpeek at API 1.4, mr_mode FI_MR_BASIC" },
	{ .name = "tpeek_scalable", .run = case_peek, .nranks = 2,
	  .cfg = { .peek_hints = true, .wait_obj = FI_WAIT_UNSPEC,
		   .api_minor = 4, .mr_legacy = FI_MR_SCALABLE,
		   .kfab_offers = true },
	  .desc = "tpeek at API 1.4, mr_mode FI_MR_SCALABLE" },
	{ .name = "cancel", .run = case_cancel, .nranks = 2,
	  .desc = "fi_cancel of posted and of completed receives" },
	{ .name = "selective", .run = case_selective, .nranks = 2,
	  .cfg = { .tx_bind = FI_SELECTIVE_COMPLETION },
	  .desc = "FI_SELECTIVE_COMPLETION on the transmit CQ" },
	{ .name = "compsem", .run = case_compsem, .nranks = 2,
	  .desc = "FI_INJECT/TRANSMIT/DELIVERY_COMPLETE" },
	{ .name = "av_table", .run = case_av, .nranks = 3,
	  .cfg = { .av_type = FI_AV_TABLE, .manual_av = true },
	  .desc = "FI_AV_TABLE: indices, lookup, FI_SOURCE, remove" },
	{ .name = "av_map", .run = case_av, .nranks = 3,
	  .cfg = { .av_type = FI_AV_MAP, .manual_av = true },
	  .desc = "FI_AV_MAP: lookup, FI_SOURCE, remove" },
	{ .name = "cq_context", .run = case_cqfmt, .nranks = 2,
	  .cfg = { .cq_format = FI_CQ_FORMAT_CONTEXT },
	  .desc = "FI_CQ_FORMAT_CONTEXT" },
	{ .name = "cq_msg", .run = case_cqfmt, .nranks = 2,
	  .cfg = { .cq_format = FI_CQ_FORMAT_MSG },
	  .desc = "FI_CQ_FORMAT_MSG" },
	{ .name = "cq_data", .run = case_cqfmt, .nranks = 2,
	  .cfg = { .cq_format = FI_CQ_FORMAT_DATA },
	  .desc = "FI_CQ_FORMAT_DATA" },
	{ .name = "cq_tagged", .run = case_cqfmt, .nranks = 2,
	  .cfg = { .cq_format = FI_CQ_FORMAT_TAGGED },
	  .desc = "FI_CQ_FORMAT_TAGGED" },
	{ .name = "threads", .run = case_threads, .nranks = 2,
	  .cfg = { .threading = FI_THREAD_SAFE },
	  .desc = "FI_THREAD_SAFE: two sending threads, one CQ reader" },
	{ .name = "window", .run = case_window, .nranks = 2,
	  .desc = "10000 messages, 256 in flight; a flood past -FI_EAGAIN" },
	{ .name = "stress", .run = case_stress, .nranks = 2,
	  .desc = "-n messages of the -s sizes: once, in order, in -T s" },
	{ .name = "deadpeer", .run = case_deadpeer, .nranks = 3,
	  .cfg = { .caps = FI_DIRECTED_RECV }, .kfab_only = true,
	  .desc = "a peer killed with operations pending to it" },
	{ .name = "cntr", .run = case_cntr, .nranks = 2,
	  .cfg = { .tx_bind = FI_SELECTIVE_COMPLETION, .cntrs = true },
	  .desc = "counters: every send and receive, errors, fi_cntr_wait" },
	{ .name = "waitfd", .run = case_waitfd, .nranks = 2,
	  .cfg = { .wait_obj = FI_WAIT_FD, .threading = FI_THREAD_SAFE },
	  .desc = "FI_WAIT_FD: FI_GETWAIT and poll, sread, signal, trywait" },
	{ .name = "signal", .run = case_signal, .nranks = 2,
	  .cfg = { .wait_obj = FI_WAIT_UNSPEC },
	  .desc = "FI_WAIT_UNSPEC: fi_cq_signal, then fi_cq_sread returns" },
	{ .name = "poll", .run = case_poll, .nranks = 2,
	  .cfg = { .cntrs = true },
	  .desc = "poll sets: fi_poll_open, fi_poll_add, fi_poll, fi_poll_del" },
	{ .name = "sleep", .run = case_sleep, .nranks = 2,
	  .cfg = { .wait_obj = FI_WAIT_FD }, .kfab_only = true,
	  .desc = "fi_cq_sread sleeps: CPU use and wake latency" },
	{ .name = "auto", .run = case_auto, .nranks = 2,
	  .cfg = { .auto_progress = true }, .kfab_only = true,
	  .desc = "FI_PROGRESS_AUTO: a rendezvous while the receiver sleeps" },
	{ .name = "rma_write", .run = case_rma_write, .nranks = 2,
	  .cfg = { .caps = FI_RMA },
	  .desc = "write, writev, writemsg, inject_write, 1 B..4 MiB" },
	{ .name = "rma_basic", .run = case_rma_legacy, .nranks = 2,
	  .cfg = { .caps = FI_RMA, .mr_legacy = FI_MR_BASIC,
		   .kfab_offers = true },
	  .desc = "mr_mode FI_MR_BASIC: provider keys, virtual addresses" },
	{ .name = "rma_basic14", .run = case_rma_legacy, .nranks = 2,
	  .cfg = { .caps = FI_RMA, .mr_legacy = FI_MR_BASIC,
		   .api_minor = 4, .kfab_offers = true },
	  .desc = "API 1.4, FI_MR_BASIC: provider keys, virtual addresses" },
	{ .name = "rma_scalable", .run = case_rma_legacy, .nranks = 2,
	  .cfg = { .caps = FI_RMA, .mr_legacy = FI_MR_SCALABLE },
	  .desc = "mr_mode FI_MR_SCALABLE: application keys, offsets" },
	{ .name = "rma_read", .run = case_rma_read, .nranks = 2,
	  .cfg = { .caps = FI_RMA },
	  .desc = "read, readv, readmsg, 1 B..4 MiB" },
	{ .name = "rma_data", .run = case_rma_data, .nranks = 2,
	  .cfg = { .caps = FI_RMA },
	  .desc = "writedata: target CQ data, no receive consumed" },
	{ .name = "rma_errors", .run = case_rma_errors, .nranks = 2,
	  .cfg = { .caps = FI_RMA },
	  .desc = "RMA to memory it may not touch: error, target untouched" },
	{ .name = "rma_cntr", .run = case_rma_cntr, .nranks = 2,
	  .cfg = { .caps = FI_RMA, .rma_cntrs = true },
	  .desc = "FI_WRITE, FI_READ, FI_REMOTE_* counters" },
	{ .name = "atomic", .run = case_atomic, .nranks = 2,
	  .cfg = { .caps = FI_ATOMIC },
	  .desc = "every valid datatype x op x kind against a reference" },
	{ .name = "atomic_concurrent", .run = case_atomic_concurrent,
	  .nranks = 3, .cfg = { .caps = FI_ATOMIC },
	  .desc = "two ranks increment one word: exact sums, fetched once" },
	{ .name = "rma_deadpeer", .run = case_rma_deadpeer, .nranks = 2,
	  .cfg = { .caps = FI_RMA }, .kfab_only = true,
	  .desc = "RMA to a killed peer completes in error" },
	{ .name = "jobs", .run = case_jobs, .nranks = 2,
	  .cfg = { .manual_av = true, .other_job = true }, .kfab_only = true,
	  .only = "kfab_opx",
	  .desc = "ranks of different FI_OPX_UUID cannot talk" },
	{ .name = "sep", .run = case_sep, .nranks = 2,
	  .cfg = { .caps = FI_NAMED_RX_CTX, .opt_caps = FI_RMA,
		   .threading = FI_THREAD_FID, .sep = true },
	  .desc = "scalable endpoint: named rx contexts, each with its CQ" },
	{ .name = "sep_first", .run = case_sep_first, .nranks = 2,
	  .cfg = { .caps = FI_NAMED_RX_CTX, .opt_caps = FI_RMA,
		   .sep = true },
	  .desc = "scalable endpoint enabled before its contexts; an rx context without a CQ" },
};
static const size_t ncases = ARRAY_SIZE(cases);

static char wd_msg[200];
static size_t wd_len;
static pid_t wd_pid[MAX_RANKS];

static void watchdog(int sig)
{
	ssize_t n = write(STDOUT_FILENO, wd_msg, wd_len);

	(void)sig;
	(void)n;
	for (int r = 1; r < MAX_RANKS; r++)
		if (wd_pid[r] > 0)
			kill(wd_pid[r], SIGKILL);
	_exit(1);
}

static int case_budget(const struct tcase *tc)
{
	int s = 120;

	if (tc->run == case_stress)
		s = opt_stress_s + 60;
	if (opt_wait_ms > 10000)
		s = s * (opt_wait_ms / 10000 + 1);
	return s;
}

/* FI_OPX_UUID for a rank of another job: rank 0's, last digit changed. */
static void other_job_env(char *buf, size_t size)
{
	const char *uuid = getenv("FI_OPX_UUID");
	size_t n;

	snprintf(buf, size, "FI_OPX_UUID=%s", uuid && *uuid ? uuid : OPX_UUID);
	n = strlen(buf);
	buf[n - 1] = buf[n - 1] == '0' ? '1' : '0';
}

static void spawn(struct side *s, int r)
{
	char spec[96], t[16], n[24], T[16], env[96];
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		die("socketpair: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		fcntl(sv[1], F_SETFD, 0);
		snprintf(spec, sizeof(spec), "%s:%d:%d:%d", s->tc->name, r,
			 s->nranks, sv[1]);
		snprintf(t, sizeof(t), "%d", opt_wait_ms);
		snprintf(n, sizeof(n), "%lu", opt_count);
		snprintf(T, sizeof(T), "%d", opt_stress_s);
		if (s->tc->cfg.other_job && r == 1) {
			other_job_env(env, sizeof(env));
			putenv(env);
		}
		execl("/proc/self/exe", "fi_msg_test", "-p", opt_prov, "-t", t,
		      "-n", n, "-s", opt_sizes, "-T", T, "-P", spec,
		      (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	s->ctl[r] = sv[0];
	s->pid[r] = wd_pid[r] = pid;
}

/* Rank 0: wait for each peer to finish and check how it exited. */
static void reap(struct side *s)
{
	for (int r = 1; r < s->nranks; r++) {
		uint64_t end = now_ms() + opt_wait_ms;
		int status = 0;
		pid_t w;

		while (!s->gone[r] && now_ms() < end) {
			ctl_poll(s);
			ctl_sleep(s, 5);
		}
		while ((w = waitpid(s->pid[r], &status, WNOHANG)) == 0 &&
		       now_ms() < end)
			usleep(1000);
		if (w == 0) {
			kill(s->pid[r], SIGKILL);
			waitpid(s->pid[r], &status, 0);
			CHECK(s, false, "%s: rank %d did not exit; killed",
			      s->tc->name, r);
		} else if (!s->may_die[r] &&
			   (!WIFEXITED(status) || WEXITSTATUS(status))) {
			CHECK(s, false, "%s: rank %d exited with %s %d",
			      s->tc->name, r,
			      WIFEXITED(status) ? "status" : "signal",
			      WIFEXITED(status) ? WEXITSTATUS(status) :
						  WTERMSIG(status));
		}
		close(s->ctl[r]);
		wd_pid[r] = 0;
	}
}

static void run_case(const struct tcase *tc)
{
	struct fi_info *info = NULL;
	const char *why = known_gap(tc->name);
	struct side *s;
	char need[256];
	int rc;

	if (why) {
		tap_skip("%s: %s: %s", tc->name, opt_prov, why);
		return;
	}
	if (tc->kfab_only && strncmp(opt_prov, "kfab_", 5) && !opt_force) {
		tap_skip("%s: for kfab_* providers only (-f runs it)",
			 tc->name);
		return;
	}
	if (tc->only && strcmp(opt_prov, tc->only) && !opt_force) {
		tap_skip("%s: for %s only: other providers have no job key (-f runs it)",
			 tc->name, tc->only);
		return;
	}
	rc = get_info(tc, &info);
	if (rc == -FI_ENODATA && tc->cfg.kfab_offers &&
	    !strncmp(opt_prov, "kfab_", 5)) {
		TAP_OK(0, "%s: fi_getinfo: %s must match these hints",
		       tc->name, opt_prov);
		return;
	}
	if (rc == -FI_ENODATA) {
		snprintf(need, sizeof(need), " %s%s%s",
			 fi_tostr(&tc->cfg.caps, FI_TYPE_CAPS),
			 tc->cfg.threading == FI_THREAD_SAFE ?
			 " FI_THREAD_SAFE" :
			 tc->cfg.threading == FI_THREAD_FID ?
			 " FI_THREAD_FID" : "",
			 tc->cfg.av_type == FI_AV_TABLE ? " FI_AV_TABLE" :
			 tc->cfg.av_type == FI_AV_MAP ? " FI_AV_MAP" : "");
		tap_skip("%s: %s lacks%s (fi_getinfo: FI_ENODATA)", tc->name,
			 opt_prov, need);
		return;
	}
	if (rc) {
		TAP_OK(0, "%s: fi_getinfo: %s", tc->name, fi_strerror(-rc));
		return;
	}
	tap_diag("---- %s: %s", tc->name, tc->desc);
	if (!(info->caps & FI_SOURCE))
		tap_diag("%s: no FI_SOURCE: sources are not checked", tc->name);
	s = side_new(tc, 0, tc->nranks);
	s->info = info;
	snprintf(wd_msg, sizeof(wd_msg),
		 "Bail out! %s: still running after %d s: hung in a libfabric call?\n",
		 tc->name, case_budget(tc));
	wd_len = strlen(wd_msg);
	signal(SIGALRM, watchdog);
	alarm(case_budget(tc));
	for (int r = 1; r < tc->nranks; r++)
		spawn(s, r);
	side_run(s);
	reap(s);
	alarm(0);
	free(s);
}

/* A peer: "-P case:rank:nranks:fd". */
static int peer_main(const char *spec)
{
	char name[64];
	int rank, nranks, fd;
	struct ctl_msg m = { .type = CTL_DONE };
	struct side *s;
	size_t i;

	if (sscanf(spec, "%63[^:]:%d:%d:%d", name, &rank, &nranks, &fd) != 4)
		return 1;
	for (i = 0; i < ncases; i++)
		if (!strcmp(cases[i].name, name))
			break;
	if (i == ncases || rank < 1 || rank >= nranks || nranks > MAX_RANKS)
		return 1;
	alarm(case_budget(&cases[i]) + 30);
	s = side_new(&cases[i], rank, nranks);
	s->ctl[0] = fd;
	side_run(s);
	ctl_send(s, 0, &m);
	free(s);
	return 0;
}

static bool parse_sizes(const char *arg)
{
	stress_nsizes = 0;
	while (*arg) {
		char *end;
		unsigned long long v = strtoull(arg, &end, 0);

		if (end == arg || stress_nsizes == ARRAY_SIZE(stress_sizes))
			return false;
		if (*end == 'k' || *end == 'K')
			v *= KIB, end++;
		else if (*end == 'm' || *end == 'M')
			v *= MIB, end++;
		stress_sizes[stress_nsizes++] = v;
		if (*end == ',')
			end++;
		else if (*end)
			return false;
		arg = end;
	}
	return stress_nsizes > 0;
}

static bool selected(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p; p += strcspn(p, ",")) {
		p += *p == ',';
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fi_msg_test [-p PROV] [-c CASE,...] [-l] [-f] [-t MS] [-n COUNT] [-s SIZES] [-T SEC]\n");
	exit(1);
}


int main(int argc, char **argv)
{
	const char *only = NULL, *peer = NULL, *env;
	struct fi_info *info = NULL;
	bool list = false;
	int c, rc;

	opt_prov = getenv("FI_PROVIDER");
	if (!opt_prov || !*opt_prov)
		opt_prov = "kfab_opx";
	env = getenv("FI_MSG_TEST_COUNT");
	if (env && *env)
		opt_count = strtoul(env, NULL, 0);
	env = getenv("FI_MSG_TEST_SIZES");
	if (env && *env)
		opt_sizes = env;
	env = getenv("FI_MSG_TEST_TIME");
	if (env && *env)
		opt_stress_s = atoi(env);
	while ((c = getopt(argc, argv, "p:c:lft:n:s:T:P:")) != -1) {
		switch (c) {
		case 'p':
			opt_prov = optarg;
			break;
		case 'c':
			only = optarg;
			break;
		case 'l':
			list = true;
			break;
		case 'f':
			opt_force = true;
			break;
		case 't':
			opt_wait_ms = atoi(optarg);
			break;
		case 'n':
			opt_count = strtoul(optarg, NULL, 0);
			break;
		case 's':
			opt_sizes = optarg;
			break;
		case 'T':
			opt_stress_s = atoi(optarg);
			break;
		case 'P':
			peer = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind < argc || opt_wait_ms <= 0 || !opt_count ||
	    opt_count > UINT32_MAX || opt_stress_s <= 0 ||
	    !parse_sizes(opt_sizes))
		usage();
	if (known_gap("flags/tagged-msg"))
		slack_tagged = FI_MSG;
	if (known_gap("flags/send-data"))
		slack_send = FI_REMOTE_CQ_DATA;
	if (peer)
		return peer_main(peer);
	if (list) {
		for (size_t i = 0; i < ncases; i++)
			printf("%-17s %d ranks  %s\n", cases[i].name,
			       cases[i].nranks, cases[i].desc);
		return 0;
	}
	for (const char *p = only; p && *p; p += strcspn(p, ",")) {
		size_t i, n;

		p += *p == ',';
		n = strcspn(p, ",");
		for (i = 0; i < ncases; i++)
			if (strlen(cases[i].name) == n &&
			    !strncmp(p, cases[i].name, n))
				break;
		if (i == ncases)
			usage();
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_start("fi_msg_test: libfabric FI_EP_RDM messaging");
	rc = get_info(&(struct tcase){ .name = "probe" }, &info);
	env = getenv("FI_PROVIDER");
	if (rc == -FI_ENODATA)
		tap_skip_all("provider %s not available%s", opt_prov,
			     env && strcmp(env, opt_prov) ?
			     " (FI_PROVIDER is set to another)" : "");
	if (rc)
		die("fi_getinfo(%s): %s", opt_prov, fi_strerror(-rc));
	tap_diag("provider %s (%s %u.%u), inject_size %zu, max_msg_size %zu, cq_data_size %zu, iov_limit %zu",
		 opt_prov, info->fabric_attr->prov_name,
		 FI_MAJOR(info->fabric_attr->prov_version),
		 FI_MINOR(info->fabric_attr->prov_version),
		 info->tx_attr->inject_size, info->ep_attr->max_msg_size,
		 info->domain_attr->cq_data_size, info->tx_attr->iov_limit);
	fi_freeinfo(info);
	for (const struct known_gap *g = known_gaps; g->prov; g++)
		if (!strncmp(opt_prov, g->prov, strlen(g->prov)))
			tap_diag("known gap %s: %s", g->what, g->why);
	for (size_t i = 0; i < ncases; i++)
		if (!only || selected(only, cases[i].name))
			run_case(&cases[i]);
	return tap_done();
}
