/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kfab_hfi selftests, and the kfab_* ones of every
 * device class: device and sysfs access, knobs, context assignment and
 * mapping, the receive queue protocol of uapi/kfab_hfi.h on C11 atomics,
 * child process plumbing and a kernel log check. Every helper returns 0 (or a count) on success and -errno on
 * failure; none of them touches errno-based reporting beyond that.
 */
#ifndef KFAB_HFI_UTIL_H
#define KFAB_HFI_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

/* The 6.1 harness has unused parameters, which -Wextra -Werror refuses. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#include "uapi/kfab_hfi.h"

#define HFI_PARAM_FMT		"/sys/module/kfab_hfi/parameters/%s"

#define HFI_PAGE		((size_t)sysconf(_SC_PAGESIZE))
/* The mappings of a queue: ctrl page, ring (rhq), buffers (eager). */
#define HFI_QUEUE_MAPS		3

/* ------------------------------------------------------------------ */
/* Device and ioctl */

/*
 * Every helper named kfab_* takes the device class @cls: "hfi" (the units
 * of kfab_hfi) or "efa" (the devices of kfab_efa); KFAB_CLASS_HELPERS()
 * below gives each class its own names.
 */
static inline int kfab_open(const char *cls, unsigned int n)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/kfab_%s%u", cls, n);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* ioctl() as 0 / -errno. */
static inline int kfab_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* main() of every program: skip the whole program without the device. */
static inline void kfab_require_device(const char *cls)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/kfab_%s0", cls);
	if (access(path, F_OK))
		ksft_exit_skip("%s absent: kfab_%s is not loaded\n", path, cls);
}

static inline void hfi_uuid_random(__u8 uuid[16])
{
	if (getrandom(uuid, 16, 0) != 16) {
		/* getrandom() of 16 bytes does not fail after boot; be safe. */
		for (int i = 0; i < 16; i++)
			uuid[i] = (__u8)rand();
	}
	uuid[0] |= 1;	/* never all zero */
}

/*
 * main() of every harness program: skip the whole program (exit 4) when the
 * device is absent, else run the tests (constructor order as the harness's
 * own TEST_HARNESS_MAIN sets it).
 */
#define KFAB_TEST_MAIN(cls)						\
	static void __attribute__((constructor))			\
	__constructor_order_last(void)					\
	{								\
		if (!__constructor_order)				\
			__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD; \
	}								\
	int main(int argc, char **argv)					\
	{								\
		kfab_require_device(cls);				\
		return test_harness_run(argc, argv);			\
	}
#define HFI_TEST_MAIN KFAB_TEST_MAIN("hfi")

/* munmap() @p if it is mapped, and forget it. */
#define HFI_UNMAP(p, len) do {						\
		if (p)							\
			munmap((void *)(p), (len));			\
		(p) = NULL;						\
	} while (0)

/* close() *@fd if it is open, and forget it. */
static inline void hfi_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ------------------------------------------------------------------ */
/* sysfs */

/*
 * /dev/kfab_<@cls>0 .. @n - 1 are character devices, root's with no access
 * for others, each with its class device; number @n has neither.
 */
static inline void hfi_check_devices(struct __test_metadata *_metadata,
				     const char *cls, unsigned int n)
{
	char path[64];
	struct stat st;

	for (unsigned int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/dev/kfab_%s%u", cls, i);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s", path);
		EXPECT_TRUE(S_ISCHR(st.st_mode));
		/* root's; the group's is udev's (kfab.rules) */
		EXPECT_EQ(0600U, st.st_mode & 0707) TH_LOG("%s mode %o", path,
							   st.st_mode & 0777);
		snprintf(path, sizeof(path), "/sys/class/kfab/%s%u", cls, i);
		EXPECT_EQ(0, access(path, F_OK)) TH_LOG("%s", path);
	}
	snprintf(path, sizeof(path), "/dev/kfab_%s%u", cls, n);
	EXPECT_NE(0, access(path, F_OK)) TH_LOG("%s exists beyond %u", path, n);
	snprintf(path, sizeof(path), "/sys/class/kfab/%s%u", cls, n);
	EXPECT_NE(0, access(path, F_OK)) TH_LOG("%s exists beyond %u", path, n);
}

/* Whole attribute into @buf (NUL-terminated); length or -errno. */
static inline int hfi_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	return (int)n;
}

/* One write() of exactly @len bytes: 0 or -errno. */
static inline int hfi_write_file(const char *path, const char *val, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return (size_t)n == len ? 0 : -EIO;
}

/* Strictly "<decimal>\n", as every numeric attribute reads. */
static inline int hfi_parse_u64(const char *s, uint64_t *val)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*val = strtoull(s, &end, 10);
	if (errno || strcmp(end, "\n"))
		return -EINVAL;
	return 0;
}

static inline int hfi_parse_s64(const char *s, int64_t *val)
{
	char *end;

	if (*s != '-' && (*s < '0' || *s > '9'))
		return -EINVAL;
	errno = 0;
	*val = strtoll(s, &end, 10);
	if (errno || strcmp(end, "\n") || end == s + (*s == '-'))
		return -EINVAL;
	return 0;
}

/* /sys/class/kfab/<@cls><@n>/<@attr> into @path. */
static inline void kfab_attr_path(char *path, size_t len, const char *cls,
				  unsigned int n, const char *attr)
{
	snprintf(path, len, "/sys/class/kfab/%s%u/%s", cls, n, attr);
}

static inline int kfab_sysfs_read(const char *cls, unsigned int n,
				  const char *attr, char *buf, size_t len)
{
	char path[256];

	kfab_attr_path(path, sizeof(path), cls, n, attr);
	return hfi_read_file(path, buf, len);
}

static inline int kfab_sysfs_u64(const char *cls, unsigned int n,
				 const char *attr, uint64_t *val)
{
	char buf[64];
	int ret;

	ret = kfab_sysfs_read(cls, n, attr, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	return hfi_parse_u64(buf, val);
}

/* The value of a numeric attribute, or UINT64_MAX when unreadable. */
static inline uint64_t kfab_sysfs_get(const char *cls, unsigned int n,
				      const char *attr)
{
	uint64_t v;

	return kfab_sysfs_u64(cls, n, attr, &v) ? UINT64_MAX : v;
}

/* Writes @val as given (no newline added): 0 or -errno. */
static inline int kfab_sysfs_write(const char *cls, unsigned int n,
				   const char *attr, const char *val)
{
	char path[256];

	kfab_attr_path(path, sizeof(path), cls, n, attr);
	return hfi_write_file(path, val, strlen(val));
}

/* Parameter @name of module kfab_<@cls>. */
static inline int kfab_param_u64(const char *cls, const char *name,
				 uint64_t *val)
{
	char path[256], buf[64];
	int ret;

	snprintf(path, sizeof(path), "/sys/module/kfab_%s/parameters/%s", cls,
		 name);
	ret = hfi_read_file(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	return hfi_parse_u64(buf, val);
}

/* Poll a numeric attribute until it equals @want: 0, or -ETIMEDOUT. */
static inline int kfab_sysfs_wait(const char *cls, unsigned int n,
				  const char *attr, uint64_t want,
				  int timeout_ms)
{
	for (int waited = 0;; waited += 10) {
		if (kfab_sysfs_get(cls, n, attr) == want)
			return 0;
		if (waited >= timeout_ms)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

/* The helpers above as <pfx>_open(n), <pfx>_sysfs_get(n, attr), ... */
#define KFAB_CLASS_HELPERS(pfx)						\
static inline int pfx##_open(unsigned int n)				\
{									\
	return kfab_open(#pfx, n);					\
}									\
static inline int pfx##_ioctl(int fd, unsigned long cmd, void *arg)	\
{									\
	return kfab_ioctl(fd, cmd, arg);				\
}									\
static inline void pfx##_require_device(void)				\
{									\
	kfab_require_device(#pfx);					\
}									\
static inline void pfx##_attr_path(char *path, size_t len,		\
				   unsigned int n, const char *attr)	\
{									\
	kfab_attr_path(path, len, #pfx, n, attr);			\
}									\
static inline int pfx##_sysfs_read(unsigned int n, const char *attr,	\
				   char *buf, size_t len)		\
{									\
	return kfab_sysfs_read(#pfx, n, attr, buf, len);		\
}									\
static inline int pfx##_sysfs_u64(unsigned int n, const char *attr,	\
				  uint64_t *val)			\
{									\
	return kfab_sysfs_u64(#pfx, n, attr, val);			\
}									\
static inline uint64_t pfx##_sysfs_get(unsigned int n, const char *attr) \
{									\
	return kfab_sysfs_get(#pfx, n, attr);				\
}									\
static inline int pfx##_sysfs_write(unsigned int n, const char *attr,	\
				    const char *val)			\
{									\
	return kfab_sysfs_write(#pfx, n, attr, val);			\
}									\
static inline int pfx##_param_u64(const char *name, uint64_t *val)	\
{									\
	return kfab_param_u64(#pfx, name, val);				\
}									\
static inline uint64_t pfx##_param_get(const char *name)		\
{									\
	uint64_t v;							\
									\
	return pfx##_param_u64(name, &v) ? UINT64_MAX : v;		\
}									\
static inline int pfx##_sysfs_wait(unsigned int n, const char *attr,	\
				   uint64_t want, int timeout_ms)	\
{									\
	return kfab_sysfs_wait(#pfx, n, attr, want, timeout_ms);	\
}

/*
 * <pfx>_peer_req(fd, cmd, peer): a request of struct kfab_<pfx>_peer_req
 * naming a peer handle, and with it <pfx>_notify() and <pfx>_unmap_peer().
 */
#define KFAB_PEER_HELPERS(pfx, notify_cmd, unmap_cmd)			\
static inline int pfx##_peer_req(int fd, unsigned long cmd, __u32 peer)	\
{									\
	struct kfab_##pfx##_peer_req r = { .peer = peer };		\
									\
	return kfab_ioctl(fd, cmd, &r);					\
}									\
static inline int pfx##_notify(int fd, __u32 peer)			\
{									\
	return pfx##_peer_req(fd, notify_cmd, peer);			\
}									\
static inline int pfx##_unmap_peer(int fd, __u32 peer)			\
{									\
	return pfx##_peer_req(fd, unmap_cmd, peer);			\
}

KFAB_CLASS_HELPERS(hfi)

static inline unsigned int hfi_num_units(void)
{
	uint64_t v;

	return hfi_param_u64("num_units", &v) ? 1 : (unsigned int)v;
}

/*
 * The writable knobs of a device (@names, @n of them), saved in a fixture
 * setup and put back in its teardown.
 */
#define KFAB_MAX_KNOBS		8

struct kfab_knobs {
	char val[KFAB_MAX_KNOBS][32];
	bool saved;
};

static inline void kfab_knobs_save(const char *cls, const char *const *names,
				   unsigned int n, struct kfab_knobs *k,
				   unsigned int dev)
{
	k->saved = n <= KFAB_MAX_KNOBS;
	for (unsigned int i = 0; k->saved && i < n; i++)
		if (kfab_sysfs_read(cls, dev, names[i], k->val[i],
				    sizeof(k->val[i])) <= 0)
			k->saved = false;
}

static inline void kfab_knobs_restore(const char *cls,
				      const char *const *names, unsigned int n,
				      const struct kfab_knobs *k,
				      unsigned int dev)
{
	if (!k->saved || geteuid())
		return;
	for (unsigned int i = 0; i < n; i++)
		kfab_sysfs_write(cls, dev, names[i], k->val[i]);
}

static inline bool kfab_knobs_equal(unsigned int n, const struct kfab_knobs *a,
				    const struct kfab_knobs *b)
{
	if (!a->saved || !b->saved)
		return false;
	for (unsigned int i = 0; i < n; i++)
		if (strcmp(a->val[i], b->val[i]))
			return false;
	return true;
}

/* kfab_knobs_*() of class @pfx and its knobs, <pfx>_knob_names. */
#define KFAB_KNOB_HELPERS(pfx)						\
static inline void pfx##_knobs_save(struct kfab_knobs *k, unsigned int n) \
{									\
	kfab_knobs_save(#pfx, pfx##_knob_names,				\
			ARRAY_SIZE(pfx##_knob_names), k, n);		\
}									\
static inline void pfx##_knobs_restore(const struct kfab_knobs *k,	\
				       unsigned int n)			\
{									\
	kfab_knobs_restore(#pfx, pfx##_knob_names,			\
			   ARRAY_SIZE(pfx##_knob_names), k, n);		\
}									\
static inline bool pfx##_knobs_equal(const struct kfab_knobs *a,	\
				     const struct kfab_knobs *b)	\
{									\
	return kfab_knobs_equal(ARRAY_SIZE(pfx##_knob_names), a, b);	\
}

static const char *const hfi_knob_names[] = {
	"state", "drop_ppm", "link_rate_mbps",
};

KFAB_KNOB_HELPERS(hfi)

/* In a test body: writing the knobs needs root. */
#define KFAB_NEED_ROOT() do {						\
	if (geteuid())							\
		SKIP(return, "needs root to write /sys/class/kfab");	\
} while (0)


/* ------------------------------------------------------------------ */
/* Contexts and their memory */

/* One view of a context's queues: the owner's or a peer's mapping. */
struct hfi_queue {
	union {
		struct {
			struct kfab_hfi_ctrl *kctrl;
			struct kfab_hfi_rhq_entry *krhq;
			__u8 *keager;
		};
		void *map[HFI_QUEUE_MAPS];	/* for hfi_queue_map() */
	};
	__u32 rhq_entries;
	__u32 eager_count;
	__u32 eager_size;
};

struct hfi_ctx {
	int fd;
	unsigned int unit;
	struct kfab_hfi_ctxt_info info;
	struct hfi_queue q;
	const struct kfab_hfi_status *kstatus;
};

static inline size_t hfi_rhq_bytes(__u32 entries)
{
	return (size_t)entries * sizeof(struct kfab_hfi_rhq_entry);
}

static inline size_t hfi_eager_bytes(__u32 count, __u32 size)
{
	return (size_t)count * size;
}

/* mmap() as a pointer or NULL with errno set. */
static inline void *hfi_mmap(int fd, __u64 offset, size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)offset);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * A queue of either device is mapped as HFI_QUEUE_MAPS regions: its ctrl
 * page, its ring (rhq) and its buffers (eager), each at an mmap offset
 * @off[i] of @fd, @len[i] bytes, read-write into @p[i]. On failure none
 * stays mapped: -errno.
 */
static inline int hfi_queue_mmap(void *p[HFI_QUEUE_MAPS], int fd,
				 const __u64 off[HFI_QUEUE_MAPS],
				 const size_t len[HFI_QUEUE_MAPS])
{
	int i, ret;

	for (i = 0; i < HFI_QUEUE_MAPS; i++) {
		p[i] = hfi_mmap(fd, off[i], len[i], PROT_READ | PROT_WRITE);
		if (!p[i]) {
			ret = -errno;
			while (i--)
				HFI_UNMAP(p[i], len[i]);
			return ret;
		}
	}
	return 0;
}

/* munmap() those of the regions @p of hfi_queue_mmap() that are mapped. */
static inline void hfi_queue_munmap(void *p[HFI_QUEUE_MAPS],
				    const size_t len[HFI_QUEUE_MAPS])
{
	int i;

	for (i = 0; i < HFI_QUEUE_MAPS; i++)
		HFI_UNMAP(p[i], len[i]);
}

static inline int hfi_assign_fd(int fd, const __u8 uuid[16], __u16 pkey,
				__u8 sl, struct kfab_hfi_ctxt_info *info)
{
	struct kfab_hfi_assign a;
	int ret;

	memset(&a, 0, sizeof(a));
	memcpy(a.uuid, uuid, 16);
	a.pkey = pkey;
	a.sl = sl;
	ret = hfi_ioctl(fd, KFAB_HFI_IOC_ASSIGN_CTXT, &a);
	if (!ret && info)
		*info = a.info;
	return ret;
}

/* Open @unit and assign a context; nothing mapped yet. */
/* Assigns a context on @fd, an open file of @unit; closes it on failure. */
static inline int hfi_ctx_assign_fd(struct hfi_ctx *c, int fd,
				    unsigned int unit, const __u8 uuid[16],
				    __u16 pkey, __u8 sl)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->unit = unit;
	ret = hfi_assign_fd(c->fd, uuid, pkey, sl, &c->info);
	if (ret) {
		close(c->fd);
		c->fd = -1;
		return ret;
	}
	c->q.rhq_entries = c->info.rhq_entries;
	c->q.eager_count = c->info.eager_count;
	c->q.eager_size = c->info.eager_size;
	return 0;
}

static inline int hfi_ctx_assign(struct hfi_ctx *c, unsigned int unit,
				 const __u8 uuid[16], __u16 pkey, __u8 sl)
{
	int fd = hfi_open(unit);

	if (fd < 0) {
		memset(c, 0, sizeof(*c));
		c->fd = -1;
		return fd;
	}
	return hfi_ctx_assign_fd(c, fd, unit, uuid, pkey, sl);
}

static inline void hfi_queue_lens(const struct hfi_queue *q,
				  size_t len[HFI_QUEUE_MAPS])
{
	len[0] = HFI_PAGE;
	len[1] = hfi_rhq_bytes(q->rhq_entries);
	len[2] = hfi_eager_bytes(q->eager_count, q->eager_size);
}

static inline void hfi_queue_unmap(struct hfi_queue *q)
{
	size_t len[HFI_QUEUE_MAPS];

	hfi_queue_lens(q, len);
	hfi_queue_munmap(q->map, len);
}

static inline int hfi_queue_map(struct hfi_queue *q, int fd, __u64 ctrl_off,
				__u64 rhq_off, __u64 eager_off)
{
	const __u64 off[HFI_QUEUE_MAPS] = { ctrl_off, rhq_off, eager_off };
	size_t len[HFI_QUEUE_MAPS];

	hfi_queue_lens(q, len);
	return hfi_queue_mmap(q->map, fd, off, len);
}

/* Map ctrl, rhq and eager read-write and the status page read-only. */
static inline int hfi_ctx_map(struct hfi_ctx *c)
{
	int ret;

	ret = hfi_queue_map(&c->q, c->fd, c->info.ctrl_offset,
			    c->info.rhq_offset, c->info.eager_offset);
	if (ret)
		return ret;
	c->kstatus = hfi_mmap(c->fd, c->info.status_offset, HFI_PAGE,
			      PROT_READ);
	if (!c->kstatus) {
		ret = -errno;
		hfi_queue_unmap(&c->q);
		return ret;
	}
	return 0;
}

static inline void hfi_ctx_unmap(struct hfi_ctx *c)
{
	hfi_queue_unmap(&c->q);
	HFI_UNMAP(c->kstatus, HFI_PAGE);
}

/* Unmap and close: releases the context. */
static inline void hfi_ctx_close(struct hfi_ctx *c)
{
	hfi_ctx_unmap(c);
	hfi_close_fd(&c->fd);
}

/* A peer handle held by some file, and optionally its mapping. */
struct hfi_peer {
	struct kfab_hfi_map_peer mp;	/* mp.peer is the handle */
	struct hfi_queue q;
};

static inline int hfi_map_peer(int fd, __u32 lid, __u32 ctxt,
			       struct kfab_hfi_map_peer *mp)
{
	memset(mp, 0, sizeof(*mp));
	mp->lid = lid;
	mp->ctxt = ctxt;
	return hfi_ioctl(fd, KFAB_HFI_IOC_MAP_PEER, mp);
}

/* MAP_PEER and, if @map, mmap the peer's queues through @fd. */
static inline int hfi_peer_open(struct hfi_peer *p, int fd, __u32 lid,
				__u32 ctxt, bool map)
{
	int ret;

	memset(p, 0, sizeof(*p));
	ret = hfi_map_peer(fd, lid, ctxt, &p->mp);
	if (ret || !map)
		return ret;
	p->q.rhq_entries = p->mp.rhq_entries;
	p->q.eager_count = p->mp.eager_count;
	p->q.eager_size = p->mp.eager_size;
	return hfi_queue_map(&p->q, fd, p->mp.ctrl_offset, p->mp.rhq_offset,
			     p->mp.eager_offset);
}

KFAB_PEER_HELPERS(hfi, KFAB_HFI_IOC_NOTIFY, KFAB_HFI_IOC_UNMAP_PEER)

static inline int hfi_tid_update(int fd, const void *vaddr, __u64 len,
				 __u32 *handle, __u32 *npages)
{
	struct kfab_hfi_tid_update t;
	int ret;

	memset(&t, 0, sizeof(t));
	t.vaddr = (__u64)(uintptr_t)vaddr;
	t.length = len;
	ret = hfi_ioctl(fd, KFAB_HFI_IOC_TID_UPDATE, &t);
	if (!ret && handle)
		*handle = t.handle;
	if (!ret && npages)
		*npages = t.npages;
	return ret;
}

static inline int hfi_tid_free(int fd, __u32 handle)
{
	struct kfab_hfi_tid_free t = { .handle = handle };

	return hfi_ioctl(fd, KFAB_HFI_IOC_TID_FREE, &t);
}

static inline int hfi_sdma(int fd, __u32 peer, __u32 tid, __u64 offset,
			   const struct kfab_iovec *iov, __u32 iovcnt,
			   __u32 flags, __u64 *bytes)
{
	struct kfab_hfi_sdma s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.peer = peer;
	s.tid = tid;
	s.offset = offset;
	s.iov = (__u64)(uintptr_t)iov;
	s.iovcnt = iovcnt;
	s.flags = flags;
	ret = hfi_ioctl(fd, KFAB_HFI_IOC_SDMA, &s);
	if (!ret && bytes)
		*bytes = s.bytes;
	return ret;
}

static inline int hfi_set_eventfd(int fd, int efd)
{
	struct kfab_hfi_eventfd e = { .fd = efd };

	return hfi_ioctl(fd, KFAB_HFI_IOC_SET_EVENTFD, &e);
}

/* poll() one fd for input: 1 readable, 0 timed out, -errno. */
static inline int hfi_poll_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ret;

	do {
		ret = poll(&p, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

/* An address range that is guaranteed not to be mapped. */
static inline void *hfi_unmapped_page(void)
{
	void *p = mmap(NULL, HFI_PAGE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return (void *)1;
	munmap(p, HFI_PAGE);
	return p;
}

/* Anonymous private memory, or NULL. */
static inline void *hfi_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* A page holding @len bytes of @data, then made read-only. */
static inline void *hfi_ro_page(const void *data, size_t len)
{
	void *p = hfi_anon(HFI_PAGE);

	if (!p)
		return NULL;
	memcpy(p, data, len);
	if (mprotect(p, HFI_PAGE, PROT_READ)) {
		munmap(p, HFI_PAGE);
		return NULL;
	}
	return p;
}

static inline bool hfi_all_zero(const void *p, size_t len)
{
	const __u8 *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* This process's locked (pinned) memory in KiB, or -1. */
static inline long hfi_vmlck_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Drop CAP_IPC_LOCK: as root, become nobody; else there is none to drop. */
static inline int kfab_drop_privileges(void)
{
	if (geteuid())
		return 0;
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return -errno;
	return 0;
}

/* ------------------------------------------------------------------ */
/* What the ioctl tests check of every device's commands */

/* A command of the device, named in the test log. */
struct kfab_cmd {
	const char *name;
	unsigned long cmd;
};

/*
 * Each of the @n commands @cmds on @fd with an argument that cannot be
 * read: NULL, a low address, an unmapped page, a kernel address. EFAULT.
 */
static inline void kfab_check_efault(struct __test_metadata *_metadata,
				     int fd, const struct kfab_cmd *cmds,
				     size_t n)
{
	static const char *const what[] = {
		"NULL", "(void *)1", "unmapped", "kernel address",
	};
	void *const bad[] = {
		NULL, (void *)1, hfi_unmapped_page(),
		(void *)(uintptr_t)0xffff888000000000ULL,
	};

	size_t i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < ARRAY_SIZE(bad); j++) {
			EXPECT_EQ(-EFAULT, kfab_ioctl(fd, cmds[i].cmd, bad[j]))
				TH_LOG("%s %s", cmds[i].name, what[j]);
		}
	}
}

/*
 * Encodings the device must refuse with ENOTTY on @fd: each of the @n
 * commands @cmds with another direction or size, or under another ioctl
 * type, every number of KFAB_IOC_MAGIC outside the class's own, @nr_lo to
 * @nr_hi, and command 0.
 */
static inline void
kfab_check_unknown_commands(struct __test_metadata *_metadata, int fd,
			    const struct kfab_cmd *cmds, size_t n,
			    unsigned int nr_lo, unsigned int nr_hi)
{
	static const unsigned int dirs[] = {
		_IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	};
	const unsigned long type =
		(unsigned long)_IOC_TYPEMASK << _IOC_TYPESHIFT;
	static __u8 arg[16384];
	unsigned int tried = 0;
	unsigned long cmd;
	size_t i, d, s;

	memset(arg, 0, sizeof(arg));
	for (i = 0; i < n; i++) {
		unsigned long known = cmds[i].cmd;
		size_t sizes[] = { _IOC_SIZE(known), _IOC_SIZE(known) - 8,
				   _IOC_SIZE(known) + 8, 0, 4 };

		for (d = 0; d < ARRAY_SIZE(dirs); d++) {
			for (s = 0; s < ARRAY_SIZE(sizes); s++) {
				if (dirs[d] == _IOC_DIR(known) &&
				    sizes[s] == _IOC_SIZE(known))
					continue;
				cmd = _IOC(dirs[d], KFAB_IOC_MAGIC,
					   _IOC_NR(known), sizes[s]);
				EXPECT_EQ(-ENOTTY, kfab_ioctl(fd, cmd, arg))
					TH_LOG("%s as %#lx", cmds[i].name, cmd);
				tried++;
			}
		}
		/* right encoding, wrong type */
		cmd = (known & ~type) |
		      ((unsigned long)(KFAB_IOC_MAGIC + 1) << _IOC_TYPESHIFT);
		EXPECT_EQ(-ENOTTY, kfab_ioctl(fd, cmd, arg))
			TH_LOG("%s as %#lx", cmds[i].name, cmd);
	}
	for (unsigned int nr = 0; nr < 0x100; nr++) {
		if (nr >= nr_lo && nr <= nr_hi)
			continue;
		for (d = 0; d < ARRAY_SIZE(dirs); d++) {
			cmd = _IOC(dirs[d], KFAB_IOC_MAGIC, nr,
				   dirs[d] ? 64 : 0);
			EXPECT_EQ(-ENOTTY, kfab_ioctl(fd, cmd, arg))
				TH_LOG("cmd %#lx", cmd);
		}
	}
	EXPECT_EQ(-ENOTTY, kfab_ioctl(fd, 0, arg));
	EXPECT_LT(100U, tried);
}

/*
 * The variants of a fixture "rsv" that sets one flags, pad or reserved
 * field of a command's argument, which must then be refused with EINVAL:
 * KFAB_RSV_VARIANT() declares them (@cmd_type names the command), RSV()
 * adds one.
 */
#define KFAB_RSV_VARIANT(cmd_type)					\
FIXTURE_VARIANT(rsv) {							\
	cmd_type cmd;							\
	size_t off;		/* of the field in the argument */	\
	size_t width;		/* bytes */			\
	__u64 value;		/* little-endian, cut to width */	\
}

#define RSV(name, c, type, field, v)					\
	FIXTURE_VARIANT_ADD(rsv, name) {				\
		.cmd = c,						\
		.off = offsetof(type, field),				\
		.width = sizeof(((type *)0)->field),			\
		.value = v,						\
	}

/* ------------------------------------------------------------------ */
/*
 * The receive queue protocol (top comment of uapi/kfab_hfi.h) on C11
 * atomics. The shared words are plain __u64/__u32 in the uapi; these casts
 * give them atomic access with the same size and alignment on every
 * architecture kfab supports.
 */

static inline _Atomic __u64 *hfi_a64(__u64 *word)
{
	return (_Atomic __u64 *)word;
}

static inline _Atomic __u32 *hfi_a32(__u32 *word)
{
	return (_Atomic __u32 *)word;
}

/*
 * Producer, step 4' after publishing an entry: a full fence (pairs with
 * the consumer's after arming, 6.), then take the consumer's arm. true
 * when it was armed and this producer took it: notify it.
 */
static inline bool kfab_take_armed(__u32 *armed)
{
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(hfi_a32(armed), memory_order_relaxed) &&
	       atomic_exchange_explicit(hfi_a32(armed), 0,
					memory_order_relaxed) == 1;
}

/*
 * Consumer, step 6: arm, fence (pairs with the producer's in 4'),
 * re-check the next entry's @seq. true when it is still not @want: the
 * queue is empty and the caller may wait on its eventfd.
 */
static inline bool kfab_arm(__u32 *armed, __u32 *seq, __u32 want)
{
	atomic_store_explicit(hfi_a32(armed), 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(hfi_a32(seq), memory_order_acquire) != want;
}

static inline __u32 hfi_lo(__u64 v)
{
	return (__u32)v;
}

static inline __u32 hfi_hi(__u64 v)
{
	return (__u32)(v >> 32);
}

#define HFI_PRODUCE_NOTIFY	1	/* published; the owner was armed */

/*
 * Producer, steps 1 to 4'. Returns 0 when published, HFI_PRODUCE_NOTIFY
 * when published and the caller must KFAB_HFI_IOC_NOTIFY the owner,
 * -ENOSPC when dropped on a full RHQ and -ENOBUFS when dropped on a full
 * eager ring (each counted in the ctrl page), -EMSGSIZE for a payload that
 * does not fit an eager buffer.
 */
static inline int hfi_produce(struct hfi_queue *q, const void *hdr,
			      size_t hdr_len, const void *payload, __u32 len)
{
	struct kfab_hfi_ctrl *ctrl = q->kctrl;
	struct kfab_hfi_rhq_entry *e;
	__u64 t, h, nt;
	__u32 lo, hi;

	if (len > q->eager_size || hdr_len > KFAB_HFI_RHQ_HDR_BYTES)
		return -EMSGSIZE;
	/* 1. reserve an RHQ ticket and, with a payload, an eager ticket */
	t = atomic_load_explicit(hfi_a64(&ctrl->tail), memory_order_relaxed);
	for (;;) {
		/* acquire: pairs with the consumer's release of head (5.) */
		h = atomic_load_explicit(hfi_a64(&ctrl->head),
					 memory_order_acquire);
		if (hfi_lo(t) - hfi_lo(h) >= q->rhq_entries) {
			atomic_fetch_add_explicit(hfi_a64(&ctrl->rhq_full_drops),
						  1, memory_order_relaxed);
			return -ENOSPC;
		}
		if (len && hfi_hi(t) - hfi_hi(h) >= q->eager_count) {
			atomic_fetch_add_explicit(hfi_a64(&ctrl->eager_full_drops),
						  1, memory_order_relaxed);
			return -ENOBUFS;
		}
		nt = (__u64)(hfi_hi(t) + (len ? 1 : 0)) << 32 |
		     (__u32)(hfi_lo(t) + 1);
		/* a failed CAS reloads t: retry from 1. */
		if (atomic_compare_exchange_weak_explicit(hfi_a64(&ctrl->tail),
							  &t, nt,
							  memory_order_relaxed,
							  memory_order_relaxed))
			break;
	}
	lo = hfi_lo(t);
	hi = hfi_hi(t);
	/* 2. payload, then the entry */
	if (len)
		memcpy(q->keager + (size_t)(hi & (q->eager_count - 1)) *
		       q->eager_size, payload, len);
	e = &q->krhq[lo & (q->rhq_entries - 1)];
	e->eager_index = hi;
	e->eager_len = len;
	e->reserved = 0;
	memset(e->hdr, 0, sizeof(e->hdr));
	if (hdr_len)
		memcpy(e->hdr, hdr, hdr_len);
	/* 3. publish: pairs with the consumer's acquire of seq (4.) */
	atomic_store_explicit(hfi_a32(&e->seq), lo + 1, memory_order_release);
	/* 4'. */
	return kfab_take_armed(&ctrl->armed) ? HFI_PRODUCE_NOTIFY : 0;
}

/* hfi_produce() into a mapped peer, notifying it when it was armed. */
static inline int hfi_peer_produce(int fd, struct hfi_peer *p,
				   const void *hdr, size_t hdr_len,
				   const void *payload, __u32 len)
{
	int ret = hfi_produce(&p->q, hdr, hdr_len, payload, len);

	if (ret == HFI_PRODUCE_NOTIFY)
		ret = hfi_notify(fd, p->mp.peer);
	return ret;
}

/* The consumer's local heads. */
struct hfi_consumer {
	__u32 rh;
	__u32 eh;
};

/*
 * Consumer, steps 4 and 5. Returns 1 with the entry in @out and its payload
 * (eager_len bytes, at most @cap copied) in @payload, or 0 when empty.
 */
static inline int hfi_consume(struct hfi_queue *q, struct hfi_consumer *c,
			      struct kfab_hfi_rhq_entry *out, void *payload,
			      size_t cap)
{
	struct kfab_hfi_rhq_entry *e = &q->krhq[c->rh & (q->rhq_entries - 1)];
	__u32 len;

	/* 4. acquire: pairs with the producer's release of seq (3.) */
	if (atomic_load_explicit(hfi_a32(&e->seq), memory_order_acquire) !=
	    c->rh + 1)
		return 0;
	memcpy(out, e, sizeof(*out));
	len = out->eager_len;
	if (len && payload)
		memcpy(payload, q->keager +
		       (size_t)(out->eager_index & (q->eager_count - 1)) *
		       q->eager_size, len < cap ? len : cap);
	/* 5. free the entry and its buffer: pairs with the producer's 1. */
	c->rh += 1;
	if (len)
		c->eh = out->eager_index + 1;
	atomic_store_explicit(hfi_a64(&q->kctrl->head),
			      (__u64)c->eh << 32 | c->rh, memory_order_release);
	return 1;
}

/* Consumer, step 6: kfab_arm() on the next entry. */
static inline bool hfi_consumer_arm(struct hfi_queue *q,
				    struct hfi_consumer *c)
{
	return kfab_arm(&q->kctrl->armed,
			&q->krhq[c->rh & (q->rhq_entries - 1)].seq, c->rh + 1);
}

static inline __u32 hfi_load_dead(struct kfab_hfi_ctrl *ctrl)
{
	return atomic_load_explicit(hfi_a32(&ctrl->dead), memory_order_acquire);
}

/* ------------------------------------------------------------------ */
/* Child processes, coordinated over pipes with bounded waits */

/* Exact-size read with a timeout: 0, -ETIMEDOUT, -EPIPE or -errno. */
static inline int hfi_recv(int fd, void *buf, size_t len, int timeout_ms)
{
	__u8 *p = buf;

	while (len) {
		ssize_t n;
		int ret = hfi_poll_in(fd, timeout_ms);

		if (ret < 0)
			return ret;
		if (!ret)
			return -ETIMEDOUT;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static inline int hfi_send(int fd, const void *buf, size_t len)
{
	const __u8 *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A child with a pipe each way; the child runs under alarm(). */
struct hfi_child {
	pid_t pid;
	int to;		/* parent writes, child reads: in the child, from */
	int from;	/* child writes, parent reads: in the child, to */
};

/*
 * fork() a child that runs @fn(@arg, from_parent, to_parent) and _exit()s
 * with its return value, killed by SIGALRM after @secs. 0 or -errno.
 */
static inline int hfi_child_start(struct hfi_child *ch,
				  int (*fn)(void *arg, int rfd, int wfd),
				  void *arg, unsigned int secs)
{
	int down[2], up[2];

	if (pipe2(down, O_CLOEXEC))
		return -errno;
	if (pipe2(up, O_CLOEXEC)) {
		close(down[0]);
		close(down[1]);
		return -errno;
	}
	fflush(stdout);
	fflush(stderr);
	ch->pid = fork();
	if (ch->pid < 0) {
		int ret = -errno;

		close(down[0]);
		close(down[1]);
		close(up[0]);
		close(up[1]);
		return ret;
	}
	if (!ch->pid) {
		close(down[1]);
		close(up[0]);
		signal(SIGALRM, SIG_DFL);
		alarm(secs);
		_exit(fn(arg, down[0], up[1]));
	}
	close(down[0]);
	close(up[1]);
	ch->to = down[1];
	ch->from = up[0];
	return 0;
}

/* Wait up to @timeout_ms for the child: its exit code, 128 + signal, or
 * -ETIMEDOUT (then it is killed and reaped). */
static inline int hfi_child_wait(struct hfi_child *ch, int timeout_ms)
{
	int status = 0;

	if (ch->pid <= 0)
		return -ECHILD;
	for (int waited = 0;; waited += 5) {
		pid_t r = waitpid(ch->pid, &status, WNOHANG);

		if (r == ch->pid)
			break;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (waited >= timeout_ms) {
			kill(ch->pid, SIGKILL);
			waitpid(ch->pid, &status, 0);
			ch->pid = 0;
			return -ETIMEDOUT;
		}
		usleep(5000);
	}
	ch->pid = 0;
	hfi_close_fd(&ch->to);
	hfi_close_fd(&ch->from);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/* Teardown: kill and reap a child still running. */
static inline void hfi_child_kill(struct hfi_child *ch)
{
	if (ch->pid > 0) {
		kill(ch->pid, SIGKILL);
		waitpid(ch->pid, NULL, 0);
		ch->pid = 0;
	}
	hfi_close_fd(&ch->to);
	hfi_close_fd(&ch->from);
}

/* Child exit codes: which step failed, for the parent's log. */
#define HFI_CHILD_FAIL(step)	(10 + (step))

/*
 * Runs @fn in a child that reports the step that failed with
 * HFI_CHILD_FAIL() (the RLIMIT_MEMLOCK tests: it sets its limit, drops
 * privileges and pins); afterwards pin gauge @attr of device 0 of class
 * @cls must be back where it was.
 */
static inline void kfab_run_memlock_child(struct __test_metadata *_metadata,
					  const char *cls, const char *attr,
					  int (*fn)(void *, int, int))
{
	uint64_t pinned = kfab_sysfs_get(cls, 0, attr);
	struct hfi_child ch;
	int ret;

	ASSERT_EQ(0, hfi_child_start(&ch, fn, NULL, 20));
	ret = hfi_child_wait(&ch, 25000);
	EXPECT_EQ(0, ret) TH_LOG("memlock child failed at step %d", ret - 10);
	EXPECT_EQ(0, kfab_sysfs_wait(cls, 0, attr, pinned, 2000));
}

/* ------------------------------------------------------------------ */
/* Kernel log: nothing at warning level or worse, nothing from kfab */

/* Opens /dev/kmsg positioned at its end; -errno when not permitted. */
static inline int hfi_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * Count (and print) records written since hfi_kmsg_open() with priority
 * warning or worse, or mentioning kfab, BUG, WARNING or Oops.
 */
static inline int hfi_kmsg_bad(int fd)
{
	char rec[8192];
	int bad = 0;

	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		unsigned int prio;

		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records */
		if (n <= 0)
			break;
		rec[n] = '\0';
		if (sscanf(rec, "%u,", &prio) != 1)
			continue;
		if ((prio & 7) <= 4 || strstr(rec, "kfab") ||
		    strstr(rec, "BUG") || strstr(rec, "WARNING") ||
		    strstr(rec, "Oops")) {
			fprintf(stderr, "# kernel log: %s", rec);
			bad++;
		}
	}
	return bad;
}

/* ------------------------------------------------------------------ */
/* Misc */

static inline void hfi_fill(void *buf, size_t len, __u32 seed)
{
	__u8 *p = buf;

	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (__u8)(seed >> 16);
	}
}

static inline uint64_t hfi_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif /* KFAB_HFI_UTIL_H */
