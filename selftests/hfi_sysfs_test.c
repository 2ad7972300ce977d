// SPDX-License-Identifier: GPL-2.0
/* kfab_hfi sysfs: attribute formats and modes, module parameters, writes. */

#include "hfi_util.h"

struct hfi_attr {
	const char *name;
	mode_t mode;
};

static const struct hfi_attr hfi_attrs[] = {
	{ "unit", 0444 },
	{ "lid", 0444 },
	{ "numa_node", 0444 },
	{ "state", 0644 },
	{ "nctxts", 0444 },
	{ "nfreectxts", 0444 },
	{ "drop_ppm", 0644 },
	{ "link_rate_mbps", 0644 },
	{ "abi_version", 0444 },
	{ "counters/ctxts_assigned", 0444 },
	{ "counters/tid_pages_pinned", 0444 },
	{ "counters/tid_regions", 0444 },
	{ "counters/sdma_requests", 0444 },
	{ "counters/sdma_bytes", 0444 },
	{ "counters/notifies", 0444 },
	{ "counters/rhq_full_drops", 0444 },
	{ "counters/eager_full_drops", 0444 },
	{ "counters/injected_drops", 0444 },
};

/* name, smallest and largest valid value; 0 == 0 means "power of two" */
struct hfi_param {
	const char *name;
	uint64_t min, max;
	bool pow2;
};

static const struct hfi_param hfi_params[] = {
	{ "num_units", 1, 8, false },
	{ "ctxts_per_unit", 1, 160, false },
	{ "rhq_entries", 64, 16384, true },
	{ "eager_count", 16, 4096, true },
	{ "eager_size", 4096, 65536, true },
	{ "pin_limit_mb", 0, 1048576, false },
};

FIXTURE(sysfs) {
	unsigned int unit;
	struct kfab_knobs knobs;
};

FIXTURE_VARIANT(sysfs) {
	unsigned int unit;
};

FIXTURE_VARIANT_ADD(sysfs, unit0) {
	.unit = 0,
};

FIXTURE_VARIANT_ADD(sysfs, unit1) {
	.unit = 1,
};

FIXTURE_SETUP(sysfs)
{
	self->unit = variant->unit;
	if (self->unit >= hfi_num_units())
		return;
	hfi_knobs_save(&self->knobs, self->unit);
	ASSERT_TRUE(self->knobs.saved);
}

FIXTURE_TEARDOWN(sysfs)
{
	hfi_knobs_restore(&self->knobs, self->unit);
}

#define NEED_UNIT() do {						\
	if (self->unit >= hfi_num_units())				\
		SKIP(return, "num_units=%u: no unit %u",		\
		     hfi_num_units(), self->unit);			\
} while (0)

/* The n-th online NUMA node, cycling, as the default unit_numa does. */
static int nth_online_node(unsigned int n)
{
	int nodes[1024], count = 0;
	char buf[4096], *s;

	if (hfi_read_file("/sys/devices/system/node/online", buf,
			  sizeof(buf)) <= 0)
		return 0;	/* no NUMA sysfs: node 0 */
	for (s = buf; *s && *s != '\n';) {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long i = a; i <= b && count < 1024; i++)
			nodes[count++] = (int)i;
		s = *end == ',' ? end + 1 : end;
	}
	return count ? nodes[n % (unsigned int)count] : 0;
}

TEST_F(sysfs, attributes_format)
{
	char buf[256];
	uint64_t v, nctxts, param;
	int64_t node;

	NEED_UNIT();
	for (size_t i = 0; i < ARRAY_SIZE(hfi_attrs); i++) {
		char path[256];
		struct stat st;
		int n;

		hfi_attr_path(path, sizeof(path), self->unit, hfi_attrs[i].name);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path,
						     strerror(errno));
		EXPECT_EQ(hfi_attrs[i].mode, st.st_mode & 07777)
			TH_LOG("%s mode %o", path, st.st_mode & 07777);
		n = hfi_read_file(path, buf, sizeof(buf));
		ASSERT_LT(0, n) TH_LOG("%s: %s", path, strerror(-n));
		if (!strcmp(hfi_attrs[i].name, "state")) {
			EXPECT_TRUE(!strcmp(buf, "Active\n") ||
				    !strcmp(buf, "Down\n"))
				TH_LOG("state reads '%s'", buf);
		} else if (!strcmp(hfi_attrs[i].name, "numa_node")) {
			EXPECT_EQ(0, hfi_parse_s64(buf, &node))
				TH_LOG("numa_node reads '%s'", buf);
		} else {
			EXPECT_EQ(0, hfi_parse_u64(buf, &v))
				TH_LOG("%s reads '%s'", hfi_attrs[i].name, buf);
		}
	}

	EXPECT_EQ(self->unit, hfi_sysfs_get(self->unit, "unit"));
	EXPECT_EQ(self->unit + 1, hfi_sysfs_get(self->unit, "lid"));
	EXPECT_EQ((uint64_t)KFAB_ABI_VERSION, hfi_sysfs_get(self->unit, "abi_version"));
	ASSERT_EQ(0, hfi_param_u64("ctxts_per_unit", &param));
	nctxts = hfi_sysfs_get(self->unit, "nctxts");
	EXPECT_EQ(param, nctxts);
	EXPECT_GE(nctxts, hfi_sysfs_get(self->unit, "nfreectxts"));
	EXPECT_GE(1000000U, hfi_sysfs_get(self->unit, "drop_ppm"));
	EXPECT_GE(1000000U, hfi_sysfs_get(self->unit, "link_rate_mbps"));
	/* gauges cannot exceed what was ever assigned/pinned */
	EXPECT_GE(hfi_sysfs_get(self->unit, "counters/tid_pages_pinned"),
		  hfi_sysfs_get(self->unit, "counters/tid_regions"));
	EXPECT_GE(hfi_sysfs_get(self->unit, "counters/sdma_bytes"),
		  hfi_sysfs_get(self->unit, "counters/sdma_requests") ? 1U : 0U);
}

TEST_F(sysfs, numa_node)
{
	char buf[256], path[64];
	int64_t node, want = -2;
	unsigned int idx = 0;

	NEED_UNIT();
	ASSERT_LT(0, hfi_sysfs_read(self->unit, "numa_node", buf, sizeof(buf)));
	ASSERT_EQ(0, hfi_parse_s64(buf, &node));
	/* unit_numa as given at load, one value per unit; else the default */
	snprintf(path, sizeof(path), HFI_PARAM_FMT, "unit_numa");
	if (hfi_read_file(path, buf, sizeof(buf)) > 0) {
		for (char *s = buf; *s && *s != '\n'; idx++) {
			char *end;
			long v = strtol(s, &end, 10);

			if (end == s)
				break;
			if (idx == self->unit)
				want = v;
			s = *end == ',' ? end + 1 : end;
		}
	}
	if (want == -2)
		want = nth_online_node(self->unit);
	EXPECT_EQ(want, node);
	if (node >= 0) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%lld",
			 (long long)node);
		EXPECT_EQ(0, access(path, F_OK)) TH_LOG("%s", path);
	}
}

TEST_F(sysfs, devices_and_lids)
{
	unsigned int n = hfi_num_units();
	struct stat st;

	NEED_UNIT();
	ASSERT_EQ(0, stat("/dev/kfab_hfi0", &st));
	ASSERT_EQ(0, stat("/dev/kfab_hfi1", &st))
		TH_LOG("num_units=%u: /dev/kfab_hfi1 missing", n);
	hfi_check_devices(_metadata, "hfi", n);
	for (unsigned int u = 0; u < n; u++) {
		EXPECT_EQ(u + 1, hfi_sysfs_get(u, "lid"));
		EXPECT_EQ(u, hfi_sysfs_get(u, "unit"));
	}
}

TEST_F(sysfs, module_params)
{
	NEED_UNIT();
	for (size_t i = 0; i < ARRAY_SIZE(hfi_params); i++) {
		const struct hfi_param *p = &hfi_params[i];
		char path[256];
		struct stat st;
		uint64_t v;

		snprintf(path, sizeof(path), HFI_PARAM_FMT, p->name);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s", path);
		EXPECT_EQ(0444U, st.st_mode & 07777) TH_LOG("%s mode %o", path,
							    st.st_mode & 07777);
		ASSERT_EQ(0, hfi_param_u64(p->name, &v)) TH_LOG("%s", path);
		EXPECT_LE(p->min, v) TH_LOG("%s", p->name);
		EXPECT_GE(p->max, v) TH_LOG("%s", p->name);
		if (p->pow2) {
			EXPECT_EQ(0U, v & (v - 1)) TH_LOG("%s=%llu", p->name,
							  (unsigned long long)v);
		}
		/* read-only even for root */
		EXPECT_EQ(-EACCES, hfi_write_file(path, "1", 1));
	}
}

TEST_F(sysfs, readonly_refuse_writes)
{
	NEED_UNIT();
	for (size_t i = 0; i < ARRAY_SIZE(hfi_attrs); i++) {
		char path[256], before[64], after[64];

		if (hfi_attrs[i].mode & 0200)
			continue;
		hfi_attr_path(path, sizeof(path), self->unit, hfi_attrs[i].name);
		ASSERT_LT(0, hfi_read_file(path, before, sizeof(before)));
		EXPECT_EQ(-EACCES, hfi_write_file(path, "1\n", 2))
			TH_LOG("%s accepted a write", path);
		ASSERT_LT(0, hfi_read_file(path, after, sizeof(after)));
		if (strncmp(hfi_attrs[i].name, "counters/", 9) &&
		    strcmp(hfi_attrs[i].name, "nfreectxts"))
			EXPECT_STREQ(before, after);
	}
}

/* Write @val: expect @err (0 or -errno) and then @want read back. */
static void write_check(struct __test_metadata *_metadata, unsigned int unit,
			const char *attr, const char *val, int err,
			const char *want)
{
	char buf[64];

	EXPECT_EQ(err, hfi_sysfs_write(unit, attr, val))
		TH_LOG("write '%s' to %s", val, attr);
	ASSERT_LT(0, hfi_sysfs_read(unit, attr, buf, sizeof(buf)));
	EXPECT_STREQ(want, buf) TH_LOG("after writing '%s' to %s", val, attr);
}

TEST_F(sysfs, state_writes)
{
	struct kfab_hfi_version v;
	int fd;

	NEED_UNIT();
	KFAB_NEED_ROOT();
	write_check(_metadata, self->unit, "state", "Active", 0, "Active\n");
	write_check(_metadata, self->unit, "state", "Down\n", 0, "Down\n");
	/* mirrored into GET_VERSION */
	fd = hfi_open(self->unit);
	ASSERT_LE(0, fd);
	memset(&v, 0, sizeof(v));
	ASSERT_EQ(0, hfi_ioctl(fd, KFAB_HFI_IOC_GET_VERSION, &v));
	EXPECT_EQ((__u32)KFAB_HFI_STATE_DOWN, v.state);
	write_check(_metadata, self->unit, "state", "Active\n", 0, "Active\n");
	ASSERT_EQ(0, hfi_ioctl(fd, KFAB_HFI_IOC_GET_VERSION, &v));
	EXPECT_EQ((__u32)KFAB_HFI_STATE_ACTIVE, v.state);
	close(fd);
	write_check(_metadata, self->unit, "state", "Down", 0, "Down\n");

	/* exact words only; each failure leaves "Down" */
	write_check(_metadata, self->unit, "state", "active", -EINVAL, "Down\n");
	write_check(_metadata, self->unit, "state", "ACTIVE", -EINVAL, "Down\n");
	write_check(_metadata, self->unit, "state", "Up", -EINVAL, "Down\n");
	write_check(_metadata, self->unit, "state", "\n", -EINVAL, "Down\n");
	write_check(_metadata, self->unit, "state", "Activ", -EINVAL, "Down\n");
	write_check(_metadata, self->unit, "state", "Active2", -EINVAL,
		    "Down\n");
	write_check(_metadata, self->unit, "state", "Active\n\n", -EINVAL,
		    "Down\n");
	write_check(_metadata, self->unit, "state", " Active", -EINVAL,
		    "Down\n");
	write_check(_metadata, self->unit, "state", "1", -EINVAL, "Down\n");
	/* a zero-length write never reaches the attribute (sysfs returns 0) */
	write_check(_metadata, self->unit, "state", "", 0, "Down\n");
	write_check(_metadata, self->unit, "state", "Active", 0, "Active\n");
	write_check(_metadata, self->unit, "state", "down", -EINVAL,
		    "Active\n");
	write_check(_metadata, self->unit, "state", "", 0, "Active\n");
}

/* drop_ppm and link_rate_mbps share the range 0..1000000. */
static void ranged_writes(struct __test_metadata *_metadata,
			  unsigned int unit, const char *attr)
{
	static const char * const bad[] = {
		"1000001", "1000001\n", "-1", "-1\n", "abc", "\n", "12abc",
		"4294967296", "18446744073709551616", "1000000000000", "1 2",
		"+-1",
	};

	write_check(_metadata, unit, attr, "0", 0, "0\n");
	write_check(_metadata, unit, attr, "1000000", 0, "1000000\n");
	write_check(_metadata, unit, attr, "1000000\n", 0, "1000000\n");
	write_check(_metadata, unit, attr, "0\n", 0, "0\n");
	write_check(_metadata, unit, attr, "4242\n", 0, "4242\n");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		write_check(_metadata, unit, attr, bad[i], -EINVAL, "4242\n");
	write_check(_metadata, unit, attr, "", 0, "4242\n");
	write_check(_metadata, unit, attr, "0", 0, "0\n");
}

TEST_F(sysfs, drop_ppm_writes)
{
	NEED_UNIT();
	KFAB_NEED_ROOT();
	ranged_writes(_metadata, self->unit, "drop_ppm");
}

TEST_F(sysfs, link_rate_writes)
{
	NEED_UNIT();
	KFAB_NEED_ROOT();
	ranged_writes(_metadata, self->unit, "link_rate_mbps");
}

TEST_F(sysfs, units_independent)
{
	unsigned int other = self->unit ^ 1;
	char before[64], after[64];

	NEED_UNIT();
	KFAB_NEED_ROOT();
	if (other >= hfi_num_units())
		SKIP(return, "one unit only");
	ASSERT_LT(0, hfi_sysfs_read(other, "drop_ppm", before, sizeof(before)));
	ASSERT_EQ(0, hfi_sysfs_write(self->unit, "drop_ppm", "777"));
	ASSERT_LT(0, hfi_sysfs_read(other, "drop_ppm", after, sizeof(after)));
	EXPECT_STREQ(before, after);
}

HFI_TEST_MAIN
