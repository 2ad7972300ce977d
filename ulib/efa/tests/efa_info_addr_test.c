// SPDX-License-Identifier: GPL-2.0
/*
 * efa_info_addr_test: kfab_efa's fi_getinfo() and its devices and
 * addresses on the shm backend, under a private $KFAB_SHM_DIR (made here
 * unless given): FI_EFA_IFACE, a Down device, addresses from hints and
 * from node; and the FI_ADDR_EFA name helpers.
 */
#define _GNU_SOURCE
#include "efa_info_tests.h"

/*
 * Points: efa_getinfo() without hints succeeds (@asked), and lists @n
 * fi_infos, the first on domain @first, the second on @second when given
 * (@what).
 */
static void lists(const char *asked, int n, const char *first,
		  const char *second, const char *what)
{
	struct fi_info *fi = NULL;

	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi), 0, "%s",
	       asked);
	TAP_OK(count(fi) == n && !strcmp(fi->domain_attr->name, first) &&
	       (!second || !strcmp(fi->next->domain_attr->name, second)),
	       "%s", what);
	fi_freeinfo(fi);
}

static void test_devices(void)
{
	static const struct env_case bad_env[] = {
		{ "FI_EFA_IFACE", "efa5", -FI_ENODATA, "no such device" },
		{ "FI_EFA_IFACE", "eth0", -FI_EINVAL, "malformed" },
		{ "KFAB_SHM_EFA_DEVICES", "9", -FI_EINVAL, "refused" },
		{ "FI_KFAB_BACKEND", "rdma", -FI_EINVAL, "refused" },
	};
	struct kfab_efa_dev *dev;
	struct fi_info *fi;

	setenv("FI_EFA_IFACE", "efa1", 1);
	lists("FI_EFA_IFACE=efa1", 2, "efa1-rdm", "efa1-dgrm",
	      "efa1-rdm and efa1-dgrm alone");
	setenv("KFAB_SHM_EFA_DEVICES", "3", 1);
	setenv("FI_EFA_IFACE", "efa0,efa2", 1);
	lists("3 devices, FI_EFA_IFACE=efa0,efa2", 4, "efa0-rdm", "efa2-rdm",
	      "efa0 and efa2");
	unsetenv("FI_EFA_IFACE");
	env_cases_run(efa_getinfo, bad_env, sizeof(bad_env) / sizeof(bad_env[0]));
	unsetenv("KFAB_SHM_EFA_DEVICES");

	/* a Down device is not listed */
	if (!TAP_EQ(kfab_efa_open(KFAB_BACKEND_SHM, 0, &dev), 0,
		    "open efa0"))
		return;
	TAP_EQ(kfab_efa_set_knob(dev, KFAB_EFA_KNOB_STATE,
				 KFAB_EFA_STATE_DOWN), 0, "efa0 Down");
	lists("efa0 Down: getinfo", 2, "efa1-rdm", NULL, "efa1 alone");
	setenv("FI_EFA_IFACE", "efa0", 1);
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi), -FI_ENODATA,
	       "FI_EFA_IFACE=efa0, efa0 Down: no device");
	unsetenv("FI_EFA_IFACE");
	TAP_EQ(kfab_efa_set_knob(dev, KFAB_EFA_KNOB_STATE,
				 KFAB_EFA_STATE_ACTIVE), 0, "efa0 Active");
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi), 0,
	       "efa0 Active again");
	TAP_EQ(count(fi), 4, "both listed");
	fi_freeinfo(fi);
	kfab_efa_close(dev);
}

static void test_addrs(void)
{
	struct efa_addr n = name_of(SHM_GID(2), 77, 0xdead), got;
	struct fi_info *h, *fi;

	/* a client: the server's name as hints->dest_addr */
	h = fabtests_rdm_hints();
	h->dest_addr = malloc(EFA_ADDRLEN);
	memcpy(h->dest_addr, &n, EFA_ADDRLEN);
	h->dest_addrlen = EFA_ADDRLEN;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "dest_addr in hints");
	TAP_OK(fi->dest_addrlen == EFA_ADDRLEN &&
	       !memcmp(fi->dest_addr, &n, EFA_ADDRLEN) && fi->next &&
	       fi->next->dest_addr, "every fi_info has the dest_addr");
	fi_freeinfo(fi);
	/* node overrides the hints */
	TAP_EQ(efa_getinfo(V(1, 17), "fi_addr_efa://[" SHM_GID(1) "]:9:42",
			   NULL, 0, h, &fi), 0, "node in the text form");
	memcpy(&got, fi->dest_addr, EFA_ADDRLEN);
	n = name_of(SHM_GID(1), 9, 42);
	TAP_OK(!memcmp(&got, &n, EFA_ADDRLEN), "node is the dest_addr");
	fi_freeinfo(fi);
	fi_freeinfo(h);
	TAP_EQ(efa_getinfo(V(1, 17), "fi_addr_efa://[" SHM_GID(1) "]:9:0",
			   NULL, 0, NULL, &fi), -FI_ENODATA,
	       "destination with qkey 0: no match");
	TAP_EQ(efa_getinfo(V(1, 17), "fi_addr_efa://[" SHM_GID(1) "]:9",
			   NULL, 0, NULL, &fi), -FI_ENODATA,
	       "malformed destination: no match");

	/* a host name or an IP address */
	TAP_EQ(efa_getinfo(V(1, 17), "127.0.0.1", "9228", 0, NULL, &fi),
	       -FI_ENODATA, "destination 127.0.0.1: no match");
	TAP_EQ(efa_getinfo(V(1, 17), "127.0.0.1", "9228", FI_SOURCE, NULL,
			   &fi), 0, "source 127.0.0.1: this host");
	TAP_EQ(count(fi), 4, "every device");
	TAP_OK(all_src_addrs(fi), "each with its device's src_addr");
	fi_freeinfo(fi);
	TAP_EQ(efa_getinfo(V(1, 17), NULL, "9228", FI_SOURCE, NULL, &fi), 0,
	       "a service alone");
	TAP_OK(count(fi) == 4 && all_src_addrs(fi),
	       "every device, each with its src_addr");
	fi_freeinfo(fi);

	/* a source address picks the device of its gid */
	TAP_EQ(efa_getinfo(V(1, 17), "fi_addr_efa://[" SHM_GID(2) "]:0:0",
			   NULL, FI_SOURCE, NULL, &fi), 0, "source efa1's gid");
	n = name_of(SHM_GID(2), 0, 0);
	TAP_OK(count(fi) == 2 && !strcmp(fi->domain_attr->name, "efa1-rdm") &&
	       !memcmp(fi->src_addr, &n, EFA_ADDRLEN) &&
	       !strcmp(fi->next->domain_attr->name, "efa1-dgrm"),
	       "efa1 with its src_addr");
	fi_freeinfo(fi);
	TAP_EQ(efa_getinfo(V(1, 17), "fi_addr_efa://[" SHM_GID(2) "]:5:7",
			   NULL, FI_SOURCE, NULL, &fi), -FI_ENODATA,
	       "source with a qpn: no match (the device assigns it)");
	TAP_EQ(efa_getinfo(V(1, 17),
			   "fi_addr_efa://[fe80::6b66:6162:0:1]:0:0", NULL,
			   FI_SOURCE, NULL, &fi), -FI_ENODATA,
	       "source of a kmod gid on shm: no device");
	/* as hints->src_addr, e.g. from an earlier fi_info */
	h = dgram_hints();
	h->src_addr = malloc(EFA_ADDRLEN);
	n = name_of(SHM_GID(1), 0, 0);
	memcpy(h->src_addr, &n, EFA_ADDRLEN);
	h->src_addrlen = EFA_ADDRLEN;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "src_addr in hints");
	TAP_OK(count(fi) == 1 && !strcmp(fi->domain_attr->name, "efa0-dgrm"),
	       "efa0-dgrm alone");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static void test_names(void)
{
	static const struct {
		const char *s;
		int ret;
		uint32_t qpn, qkey;
	} cases[] = {
		{ "fi_addr_efa://[fe80::1]:1:1", 0, 1, 1 },
		{ "fi_addr_efa://[" SHM_GID(1) "]:16777215:4294967295", 0,
		  0xffffff, 0xffffffff },
		{ "fi_addr_efa://[" SHM_GID(1) "]:0:0", 0, 0, 0 },
		{ "fi_addr_efa://[::ffff:10.0.0.1]:3:4", 0, 3, 4 },
		/* qpn or qkey out of range, parts missing, junk */
		{ "fi_addr_efa://[fe80::1]:16777216:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[fe80::1]:1:4294967296", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[fe80::1]:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[fe80::1]::1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[fe80::1]:1:1 ", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[fe80::1]:0x1:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[fe80::1]:-1:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://fe80::1:1:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[fe80::1:1:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[fe80::g]:1:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[10.0.0.1]:1:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[::]:1:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_efa://[]:1:1", -FI_EINVAL, 0, 0 },
		{ "fi_addr_opx://1.1.0x1", -FI_EINVAL, 0, 0 },
		{ "[fe80::1]:1:1", -FI_EINVAL, 0, 0 },
	};
	uint8_t gid0[KFAB_EFA_GID_LEN] = { 0xfe, 0x80 };
	struct efa_addr n, m;
	uint64_t key, key2;
	char buf[96];
	size_t len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = efa_addr_parse(cases[i].s, (uint8_t *)&n);

		TAP_OK(ret == cases[i].ret &&
		       (ret || (le32toh(n.qpn) == cases[i].qpn &&
				le32toh(n.qkey) == cases[i].qkey)),
		       "parse %s", cases[i].s);
	}
	/* the layout of libfabric's struct efa_ep_addr, reserved zero */
	efa_addr_parse("fi_addr_efa://[fe80::102]:258:16909060", (uint8_t *)&n);
	gid0[14] = 1;
	gid0[15] = 2;
	TAP_OK(!memcmp(n.gid, gid0, 16) &&
	       !memcmp((uint8_t *)&n + 16, "\x02\x01\x00\x00\x04\x03\x02\x01",
		       8) && !memcmp(n.reserved, "\0\0\0\0\0\0\0\0", 8),
	       "gid, qpn and qkey little-endian, reserved zero");

	/* the text form parses back */
	n = name_of(SHM_GID(1), 0xabcdef, 0x12345678);
	len = sizeof(buf);
	efa_straddr(&n, buf, &len);
	TAP_OK(!strcmp(buf, "fi_addr_efa://[" SHM_GID(1) "]:11259375:305419896") &&
	       len == strlen(buf) + 1, "straddr %s", buf);
	TAP_OK(!efa_addr_parse(buf, (uint8_t *)&m) &&
	       !memcmp(&m, &n, EFA_ADDRLEN), "and it parses back");
	len = 8;
	efa_straddr(&n, buf, &len);
	TAP_OK(len == strlen("fi_addr_efa://[" SHM_GID(1) "]:11259375:305419896") + 1 &&
	       strlen(buf) == 7, "short buffer: truncated, the length needed");

	/* keys: the QP, not the qkey */
	n = name_of(SHM_GID(1), 5, 1);
	m = name_of(SHM_GID(1), 5, 2);
	TAP_EQ(efa_addr_key(&n, &key), 0, "key of a name");
	TAP_OK(!efa_addr_key(&m, &key2) && key == key2,
	       "another qkey, the same key");
	TAP_EQ(key, efa_qp_key(n.gid, 5), "efa_qp_key of (gid, qpn)");
	m = name_of(SHM_GID(1), 6, 1);
	efa_addr_key(&m, &key2);
	TAP_OK(key != key2 && (key2 & 0xffffff) == 6, "another qpn, another key");
	m = name_of(SHM_GID(2), 5, 1);
	efa_addr_key(&m, &key2);
	TAP_OK(key != key2, "another device, another key");
	m = name_of("fe80::6b66:6162:0:1", 5, 1);
	efa_addr_key(&m, &key2);
	TAP_OK(key != key2, "kmod's efa0, another key than shm's efa0");
	memset(&n, 0, sizeof(n));
	TAP_EQ(efa_addr_key(&n, &key), -FI_EINVAL, "zero name: no key");
	n = name_of(SHM_GID(1), 0, 1);
	TAP_EQ(efa_addr_key(&n, &key), -FI_EINVAL, "qpn 0: no key");
	n = name_of(SHM_GID(1), 1, 0);
	TAP_EQ(efa_addr_key(&n, &key), -FI_EINVAL, "qkey 0: no key");
	n = name_of(SHM_GID(1), 1, 1);
	n.reserved[7] = 1;
	TAP_EQ(efa_addr_key(&n, &key), -FI_EINVAL, "reserved byte: no key");
}

int main(void)
{
	char dir[256];
	bool own = info_start("efa_info_addr_test", dir, sizeof(dir));

	test_devices();
	test_addrs();
	test_names();
	return info_done(dir, own);
}
