// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_info: what ibv_devinfo or opainfo show, for kfab's emulated HFI
 * units and EFA devices, and their knobs.
 *
 *   kfab_info [-b kmod|shm] [-u UNIT] [-v] [-j]
 *   kfab_info [-b kmod|shm] set DEVICE|-u UNIT KNOB=VALUE...
 *   kfab_info [-b kmod|shm] reset DEVICE|-u UNIT
 *
 * The HFI part, the shm EFA devices and the knobs go through libkfab
 * (ulib/dev/hfi_dev.h, efa_dev.h), so they work on either backend the
 * same way; the kmod backend's counters, module parameters and EFA
 * devices come from sysfs. Documentation/tools/kfab_info.rst.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ulib/dev/efa_dev.h"
#include "ulib/dev/hfi_dev.h"

/* kfab_hfi's num_units and kfab_efa's num_devices, and the shm backends' */
#define MAX_UNITS	8
#define MAX_COUNTERS	32
#define SYSFS_KFAB	"/sys/class/kfab"

static const char *prog = "kfab_info";
static bool verbose;

struct counter {
	char name[64];
	uint64_t value;
};

struct hfi_info {
	unsigned int unit;
	struct kfab_hfi_version version;
	struct kfab_hfi_status status;
	bool no_unit_file;		/* shm: knobs are the defaults */
	long long nfree;		/* -1: unknown */
	uint32_t rhq_entries;		/* 0: unknown */
	uint32_t eager_count;
	uint32_t eager_size;
	struct counter counters[MAX_COUNTERS];
	int ncounters;
	struct kfab_hfi_ctxt_desc *ctxts;
	int nctxts;
};

__attribute__((format(printf, 1, 2)))
static void err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* libkfab's messages say what failed: show them as ours. */
static void log_sink(enum kfab_log_level level, const char *msg)
{
	if (level <= KFAB_LOG_WARN || (verbose && level == KFAB_LOG_INFO))
		fprintf(stderr, "%s: %s\n", prog, msg);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-b kmod|shm] [-u UNIT] [-v] [-j]\n"
		"       %s [-b kmod|shm] set DEVICE|-u UNIT KNOB=VALUE...\n"
		"       %s [-b kmod|shm] reset DEVICE|-u UNIT\n"
		"\n"
		"  -b BACKEND  kmod (/dev/kfab_hfi<N>, /dev/kfab_efa<N>) or shm;\n"
		"              default kmod when such devices exist, else shm\n"
		"  -u UNIT     this HFI unit only (set, reset: as DEVICE hfiUNIT)\n"
		"  -v          verbose: every context field, EFA counters\n"
		"  -j          JSON\n"
		"\n"
		"DEVICE: hfi0..hfi7 (HFI units), efa0..efa7 (EFA devices)\n"
		"KNOB of an HFI unit: state=Active|Down, drop_ppm=0..1000000,\n"
		"      link_rate_mbps=0..1000000 (0: unlimited)\n"
		"KNOB of an EFA device: state=Active|Down,\n"
		"      device_rdma=none|read|write|\"read write\", rnr_retry=0..7,\n"
		"      rnr_inject_ppm=0..1000000, reorder_ppm=0..1000000,\n"
		"      link_rate_mbps=0..1000000 (0: unlimited)\n"
		"reset: every knob back to its default\n",
		prog, prog, prog);
}

/* ------------------------------------------------------------------ */
/* sysfs */

/* One attribute into @buf without its newline: 0 or -errno. */
static int read_attr(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		ret = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	if (!ret)
		buf[strcspn(buf, "\n")] = '\0';
	return ret;
}

static int read_u64(const char *path, uint64_t *v)
{
	char buf[64], *end;
	int ret = read_attr(path, buf, sizeof(buf));

	if (ret)
		return ret;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno || *end || end == buf ? -EPROTO : 0;
}

static int counter_cmp(const void *a, const void *b)
{
	return strcmp(((const struct counter *)a)->name,
		      ((const struct counter *)b)->name);
}

/* Every file of directory @dir as a counter, sorted by name. */
static int read_counters(const char *dir, struct counter *c, int max)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max) {
		if (de->d_name[0] == '.' ||
		    strlen(de->d_name) >= sizeof(c[n].name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (read_u64(path, &c[n].value))
			continue;
		snprintf(c[n].name, sizeof(c[n].name), "%s", de->d_name);
		n++;
	}
	closedir(d);
	qsort(c, (size_t)n, sizeof(*c), counter_cmp);
	return n;
}

static uint32_t hfi_param(const char *name)
{
	char path[128];
	uint64_t v;

	snprintf(path, sizeof(path), "/sys/module/kfab_hfi/parameters/%s",
		 name);
	return read_u64(path, &v) || v > UINT32_MAX ? 0 : (uint32_t)v;
}

/* ------------------------------------------------------------------ */
/* gathering */

static bool backend_is_kmod(enum kfab_backend b)
{
	return b == KFAB_BACKEND_KMOD;
}

/* The caller's contexts: sized by a first call, again if they grew. */
static int list_all(struct kfab_hfi_dev *dev, struct hfi_info *hi)
{
	uint32_t cap = 0, total = 0;
	int n;

	n = kfab_hfi_list_ctxts(dev, NULL, 0, &total);
	while (n >= 0 && total > cap) {
		struct kfab_hfi_ctxt_desc *d;

		cap = total;
		d = realloc(hi->ctxts, cap * sizeof(*d));
		if (!d) {
			err("hfi%u: out of memory for %u contexts", hi->unit,
			    cap);
			return -ENOMEM;
		}
		hi->ctxts = d;
		n = kfab_hfi_list_ctxts(dev, hi->ctxts, cap, &total);
	}
	if (n < 0)
		return n;
	hi->nctxts = n;
	return 0;
}

static void shm_summary(struct hfi_info *hi)
{
	static const char *const names[] = {
		"eager_full_drops", "injected_drops", "rhq_full_drops",
	};
	uint64_t sum[3] = { 0 };

	for (int i = 0; i < hi->nctxts; i++) {
		sum[0] += hi->ctxts[i].eager_full_drops;
		sum[1] += hi->ctxts[i].injected_drops;
		sum[2] += hi->ctxts[i].rhq_full_drops;
	}
	for (int i = 0; i < 3; i++) {
		snprintf(hi->counters[i].name, sizeof(hi->counters[i].name),
			 "%s", names[i]);
		hi->counters[i].value = sum[i];
	}
	hi->ncounters = 3;
	hi->nfree = (long long)hi->version.nctxts - hi->nctxts;
	if (hi->nfree < 0)
		hi->nfree = 0;
	if (hi->nctxts) {
		hi->rhq_entries = hi->ctxts[0].rhq_entries;
		hi->eager_count = hi->ctxts[0].eager_count;
		hi->eager_size = hi->ctxts[0].eager_size;
	}
}

static int kmod_summary(struct hfi_info *hi)
{
	char path[128];
	uint64_t v;
	int n;

	snprintf(path, sizeof(path), SYSFS_KFAB "/hfi%u/nfreectxts", hi->unit);
	hi->nfree = read_u64(path, &v) ? -1 : (long long)v;
	hi->rhq_entries = hfi_param("rhq_entries");
	hi->eager_count = hfi_param("eager_count");
	hi->eager_size = hfi_param("eager_size");
	snprintf(path, sizeof(path), SYSFS_KFAB "/hfi%u/counters", hi->unit);
	n = read_counters(path, hi->counters, MAX_COUNTERS);
	if (n < 0) {
		err("hfi%u: cannot read %s: %s", hi->unit, path, strerror(-n));
		return n;
	}
	hi->ncounters = n;
	return 0;
}

static int hfi_gather(enum kfab_backend b, unsigned int unit,
		      struct hfi_info *hi)
{
	struct kfab_hfi_dev *dev;
	int ret;

	memset(hi, 0, sizeof(*hi));
	hi->unit = unit;
	ret = kfab_hfi_open(b, unit, &dev);
	if (ret)
		return ret;
	hi->version = dev->version;
	ret = kfab_hfi_get_status(dev, &hi->status);
	if (ret >= 0) {
		hi->no_unit_file = ret == 1;
		ret = list_all(dev, hi);
	}
	kfab_hfi_close(dev);
	if (ret)
		return ret;
	if (backend_is_kmod(b))
		return kmod_summary(hi);
	shm_summary(hi);
	return 0;
}

/* ------------------------------------------------------------------ */
/* text */

static void heading(int indent, const char *name, const char *note)
{
	printf("%.*s%s:%s%s\n", indent, "\t\t\t", name, note ? " " : "",
	       note ? note : "");
}

__attribute__((format(printf, 3, 4)))
static void field(int indent, const char *name, const char *fmt, ...)
{
	char key[64];
	va_list ap;

	snprintf(key, sizeof(key), "%s:", name);
	printf("%.*s%-24s", indent, "\t\t\t", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static const char *state_name(uint32_t state)
{
	const char *w = kfab_state_word(state);

	return w ? w : "?";
}

static void flags_text(uint32_t flags, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s",
		 flags & KFAB_HFI_CTXT_OWNER_GONE ? "owner-gone," : "",
		 flags & KFAB_HFI_CTXT_ARMED ? "armed," : "",
		 flags ? "" : "-");
	if (flags)
		buf[strlen(buf) - 1] = '\0';
}

static void print_ctxts(const struct hfi_info *hi)
{
	field(1, "my contexts", "%d", hi->nctxts);
	if (!hi->nctxts)
		return;
	printf("\t\t%-5s %-7s %-8s %-7s %s", "ctxt", "jkey", "pid", "pkey",
	       verbose ? "sl " : "sl");
	if (verbose)
		printf(" %-16s %-5s %-5s %-9s %-8s %-10s %s", "flags",
		       "peers", "tids", "tid_pages", "rhq_full", "eager_full",
		       "injected");
	putchar('\n');
	for (int i = 0; i < hi->nctxts; i++) {
		const struct kfab_hfi_ctxt_desc *d = &hi->ctxts[i];
		char pid[16], fl[32];

		if (d->pid)
			snprintf(pid, sizeof(pid), "%d", d->pid);
		else
			snprintf(pid, sizeof(pid), "-");
		printf("\t\t%-5u %#-7x %-8s %#-7x %*u", d->ctxt, d->jkey, pid,
		       d->pkey, verbose ? -3 : 0, d->sl);
		if (verbose) {
			flags_text(d->flags, fl, sizeof(fl));
			printf(" %-16s %-5u %-5u %-9" PRIu64 " %-8" PRIu64
			       " %-10" PRIu64 " %" PRIu64, fl, d->peer_refs,
			       d->ntids, d->tid_pages, d->rhq_full_drops,
			       d->eager_full_drops, d->injected_drops);
		}
		putchar('\n');
	}
}

static void print_hfi(const struct hfi_info *hi, const char *backend)
{
	const struct kfab_hfi_status *st = &hi->status;

	printf("hfi_id:\thfi%u\n", hi->unit);
	field(1, "backend", "%s", backend);
	field(1, "unit", "%u", hi->unit);
	field(1, "lid", "%u (0x%04x)", hi->version.lid, hi->version.lid);
	field(1, "state", "%s (%u)", state_name(st->state), st->state);
	if (hi->version.numa_node < 0)
		field(1, "numa_node", "none");
	else
		field(1, "numa_node", "%d", hi->version.numa_node);
	field(1, "abi_version", "%u", hi->version.abi_version);
	if (hi->nfree < 0)
		field(1, "contexts", "%u", hi->version.nctxts);
	else
		field(1, "contexts", "%u (%lld free)", hi->version.nctxts,
		      hi->nfree);
	if (hi->rhq_entries) {
		field(1, "rhq", "%u entries of %zu bytes", hi->rhq_entries,
		      sizeof(struct kfab_hfi_rhq_entry));
		field(1, "eager", "%u buffers of %u bytes", hi->eager_count,
		      hi->eager_size);
	} else {
		field(1, "rhq", "per process (no context yet)");
		field(1, "eager", "per process (no context yet)");
	}
	if (st->link_rate_mbps)
		field(1, "link_rate_mbps", "%u", st->link_rate_mbps);
	else
		field(1, "link_rate_mbps", "0 (unlimited)");
	field(1, "drop_ppm", "%u", st->drop_ppm);
	if (hi->no_unit_file)
		field(1, "knobs", "defaults (no unit file yet)");
	heading(1, "counters", strcmp(backend, "shm") ? NULL :
		"(summed over the live contexts)");
	for (int i = 0; i < hi->ncounters; i++)
		field(2, hi->counters[i].name, "%" PRIu64,
		      hi->counters[i].value);
	print_ctxts(hi);
}

/* ------------------------------------------------------------------ */
/* JSON */

struct json {
	int depth;
	bool first[8];
};

static void j_indent(struct json *j, const char *key)
{
	if (j->depth) {
		printf("%s\n", j->first[j->depth] ? "" : ",");
		j->first[j->depth] = false;
	}
	printf("%*s", 2 * j->depth, "");
	if (key)
		printf("\"%s\": ", key);
}

static void j_open(struct json *j, const char *key, char c)
{
	j_indent(j, key);
	putchar(c);
	j->first[++j->depth] = true;
}

static void j_close(struct json *j, char c)
{
	bool empty = j->first[j->depth--];

	if (empty)
		putchar(c);
	else
		printf("\n%*s%c", 2 * j->depth, "", c);
}

static void j_u64(struct json *j, const char *key, uint64_t v)
{
	j_indent(j, key);
	printf("%" PRIu64, v);
}

static void j_s64(struct json *j, const char *key, int64_t v)
{
	j_indent(j, key);
	printf("%" PRId64, v);
}

static void j_null(struct json *j, const char *key)
{
	j_indent(j, key);
	printf("null");
}

static void j_bool(struct json *j, const char *key, bool v)
{
	j_indent(j, key);
	printf(v ? "true" : "false");
}

static void j_str(struct json *j, const char *key, const char *s)
{
	j_indent(j, key);
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* A sysfs value: a number when it is a decimal integer, else a string. */
static void j_attr(struct json *j, const char *key, const char *v)
{
	const char *p = v + (*v == '-');

	if (!*p || strspn(p, "0123456789") != strlen(p)) {
		j_str(j, key, v);
		return;
	}
	j_indent(j, key);
	printf("%s", v);
}

static void j_geom(struct json *j, const char *key, uint32_t v)
{
	if (v)
		j_u64(j, key, v);
	else
		j_null(j, key);
}

static void json_hfi(struct json *j, const struct hfi_info *hi, bool shm)
{
	const struct kfab_hfi_status *st = &hi->status;

	j_open(j, NULL, '{');
	j_u64(j, "unit", hi->unit);
	j_u64(j, "lid", hi->version.lid);
	j_str(j, "state", state_name(st->state));
	j_s64(j, "numa_node", hi->version.numa_node);
	j_u64(j, "abi_version", hi->version.abi_version);
	j_u64(j, "nctxts", hi->version.nctxts);
	if (hi->nfree < 0)
		j_null(j, "nfreectxts");
	else
		j_s64(j, "nfreectxts", hi->nfree);
	j_geom(j, "rhq_entries", hi->rhq_entries);
	j_u64(j, "rhq_entry_size", sizeof(struct kfab_hfi_rhq_entry));
	j_geom(j, "eager_count", hi->eager_count);
	j_geom(j, "eager_size", hi->eager_size);
	j_u64(j, "link_rate_mbps", st->link_rate_mbps);
	j_u64(j, "drop_ppm", st->drop_ppm);
	if (shm)
		j_bool(j, "unit_file", !hi->no_unit_file);
	j_open(j, "counters", '{');
	for (int i = 0; i < hi->ncounters; i++)
		j_u64(j, hi->counters[i].name, hi->counters[i].value);
	j_close(j, '}');
	j_open(j, "contexts", '[');
	for (int i = 0; i < hi->nctxts; i++) {
		const struct kfab_hfi_ctxt_desc *d = &hi->ctxts[i];

		j_open(j, NULL, '{');
		j_u64(j, "ctxt", d->ctxt);
		j_u64(j, "jkey", d->jkey);
		j_s64(j, "pid", d->pid);
		j_u64(j, "pkey", d->pkey);
		j_u64(j, "sl", d->sl);
		j_open(j, "flags", '[');
		if (d->flags & KFAB_HFI_CTXT_OWNER_GONE)
			j_str(j, NULL, "owner_gone");
		if (d->flags & KFAB_HFI_CTXT_ARMED)
			j_str(j, NULL, "armed");
		j_close(j, ']');
		j_u64(j, "peer_refs", d->peer_refs);
		j_u64(j, "rhq_entries", d->rhq_entries);
		j_u64(j, "eager_count", d->eager_count);
		j_u64(j, "eager_size", d->eager_size);
		j_u64(j, "ntids", d->ntids);
		j_u64(j, "tid_pages", d->tid_pages);
		j_u64(j, "rhq_full_drops", d->rhq_full_drops);
		j_u64(j, "eager_full_drops", d->eager_full_drops);
		j_u64(j, "injected_drops", d->injected_drops);
		j_close(j, '}');
	}
	j_close(j, ']');
	j_close(j, '}');
}

/* ------------------------------------------------------------------ */
/* EFA devices: /sys/class/kfab/efa<N>/ (kmod), the device layer (shm) */

static const char *const efa_attrs[] = {
	"gid", "state", "numa_node", "abi_version", "mtu", "rx_entries",
	"max_qps", "nfreeqps", "device_rdma", "rnr_retry", "rnr_inject_ppm",
	"reorder_ppm", "link_rate_mbps",
};

#define NEFA_ATTRS	(sizeof(efa_attrs) / sizeof(efa_attrs[0]))

static bool efa_present(unsigned int n)
{
	char path[64];

	snprintf(path, sizeof(path), SYSFS_KFAB "/efa%u", n);
	return !access(path, F_OK);
}

/* The attributes of efa<N>, "?" for one that cannot be read. */
static void efa_read(unsigned int n, char val[][64],
		     struct counter *c, int *nc)
{
	char path[128];

	for (size_t i = 0; i < NEFA_ATTRS; i++) {
		snprintf(path, sizeof(path), SYSFS_KFAB "/efa%u/%s", n,
			 efa_attrs[i]);
		if (read_attr(path, val[i], 64))
			snprintf(val[i], 64, "?");
	}
	snprintf(path, sizeof(path), SYSFS_KFAB "/efa%u/counters", n);
	*nc = read_counters(path, c, MAX_COUNTERS);
	if (*nc < 0)
		*nc = 0;
}

/* Attribute @name of the shm listing, as sysfs would show it. */
__attribute__((format(printf, 3, 4)))
static void efa_put(char val[][64], const char *name, const char *fmt, ...)
{
	va_list ap;

	for (size_t i = 0; i < NEFA_ATTRS; i++) {
		if (strcmp(efa_attrs[i], name))
			continue;
		va_start(ap, fmt);
		vsnprintf(val[i], 64, fmt, ap);
		va_end(ap);
	}
}

/*
 * shm: the attributes of efa<N> through a second open of the device,
 * "?" for nfreeqps, which the shm backend does not count. 0 or -errno.
 */
static int efa_shm_read(unsigned int n, char val[][64])
{
	const struct kfab_efa_device_info *info;
	struct kfab_efa_status st;
	struct kfab_efa_dev *dev;
	char gid[40] = "";
	const char *rdma;
	int ret;

	ret = kfab_efa_open(KFAB_BACKEND_SHM, n, &dev);
	if (ret)
		return ret;
	ret = kfab_efa_get_status(dev, &st);
	info = &dev->info;
	/* the kernel's %pI6: eight groups of four hex digits */
	for (int i = 0; i < KFAB_EFA_GID_LEN; i += 2)
		snprintf(gid + strlen(gid), sizeof(gid) - strlen(gid),
			 "%s%02x%02x", i ? ":" : "", info->gid[i],
			 info->gid[i + 1]);
	rdma = kfab_efa_knob_word(KFAB_EFA_KNOB_DEVICE_RDMA, st.device_rdma);
	efa_put(val, "gid", "%s", gid);
	efa_put(val, "state", "%s", state_name(st.state));
	efa_put(val, "numa_node", "%d", info->numa_node);
	efa_put(val, "abi_version", "%u", info->abi_version);
	efa_put(val, "mtu", "%u", st.mtu);
	efa_put(val, "rx_entries", "%u", info->rx_entries);
	efa_put(val, "max_qps", "%u", info->max_qps);
	efa_put(val, "nfreeqps", "?");
	efa_put(val, "device_rdma", "%s", rdma ? rdma : "?");
	efa_put(val, "rnr_retry", "%u", st.rnr_retry);
	efa_put(val, "rnr_inject_ppm", "%u", st.rnr_inject_ppm);
	efa_put(val, "reorder_ppm", "%u", st.reorder_ppm);
	efa_put(val, "link_rate_mbps", "%u", st.link_rate_mbps);
	kfab_efa_close(dev);
	return ret;
}

/* The EFA devices of @b: 0, or 1 after saying which could not be read. */
static int efa_all(enum kfab_backend b, struct json *j)
{
	struct counter c[MAX_COUNTERS];
	char val[NEFA_ATTRS][64];
	uint32_t nshm = 0;
	int nc = 0, ret = 0;

	if (!backend_is_kmod(b) && kfab_efa_shm_devices(&nshm))
		ret = 1;
	if (j)
		j_open(j, "efa", '[');
	for (unsigned int n = 0; n < MAX_UNITS; n++) {
		if (backend_is_kmod(b)) {
			if (!efa_present(n))
				continue;
			efa_read(n, val, c, &nc);
		} else if (n >= nshm) {
			break;
		} else if (efa_shm_read(n, val)) {
			err("efa%u: cannot read the device (above)", n);
			ret = 1;
			continue;
		}
		if (j) {
			j_open(j, NULL, '{');
			j_u64(j, "device", n);
			for (size_t i = 0; i < NEFA_ATTRS; i++)
				j_attr(j, efa_attrs[i], val[i]);
			if (backend_is_kmod(b)) {
				j_open(j, "counters", '{');
				for (int i = 0; i < nc; i++)
					j_u64(j, c[i].name, c[i].value);
				j_close(j, '}');
			}
			j_close(j, '}');
			continue;
		}
		printf("\nefa_id:\tefa%u\n", n);
		for (size_t i = 0; i < NEFA_ATTRS; i++)
			field(1, efa_attrs[i], "%s", val[i]);
		if (!verbose || !backend_is_kmod(b))
			continue;
		heading(1, "counters", NULL);
		for (int i = 0; i < nc; i++)
			field(2, c[i].name, "%" PRIu64, c[i].value);
	}
	if (j)
		j_close(j, ']');
	return ret;
}

/* ------------------------------------------------------------------ */
/* commands */

static int units_of(enum kfab_backend b, int unit, unsigned int *units)
{
	int n = 0;

	if (unit >= 0) {
		units[0] = (unsigned int)unit;
		return 1;
	}
	for (unsigned int u = 0; u < MAX_UNITS; u++) {
		struct hfi_info hi;

		if (backend_is_kmod(b)) {
			if (kfab_hfi_kmod_present(u))
				units[n++] = u;
			continue;
		}
		/* shm: the units in use or configured */
		if (!hfi_gather(b, u, &hi) && (!hi.no_unit_file || hi.nctxts))
			units[n++] = u;
		free(hi.ctxts);
	}
	if (!n && !backend_is_kmod(b))
		units[n++] = 0;
	return n;
}

static int cmd_info(enum kfab_backend b, int unit, bool json)
{
	const char *backend = backend_is_kmod(b) ? "kmod" : "shm";
	unsigned int units[MAX_UNITS];
	struct json j = { 0 };
	int n, ret = 0;

	n = units_of(b, unit, units);
	if (json) {
		j_open(&j, NULL, '{');
		j_str(&j, "backend", backend);
		j_open(&j, "hfi", '[');
	}
	for (int i = 0; i < n; i++) {
		struct hfi_info hi;

		if (hfi_gather(b, units[i], &hi)) {
			err("hfi%u: cannot read the unit (above)", units[i]);
			ret = 1;
		} else if (json) {
			json_hfi(&j, &hi, !backend_is_kmod(b));
		} else {
			if (i)
				putchar('\n');
			print_hfi(&hi, backend);
		}
		free(hi.ctxts);
	}
	if (json)
		j_close(&j, ']');
	if (unit < 0 && efa_all(b, json ? &j : NULL))
		ret = 1;
	if (json) {
		j_close(&j, '}');
		putchar('\n');
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* set and reset: the knobs of an HFI unit or an EFA device */

/* A kind of device as set and reset see it, through its libkfab layer. */
struct dev_kind {
	const char *kind;	/* its devices are <kind>0, <kind>1, ... */
	const char *label;	/* "HFI": "HFI units" */
	const char *what;	/* "unit" */
	const char *module;	/* the kernel module that makes them */
	int nknobs;
	const char *(*name)(int knob);
	uint32_t (*max)(int knob);
	uint32_t (*dflt)(int knob);
	const char *(*word)(int knob, uint32_t value);
	bool (*kmod_present)(unsigned int n);
	int (*open)(enum kfab_backend b, unsigned int n, void **dev);
	int (*set)(void *dev, int knob, uint32_t value);
	int (*reset)(void *dev);
	void (*close)(void *dev);
};

static const char *hfi_name(int k)
{
	return kfab_hfi_knob_name((enum kfab_hfi_knob)k);
}

static uint32_t hfi_max(int k)
{
	return kfab_hfi_knob_max((enum kfab_hfi_knob)k);
}

static uint32_t hfi_dflt(int k)
{
	return kfab_hfi_knob_default((enum kfab_hfi_knob)k);
}

static const char *hfi_word(int k, uint32_t v)
{
	return kfab_hfi_knob_word((enum kfab_hfi_knob)k, v);
}

static bool hfi_present(unsigned int n)
{
	return kfab_hfi_kmod_present(n);
}

static int hfi_open(enum kfab_backend b, unsigned int n, void **dev)
{
	return kfab_hfi_open(b, n, (struct kfab_hfi_dev **)dev);
}

static int hfi_set(void *dev, int k, uint32_t v)
{
	return kfab_hfi_set_knob(dev, (enum kfab_hfi_knob)k, v);
}

static int hfi_reset(void *dev)
{
	return kfab_hfi_reset_knobs(dev);
}

static void hfi_close(void *dev)
{
	kfab_hfi_close(dev);
}

static const char *efa_name(int k)
{
	return kfab_efa_knob_name((enum kfab_efa_knob)k);
}

static uint32_t efa_max(int k)
{
	return kfab_efa_knob_max((enum kfab_efa_knob)k);
}

static uint32_t efa_dflt(int k)
{
	return kfab_efa_knob_default((enum kfab_efa_knob)k);
}

static const char *efa_word(int k, uint32_t v)
{
	return kfab_efa_knob_word((enum kfab_efa_knob)k, v);
}

static int efa_open(enum kfab_backend b, unsigned int n, void **dev)
{
	return kfab_efa_open(b, n, (struct kfab_efa_dev **)dev);
}

static int efa_set(void *dev, int k, uint32_t v)
{
	return kfab_efa_set_knob(dev, (enum kfab_efa_knob)k, v);
}

static int efa_reset(void *dev)
{
	return kfab_efa_reset_knobs(dev);
}

static void efa_close(void *dev)
{
	kfab_efa_close(dev);
}

static const struct dev_kind kinds[] = {
	{
		.kind = "hfi", .label = "HFI", .what = "unit",
		.module = "kfab_hfi", .nknobs = KFAB_HFI_NKNOBS,
		.name = hfi_name, .max = hfi_max, .dflt = hfi_dflt,
		.word = hfi_word, .kmod_present = hfi_present,
		.open = hfi_open, .set = hfi_set, .reset = hfi_reset,
		.close = hfi_close,
	},
	{
		.kind = "efa", .label = "EFA", .what = "device",
		.module = "kfab_efa", .nknobs = KFAB_EFA_NKNOBS,
		.name = efa_name, .max = efa_max, .dflt = efa_dflt,
		.word = efa_word, .kmod_present = kfab_efa_kmod_present,
		.open = efa_open, .set = efa_set, .reset = efa_reset,
		.close = efa_close,
	},
};

#define NKINDS		(sizeof(kinds) / sizeof(kinds[0]))
#define HFI_KIND	(&kinds[0])

/* One device: hfi<N> or efa<N>. */
struct target {
	const struct dev_kind *k;
	unsigned int n;
	char name[16];
};

/* Appends @item to the list "a, b or c" of @n items in @buf. */
static void list_add(char *buf, size_t len, int i, int n, const char *item)
{
	size_t at = strlen(buf);
	bool quote = strchr(item, ' ') != NULL;

	snprintf(buf + at, len - at, "%s%s%s%s", !i ? "" :
		 i == n - 1 ? " or " : ", ", quote ? "\"" : "", item,
		 quote ? "\"" : "");
}

/* The knobs of @k: "state, drop_ppm or link_rate_mbps". */
static const char *knob_list(const struct dev_kind *k, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < k->nknobs; i++)
		list_add(buf, len, i, k->nknobs, k->name(i));
	return buf;
}

/* "hfi<N>" or "efa<N>", N one digit in 0..MAX_UNITS - 1: true. */
static bool device_parse(const char *s, struct target *t)
{
	for (size_t i = 0; i < NKINDS; i++) {
		const char *d = s + strlen(kinds[i].kind);

		if (strncmp(s, kinds[i].kind, strlen(kinds[i].kind)) ||
		    strlen(d) != 1 || d[0] < '0' || d[0] - '0' >= MAX_UNITS)
			continue;
		t->k = &kinds[i];
		t->n = (unsigned int)(d[0] - '0');
		snprintf(t->name, sizeof(t->name), "%s%u", t->k->kind, t->n);
		return true;
	}
	return false;
}

struct knob_set {
	int knob;
	uint32_t value;
};

/* @val of knob @ks->knob of @t: a word of the knob's, or a decimal. */
static int value_parse(const struct target *t, const char *val,
		       struct knob_set *ks)
{
	const struct dev_kind *k = t->k;
	uint32_t max = k->max(ks->knob);
	unsigned long long v;
	char words[128] = "";
	char *end;
	int nwords = 0;

	for (uint32_t w = 0; k->word(ks->knob, w); w++) {
		if (!strcmp(val, k->word(ks->knob, w))) {
			ks->value = w;
			return 0;
		}
		nwords++;
	}
	errno = 0;
	v = strtoull(val, &end, 10);
	if (*val >= '0' && *val <= '9' && !*end && !errno && v <= max) {
		ks->value = (uint32_t)v;
		return 0;
	}
	if (!nwords) {
		err("%s: %s=%s: must be an integer in 0..%u", t->name,
		    k->name(ks->knob), val, max);
		return 1;
	}
	for (int w = 0; w < nwords; w++)
		list_add(words, sizeof(words), w, nwords,
			 k->word(ks->knob, (uint32_t)w));
	err("%s: %s=%s: must be %s (or 0..%u)", t->name, k->name(ks->knob),
	    val, words, max);
	return 1;
}

/* "KNOB=VALUE" of @t into @ks: 0, or 1 after saying what is wrong. */
static int knob_parse(const struct target *t, char *arg, struct knob_set *ks)
{
	const struct dev_kind *k = t->k;
	char *eq = strchr(arg, '=');
	char list[128];

	if (!eq || eq == arg) {
		err("%s: \"%s\": expected KNOB=VALUE, e.g. link_rate_mbps=10000",
		    t->name, arg);
		return 1;
	}
	*eq = '\0';
	for (ks->knob = 0; ks->knob < k->nknobs; ks->knob++)
		if (!strcmp(arg, k->name(ks->knob)))
			return value_parse(t, eq + 1, ks);
	for (size_t i = 0; i < NKINDS; i++) {
		if (&kinds[i] == k)
			continue;
		for (int o = 0; o < kinds[i].nknobs; o++) {
			if (strcmp(arg, kinds[i].name(o)))
				continue;
			err("%s: %s is a knob of %s %ss, not of %s %ss: give %s",
			    t->name, arg, kinds[i].label, kinds[i].what,
			    k->label, k->what, knob_list(k, list, sizeof(list)));
			return 1;
		}
	}
	err("%s: unknown knob \"%s\": give %s", t->name, arg,
	    knob_list(k, list, sizeof(list)));
	return 1;
}

/* "<dev>: <knob> = <value>", the value as a word where it has one */
static void knob_print(const struct target *t, int knob, uint32_t value,
		       const char *sep)
{
	const char *w = t->k->word(knob, value);

	if (w)
		printf("%s = %s%s", t->k->name(knob), w, sep);
	else
		printf("%s = %u%s", t->k->name(knob), value, sep);
}

/*
 * The device of set or reset: -u UNIT (an HFI unit) or the first of
 * @argv, taken off. 0, or the exit status after saying what is wrong.
 */
static int target_of(const char *cmd, int unit, int *argc, char ***argv,
		     struct target *t)
{
	if (unit >= 0) {
		if (*argc && device_parse((*argv)[0], t)) {
			err("%s: %s and -u %d: give the device or -u UNIT, not both",
			    cmd, (*argv)[0], unit);
			return 2;
		}
		t->k = HFI_KIND;
		t->n = (unsigned int)unit;
		snprintf(t->name, sizeof(t->name), "hfi%d", unit);
		return 0;
	}
	if (!*argc || strchr((*argv)[0], '=')) {
		err("%s: which device? give DEVICE (hfi0, efa1, ...) or -u UNIT first",
		    cmd);
		return 2;
	}
	if (!device_parse((*argv)[0], t)) {
		err("%s: \"%s\" is not a device name: give hfi<N> (an HFI unit) or efa<N> (an EFA device), N in 0..%d",
		    cmd, (*argv)[0], MAX_UNITS - 1);
		return 1;
	}
	(*argc)--;
	(*argv)++;
	return 0;
}

static int cmd_set(enum kfab_backend b, const struct target *t, int argc,
		   char **argv)
{
	const struct dev_kind *k = t->k;
	struct knob_set *ks;
	void *dev = NULL;
	char list[128];
	int ret = 0;

	if (!argc) {
		err("set: nothing to set: give KNOB=VALUE (%s)",
		    knob_list(k, list, sizeof(list)));
		return 2;
	}
	ks = calloc((size_t)argc, sizeof(*ks));
	if (!ks) {
		err("set: out of memory");
		return 1;
	}
	/* every pair is checked before anything changes */
	for (int i = 0; i < argc && !ret; i++)
		ret = knob_parse(t, argv[i], &ks[i]);
	if (!ret && k->open(b, t->n, &dev)) {
		err("%s: cannot open the %s (above)", t->name, k->what);
		ret = 1;
	}
	for (int i = 0; i < argc && !ret; i++) {
		if (k->set(dev, ks[i].knob, ks[i].value)) {
			err("%s: %s not set (above)", t->name,
			    k->name(ks[i].knob));
			ret = 1;
		} else {
			printf("%s: ", t->name);
			knob_print(t, ks[i].knob, ks[i].value, "\n");
		}
	}
	if (dev)
		k->close(dev);
	free(ks);
	return ret;
}

static int cmd_reset(enum kfab_backend b, const struct target *t, int argc)
{
	const struct dev_kind *k = t->k;
	void *dev;
	int ret;

	if (argc) {
		err("reset: nothing after the device: reset sets every knob of %s to its default",
		    t->name);
		return 2;
	}
	if (k->open(b, t->n, &dev)) {
		err("%s: cannot open the %s (above)", t->name, k->what);
		return 1;
	}
	ret = k->reset(dev);
	k->close(dev);
	if (ret) {
		err("%s: knobs not reset (above)", t->name);
		return 1;
	}
	printf("%s: ", t->name);
	for (int i = 0; i < k->nknobs; i++)
		knob_print(t, i, k->dflt(i), i < k->nknobs - 1 ? ", " : "\n");
	return 0;
}

/* ------------------------------------------------------------------ */

struct opts {
	int backend;		/* -1: not given */
	int unit;		/* -1: every unit */
	bool json;
};

/* Options may come before and after the subcommand. 0, or exit status. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	char *end;
	int c;

	optind = 1;
	while ((c = getopt(argc, argv, "+b:u:vjh")) != -1) {
		switch (c) {
		case 'b':
			if (!strcmp(optarg, "kmod")) {
				o->backend = KFAB_BACKEND_KMOD;
			} else if (!strcmp(optarg, "shm")) {
				o->backend = KFAB_BACKEND_SHM;
			} else {
				err("-b %s: the backend is kmod or shm", optarg);
				return 2;
			}
			break;
		case 'u':
			errno = 0;
			o->unit = (int)strtol(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || errno ||
			    o->unit >= MAX_UNITS) {
				err("-u %s: a unit is a number in 0..%d", optarg,
				    MAX_UNITS - 1);
				return 2;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	return 0;
}

static bool kmod_any(const struct dev_kind *k)
{
	for (unsigned int n = 0; n < MAX_UNITS; n++)
		if (k->kmod_present(n))
			return true;
	return false;
}

/* The backend to use, and whether device @n of @k (-1: any) exists in it. */
static int pick_backend(struct opts *o, const struct dev_kind *k, int n)
{
	if (o->backend < 0)
		o->backend = kmod_any(k) ? KFAB_BACKEND_KMOD :
					   KFAB_BACKEND_SHM;
	if (o->backend != KFAB_BACKEND_KMOD)
		return 0;
	if (!kmod_any(k)) {
		err("no kmod %s %ss: /dev/kfab_%s0 does not exist (load %s, or use -b shm)",
		    k->label, k->what, k->kind, k->module);
		return 1;
	}
	if (n >= 0 && !k->kmod_present((unsigned int)n)) {
		char have[3 * MAX_UNITS] = "";

		for (unsigned int u = 0; u < MAX_UNITS; u++)
			if (k->kmod_present(u))
				snprintf(have + strlen(have),
					 sizeof(have) - strlen(have), " %u", u);
		err("%s%d: no such %s: /dev/kfab_%s%d does not exist (%ss:%s)",
		    k->kind, n, k->what, k->kind, n, k->what, have);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .backend = -1, .unit = -1 };
	const char *cmd = "info";
	struct target t;
	int ret;

	kfab_log_set(log_sink);
	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret;
	argc -= optind;
	argv += optind;
	if (argc && (!strcmp(argv[0], "set") || !strcmp(argv[0], "reset"))) {
		cmd = argv[0];
		ret = parse_opts(argc, argv, &o);
		if (ret)
			return ret;
		argc -= optind;
		argv += optind;
	} else if (argc) {
		err("unknown command \"%s\": set, reset, or none for the report",
		    argv[0]);
		return 2;
	}
	if (!strcmp(cmd, "info")) {
		ret = pick_backend(&o, HFI_KIND, o.unit);
		return ret ? ret : cmd_info(o.backend, o.unit, o.json);
	}
	ret = target_of(cmd, o.unit, &argc, &argv, &t);
	if (!ret)
		ret = pick_backend(&o, t.k, (int)t.n);
	if (ret)
		return ret;
	if (!strcmp(cmd, "set"))
		return cmd_set(o.backend, &t, argc, argv);
	return cmd_reset(o.backend, &t, argc);
}
