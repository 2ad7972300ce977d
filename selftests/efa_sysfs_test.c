// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa sysfs: every attribute of /sys/class/kfab/efa<N>/ and counters/
 * in its documented format, the writable knobs (valid values mirrored into
 * the status page, bad ones refused with nothing changed), the device
 * nodes and the module parameters. Each test runs for devices 0 and 1.
 */

#include "efa_util.h"

#include <regex.h>

static const char *const ro_attrs[] = {
	"device", "abi_version", "gid", "numa_node", "mtu", "rx_entries",
	"max_qps", "nfreeqps",
};

static const char *const counters[] = {
	"qps", "qps_created", "mrs", "pinned_pages", "stale_mrs",
	"rdma_reads", "rdma_read_bytes", "rdma_writes", "rdma_write_bytes",
	"notifies", "rnrs", "injected_rnrs",
};

static const char *const params[] = {
	"num_devices", "qps_per_device", "rx_entries", "mtu", "max_mrs",
	"device_numa",
};

FIXTURE(dev) {
	unsigned int dev;
	struct kfab_knobs knobs;
	struct efa_dev d;
};

FIXTURE_VARIANT(dev) {
	unsigned int dev;
};

FIXTURE_VARIANT_ADD(dev, dev0) { .dev = 0 };
FIXTURE_VARIANT_ADD(dev, dev1) { .dev = 1 };

FIXTURE_SETUP(dev)
{
	self->dev = variant->dev;
	self->d.fd = -1;
	if (self->dev >= efa_num_devices())
		SKIP(return, "device %u absent (num_devices=%u)", self->dev,
		     efa_num_devices());
	efa_knobs_save(&self->knobs, self->dev);
	ASSERT_TRUE(self->knobs.saved);
	ASSERT_EQ(0, efa_dev_open(&self->d, self->dev, true));
}

FIXTURE_TEARDOWN(dev)
{
	if (self->dev >= efa_num_devices())
		return;
	efa_knobs_restore(&self->knobs, self->dev);
	efa_dev_close(&self->d);
}

static mode_t attr_mode(unsigned int dev, const char *attr)
{
	char path[256];
	struct stat st;

	efa_attr_path(path, sizeof(path), dev, attr);
	if (stat(path, &st))
		return 0;
	return st.st_mode & 07777;
}

static bool matches(const char *s, const char *re)
{
	regex_t r;
	bool ok;

	if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB))
		return false;
	ok = !regexec(&r, s, 0, NULL, 0);
	regfree(&r);
	return ok;
}

TEST_F(dev, read_only_attributes)
{
	unsigned int dev = self->dev;
	struct kfab_efa_create_qp cq;
	char buf[128], want[64];
	uint64_t v, nfree;
	int64_t node;

	for (size_t i = 0; i < ARRAY_SIZE(ro_attrs); i++) {
		EXPECT_EQ(0444U, attr_mode(dev, ro_attrs[i])) TH_LOG("%s",
								     ro_attrs[i]);
		EXPECT_NE(0, efa_sysfs_write(dev, ro_attrs[i], "1"))
			TH_LOG("%s written", ro_attrs[i]);
	}
	EXPECT_EQ(dev, efa_sysfs_get(dev, "device"));
	EXPECT_EQ((uint64_t)KFAB_ABI_VERSION, efa_sysfs_get(dev, "abi_version"));
	ASSERT_LT(0, efa_sysfs_read(dev, "gid", buf, sizeof(buf)));
	EXPECT_TRUE(matches(buf, "^([0-9a-f]{4}:){7}[0-9a-f]{4}\n$"))
		TH_LOG("gid reads %s", buf);
	snprintf(want, sizeof(want),
		 "fe80:0000:0000:0000:6b66:6162:0000:%04x\n", dev + 1);
	EXPECT_STREQ(want, buf);
	ASSERT_LT(0, efa_sysfs_read(dev, "numa_node", buf, sizeof(buf)));
	ASSERT_EQ(0, hfi_parse_s64(buf, &node));
	EXPECT_LE(-1, node);
	EXPECT_EQ(node, self->d.info.numa_node);
	ASSERT_EQ(0, efa_param_u64("mtu", &v));
	EXPECT_EQ(v, efa_sysfs_get(dev, "mtu"));
	ASSERT_EQ(0, efa_param_u64("rx_entries", &v));
	EXPECT_EQ(v, efa_sysfs_get(dev, "rx_entries"));
	ASSERT_EQ(0, efa_param_u64("qps_per_device", &v));
	EXPECT_EQ(v, efa_sysfs_get(dev, "max_qps"));
	EXPECT_GE(v, efa_sysfs_get(dev, "nfreeqps"));
	/* nfreeqps follows CREATE_QP and DESTROY_QP */
	nfree = efa_sysfs_get(dev, "nfreeqps");
	ASSERT_EQ(0, efa_create_qp(self->d.fd, &cq));
	EXPECT_EQ(nfree - 1, efa_sysfs_get(dev, "nfreeqps"));
	ASSERT_EQ(0, efa_destroy_qp(self->d.fd, cq.qpn));
	EXPECT_EQ(nfree, efa_sysfs_get(dev, "nfreeqps"));
}

TEST_F(dev, counters)
{
	char name[64], buf[64];
	uint64_t v;

	for (size_t i = 0; i < ARRAY_SIZE(counters); i++) {
		snprintf(name, sizeof(name), "counters/%s", counters[i]);
		EXPECT_EQ(0444U, attr_mode(self->dev, name)) TH_LOG("%s", name);
		ASSERT_LT(0, efa_sysfs_read(self->dev, name, buf, sizeof(buf)))
			TH_LOG("%s", name);
		EXPECT_EQ(0, hfi_parse_u64(buf, &v)) TH_LOG("%s reads %s",
							   name, buf);
		EXPECT_NE(0, efa_sysfs_write(self->dev, name, "0"));
	}
	/* the gauges are consistent with what exists */
	EXPECT_EQ(efa_sysfs_get(self->dev, "max_qps") -
		  efa_sysfs_get(self->dev, "nfreeqps"),
		  efa_sysfs_get(self->dev, "counters/qps"));
	EXPECT_LE(efa_sysfs_get(self->dev, "counters/qps"),
		  efa_sysfs_get(self->dev, "counters/qps_created"));
}

TEST_F(dev, knob_defaults_and_format)
{
	char buf[64];

	for (unsigned int i = 0; i < ARRAY_SIZE(efa_knob_names); i++) {
		EXPECT_EQ(0644U, attr_mode(self->dev, efa_knob_names[i]))
			TH_LOG("%s", efa_knob_names[i]);
	}
	ASSERT_LT(0, efa_sysfs_read(self->dev, "state", buf, sizeof(buf)));
	EXPECT_TRUE(!strcmp(buf, "Active\n") || !strcmp(buf, "Down\n"))
		TH_LOG("state reads %s", buf);
	ASSERT_LT(0, efa_sysfs_read(self->dev, "device_rdma", buf, sizeof(buf)));
	EXPECT_TRUE(matches(buf, "^(read write|read|write|none)\n$"))
		TH_LOG("device_rdma reads %s", buf);
	EXPECT_GE(7U, efa_sysfs_get(self->dev, "rnr_retry"));
	EXPECT_GE(1000000U, efa_sysfs_get(self->dev, "rnr_inject_ppm"));
	EXPECT_GE(1000000U, efa_sysfs_get(self->dev, "reorder_ppm"));
	EXPECT_GE(1000000U, efa_sysfs_get(self->dev, "link_rate_mbps"));
}

/* Each knob: the status page follows sysfs. */
static void check_mirror(struct __test_metadata *_metadata,
			 FIXTURE_DATA(dev) *self)
{
	const struct kfab_efa_status *st = self->d.status;
	struct kfab_efa_device_info info;
	char buf[64];

	ASSERT_LT(0, efa_sysfs_read(self->dev, "state", buf, sizeof(buf)));
	EXPECT_EQ(strcmp(buf, "Active\n") ? (__u32)KFAB_EFA_STATE_DOWN :
		  (__u32)KFAB_EFA_STATE_ACTIVE, st->state);
	ASSERT_LT(0, efa_sysfs_read(self->dev, "device_rdma", buf, sizeof(buf)));
	EXPECT_EQ(!strcmp(buf, "read write\n") ? 3U : !strcmp(buf, "read\n") ?
		  1U : !strcmp(buf, "write\n") ? 2U : 0U, st->device_rdma);
	EXPECT_EQ(efa_sysfs_get(self->dev, "rnr_retry"), st->rnr_retry);
	EXPECT_EQ(efa_sysfs_get(self->dev, "rnr_inject_ppm"),
		  st->rnr_inject_ppm);
	EXPECT_EQ(efa_sysfs_get(self->dev, "reorder_ppm"), st->reorder_ppm);
	EXPECT_EQ(efa_sysfs_get(self->dev, "link_rate_mbps"),
		  st->link_rate_mbps);
	ASSERT_EQ(0, efa_query(self->d.fd, &info));
	EXPECT_EQ(st->state, info.state);
	EXPECT_EQ(st->device_rdma, info.device_rdma);
	EXPECT_EQ(st->rnr_retry, info.rnr_retry);
}

struct knob_case {
	const char *knob;
	const char *const good[8];
	const char *const read_back[8];
	const char *const bad[12];
};

static const struct knob_case knob_cases[] = {
	{ "state", { "Down", "Active\n", "Down\n", "Active" },
	  { "Down\n", "Active\n", "Down\n", "Active\n" },
	  { "\n", "active", "DOWN", "Up", "1", "Active x", "Activ",
	    "Downn" } },
	{ "device_rdma", { "read", "write\n", "none", "read write" },
	  { "read\n", "write\n", "none\n", "read write\n" },
	  { "\n", "rw", "READ", "write read", "read  write", "all", "1",
	    "readwrite", "read,write" } },
	{ "rnr_retry", { "0", "7\n", "5", "3" },
	  { "0\n", "7\n", "5\n", "3\n" },
	  { "8", "-1", "\n", "abc", "4294967296", "0x10", " 5x", "100" } },
	{ "rnr_inject_ppm", { "1000000", "0", "17\n", "0" },
	  { "1000000\n", "0\n", "17\n", "0\n" },
	  { "1000001", "-1", "\n", "abc", "4294967296", "1e6", " 5x" } },
	{ "reorder_ppm", { "1000000", "1", "999999\n", "0" },
	  { "1000000\n", "1\n", "999999\n", "0\n" },
	  { "1000001", "-1", "\n", "abc", "4294967296", "2000000" } },
	{ "link_rate_mbps", { "1000000", "1", "100\n", "0" },
	  { "1000000\n", "1\n", "100\n", "0\n" },
	  { "1000001", "-1", "\n", "abc", "4294967296", "10G" } },
};

TEST_F(dev, knob_writes)
{
	char before[64], after[64];

	KFAB_NEED_ROOT();
	for (size_t k = 0; k < ARRAY_SIZE(knob_cases); k++) {
		const struct knob_case *c = &knob_cases[k];

		for (int i = 0; i < 8 && c->good[i]; i++) {
			EXPECT_EQ(0, efa_sysfs_write(self->dev, c->knob,
						     c->good[i]))
				TH_LOG("%s <- '%s'", c->knob, c->good[i]);
			ASSERT_LT(0, efa_sysfs_read(self->dev, c->knob, after,
						    sizeof(after)));
			EXPECT_STREQ(c->read_back[i], after);
			check_mirror(_metadata, self);
		}
		/* a non-default value, so that a refusal is visible */
		ASSERT_EQ(0, efa_sysfs_write(self->dev, c->knob, c->good[0]));
		ASSERT_LT(0, efa_sysfs_read(self->dev, c->knob, before,
					    sizeof(before)));
		for (int i = 0; i < 12 && c->bad[i]; i++) {
			EXPECT_EQ(-EINVAL, efa_sysfs_write(self->dev, c->knob,
							   c->bad[i]))
				TH_LOG("%s <- '%s'", c->knob, c->bad[i]);
			ASSERT_LT(0, efa_sysfs_read(self->dev, c->knob, after,
						    sizeof(after)));
			EXPECT_STREQ(before, after);
			check_mirror(_metadata, self);
		}
		efa_knobs_restore(&self->knobs, self->dev);
	}
	check_mirror(_metadata, self);
}

/* A write to one device leaves the others alone. */
TEST_F(dev, devices_independent)
{
	unsigned int other = self->dev ? 0 : 1;
	struct kfab_knobs k0, k1;

	KFAB_NEED_ROOT();
	if (efa_num_devices() < 2)
		SKIP(return, "one device only (num_devices=1)");
	efa_knobs_save(&k0, other);
	ASSERT_EQ(0, efa_sysfs_write(self->dev, "state", "Down"));
	ASSERT_EQ(0, efa_sysfs_write(self->dev, "link_rate_mbps", "77"));
	ASSERT_EQ(0, efa_sysfs_write(self->dev, "device_rdma", "none"));
	efa_knobs_save(&k1, other);
	EXPECT_TRUE(efa_knobs_equal(&k0, &k1));
	EXPECT_EQ(77U, self->d.status->link_rate_mbps);
	efa_knobs_restore(&self->knobs, self->dev);
	check_mirror(_metadata, self);
}

/* The harness's TEST() wrapper has an unused parameter. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* Device nodes and class devices for exactly num_devices devices. */
TEST(device_nodes)
{
	unsigned int n = efa_num_devices();

	ASSERT_LE(1U, n);
	ASSERT_GE(8U, n);
	hfi_check_devices(_metadata, "efa", n);
}

TEST(module_params)
{
	char path[256], buf[128];
	struct stat st;
	uint64_t v;

	for (size_t i = 0; i < ARRAY_SIZE(params); i++) {
		snprintf(path, sizeof(path), EFA_PARAM_FMT, params[i]);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s", path);
		EXPECT_EQ(0444U, st.st_mode & 0777) TH_LOG("%s", path);
		EXPECT_NE(0, hfi_write_file(path, "1", 1)) TH_LOG("%s", path);
	}
	v = efa_param_get("num_devices");
	EXPECT_LE(1U, v);
	EXPECT_GE(8U, v);
	v = efa_param_get("qps_per_device");
	EXPECT_LE(1U, v);
	EXPECT_GE(1024U, v);
	v = efa_param_get("rx_entries");
	EXPECT_LE(16U, v);
	EXPECT_GE(4096U, v);
	EXPECT_EQ(0U, v & (v - 1));
	v = efa_param_get("mtu");
	EXPECT_LE(EFA_PAGE, v);
	EXPECT_GE(65536U, v);
	EXPECT_EQ(0U, v & (v - 1));
	v = efa_param_get("max_mrs");
	EXPECT_LE(1U, v);
	EXPECT_GE(65536U, v);
	snprintf(path, sizeof(path), EFA_PARAM_FMT, "device_numa");
	ASSERT_LE(0, hfi_read_file(path, buf, sizeof(buf)));
	EXPECT_TRUE(matches(buf, "^(-?[0-9]+(,-?[0-9]+)*)?\n?$"))
		TH_LOG("device_numa reads '%s'", buf);
}

EFA_TEST_MAIN
