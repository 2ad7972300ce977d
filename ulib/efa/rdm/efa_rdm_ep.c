// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa RDM: the endpoint object. One QP of the domain's device, its
 * ring fully posted at fi_enable(); the operation table; the hooks of
 * the core's fi_ops_msg and fi_ops_tagged; endpoint options (fi_efa(7)'s
 * FI_OPT_EFA_* and kfab's statistics); progress, which the CQs and
 * counters run (or their threads under FI_PROGRESS_AUTO): the ring, then
 * the peers' queues.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "efa_rdm.h"
#include "core/kfab_atomic.h"
#include "core/kfab_msg.h"

/* Microseconds between the polls of an auto progress thread. */
#define EFA_RDM_AUTO_USEC	1
/* Sleep while a peer is due for a retry now (rnr_retry 7). */
#define EFA_RDM_RETRY_USEC	10

static inline struct efa_rdm_ep *to_ep(struct fid_ep *fid)
{
	return kfab_container_of(fid, struct efa_rdm_ep, base.fid);
}

static inline struct efa_rdm_ep *fid_to_ep(fid_t fid)
{
	return to_ep(kfab_container_of(fid, struct fid_ep, fid));
}

/* ------------------------------------------------------------------ */
/* operations */

/* Inline: each caller's @q, known, folds the quota's NULL tests away. */
static kfab_always_inline struct efa_rdm_ope *
ope_get(struct efa_rdm_ep *ep, uint8_t kind, struct kfab_handle_quota *q)
{
	struct kfab_handle *h = kfab_handle_get_quota(&ep->opes, q, kind);
	struct efa_rdm_ope *ope;

	if (kfab_unlikely(!h))
		return NULL;
	ope = kfab_container_of(h, struct efa_rdm_ope, h);
	memset(&ope->rxr, 0, sizeof(*ope) - offsetof(struct efa_rdm_ope, rxr));
	ope->quota = q;
	kfab_list_init(&ope->link);
	kfab_list_init(&ope->rxr.te.link);
	return ope;
}

struct efa_rdm_ope *efa_rdm_ope_tx(struct efa_rdm_ep *ep)
{
	return ope_get(ep, EFA_OPE_TX, &ep->tx_quota);
}

struct efa_rdm_ope *efa_rdm_ope_rx(struct efa_rdm_ep *ep)
{
	return ope_get(ep, EFA_OPE_RX, &ep->rx_quota);
}

struct efa_rdm_ope *efa_rdm_ope_internal(struct efa_rdm_ep *ep,
					 enum efa_rdm_ope_kind kind)
{
	struct efa_rdm_ope *ope = ope_get(ep, (uint8_t)kind, NULL);

	if (!ope)
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
			  "every operation of the endpoint is in use: an internal one failed\n");
	return ope;
}

void efa_rdm_ope_put(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	ope->queued = false;
	kfab_handle_put_quota(&ep->opes, ope->quota, &ope->h);
}

/* ------------------------------------------------------------------ */
/* progress */

static int rdm_progress(struct kfab_progress *core)
{
	struct efa_rdm_ep *ep = kfab_container_of(core, struct efa_rdm_ep,
						  core);
	struct kfab_efa_ring *ring = &ep->qp->ring;
	struct kfab_efa_ring_entry ent;
	int n = 0;

	if (kfab_unlikely(ep->held))
		efa_rdm_flush_held(ep);
	while (n < EFA_RDM_POLL_BUDGET && kfab_efa_ring_poll(ring, &ent)) {
		if (ep->zcpy)
			efa_rdm_zcpy_packet(ep, &ent);
		else
			efa_rdm_rx_packet(ep, &ent);
		kfab_efa_ring_release(ring);
		n++;
	}
	if (ep->zcpy) {
		efa_rdm_zcpy_fill(ep);
		goto push;
	}
	/* FI_EFA_INTERNAL_RX_REFILL_THRESHOLD: buffers go back in batches */
	ep->refill += n;
	if (ep->refill >= ep->params->internal_rx_refill_threshold ||
	    ep->refill >= ring->entries / 2) {
		kfab_efa_ring_post(ring, ep->refill);
		ep->refill = 0;
	}
push:
	if (!kfab_list_empty(&ep->busy))
		efa_rdm_peers_push(ep);
	if (!n && (ep->tx_quota.used || ep->rx_quota.used) &&
	    !(++ep->check_gate & 63))
		efa_rdm_peers_check(ep);
	return n;
}

static bool rdm_arm(struct kfab_progress *core, long *usec)
{
	struct efa_rdm_ep *ep = kfab_container_of(core, struct efa_rdm_ep,
						  core);
	long next;

	if (ep->held)
		efa_rdm_flush_held(ep);
	if (!kfab_list_empty(&ep->busy))
		efa_rdm_peers_push(ep);
	if (ep->refill) {
		kfab_efa_ring_post(&ep->qp->ring, ep->refill);
		ep->refill = 0;
	}
	*usec = ep->held ? EFA_RDM_HELD_USEC : -1;
	next = efa_rdm_peers_next_usec(ep);
	if (next == 0)
		next = EFA_RDM_RETRY_USEC;
	if (ep->tx_quota.used || ep->rx_quota.used) {
		efa_rdm_peers_check(ep);
		if (next < 0 || next > (long)(EFA_RDM_LIVENESS_NS / 1000))
			next = EFA_RDM_LIVENESS_NS / 1000;
	}
	if (next > 0 && (*usec < 0 || next < *usec))
		*usec = next;
	return kfab_efa_ring_arm(&ep->qp->ring);
}

static void rdm_drain(struct kfab_progress *core)
{
	struct efa_rdm_ep *ep = kfab_container_of(core, struct efa_rdm_ep,
						  core);

	kfab_efa_wake_drain(ep->dev, ep->qp);
}

/* ------------------------------------------------------------------ */
/* data calls */

static int rdm_lock(struct efa_rdm_ep *ep)
{
	int ret = efa_ep_lock(ep->domain, &ep->base.enabled);

	if (kfab_unlikely(ret))
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
			  "data call on an endpoint not enabled: fi_enable() first\n");
	return ret;
}

/*
 * A send (@tx: to @addr, with @x its CQ data) or a receive (from @addr,
 * with @x its ignore bits) under the domain lock.
 */
static kfab_always_inline ssize_t rdm_xfer(bool tx, struct fid_ep *fid,
					   const struct iovec *iov,
					   void **desc, size_t count,
					   fi_addr_t addr, uint64_t tag,
					   uint64_t x, void *context,
					   uint64_t flags)
{
	struct efa_rdm_ep *ep = to_ep(fid);
	ssize_t ret = rdm_lock(ep);

	if (kfab_unlikely(ret))
		return ret;
	ret = (tx ? efa_rdm_send : efa_rdm_recv)(ep, iov, desc, count, addr,
						 tag, x, context, flags);
	kfab_unlock(&ep->domain->lock);
	return ret;
}

static ssize_t rdm_send(struct fid_ep *fid, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest,
			uint64_t tag, uint64_t data, void *context,
			uint64_t flags)
{
	return rdm_xfer(true, fid, iov, desc, count, dest, tag, data,
			context, flags);
}

static ssize_t rdm_recv(struct fid_ep *fid, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src,
			uint64_t tag, uint64_t ignore, void *context,
			uint64_t flags)
{
	return rdm_xfer(false, fid, iov, desc, count, src, tag, ignore,
			context, flags);
}

static struct kfab_msg_ops rdm_msg_ops = {
	.msg = KFAB_MSG_FI_OPS,
	.tagged = KFAB_TAGGED_FI_OPS,
	.send = rdm_send,
	.recv = rdm_recv,
};

/* ------------------------------------------------------------------ */
/* endpoint operations */

static ssize_t rdm_cancel(struct fid *fid, void *context)
{
	return efa_rdm_rx_cancel(fid_to_ep(fid), context);
}

static int opt_bool(const void *val, size_t len, bool *b)
{
	if (!val || len != sizeof(bool))
		return -FI_EINVAL;
	*b = *(const bool *)val;
	return 0;
}

static int rdm_getopt(struct fid *fid, int name, void *val, size_t *len)
{
	struct efa_rdm_ep *ep = fid_to_ep(fid);
	size_t retry;
	bool b;

	switch (name) {
	case FI_OPT_EFA_RNR_RETRY:
		retry = ep->rnr_retry;
		return kfab_opt_get(val, len, &retry, sizeof(retry));
	case FI_OPT_EFA_EMULATED_READ:
		b = !ep->rdma_read;
		break;
	case FI_OPT_EFA_EMULATED_WRITE:
		b = !ep->rdma_write;
		break;
	case FI_OPT_EFA_EMULATED_ATOMICS:
		b = true;
		break;
	case FI_OPT_EFA_USE_DEVICE_RDMA:
		b = ep->rdma_read || ep->rdma_write;
		break;
	case FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES:
	case FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES:
		b = false;
		break;
	case FI_OPT_KFAB_EFA_STATS:
		return kfab_opt_get(val, len, &ep->stats, sizeof(ep->stats));
	default:
		return -FI_ENOPROTOOPT;
	}
	return kfab_opt_get(val, len, &b, sizeof(b));
}

static bool device_can(const struct efa_rdm_ep *ep, uint32_t cap)
{
	return __atomic_load_n(&ep->dev->status->device_rdma,
			       __ATOMIC_RELAXED) & cap;
}

static int set_device_rdma(struct efa_rdm_ep *ep, bool on)
{
	const struct kfab_provider *kp = efa_rdm_kp(ep);
	enum efa_tristate env = ep->params->use_device_rdma;

	if (env != EFA_UNSET && (env == EFA_ON) != on) {
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "fi_setopt(FI_OPT_EFA_USE_DEVICE_RDMA, %d) conflicts with FI_EFA_USE_DEVICE_RDMA=%d: the environment wins; unset it or set the option to match\n",
			  on, env == EFA_ON);
		return -FI_EINVAL;
	}
	if (on && !device_can(ep, KFAB_EFA_RDMA_CAP_READ)) {
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "fi_setopt(FI_OPT_EFA_USE_DEVICE_RDMA, 1): device %s has no RDMA read (device_rdma in sysfs)\n",
			  ep->domain->name);
		return -FI_EOPNOTSUPP;
	}
	ep->rdma_read = on;
	ep->rdma_write = on && device_can(ep, KFAB_EFA_RDMA_CAP_WRITE);
	ep->use_device_rdma_set = true;
	return 0;
}

static int rdm_setopt(struct fid *fid, int name, const void *val,
		      size_t len)
{
	struct efa_rdm_ep *ep = fid_to_ep(fid);
	const struct kfab_provider *kp = efa_rdm_kp(ep);
	int ret = 0;
	bool b;

	switch (name) {
	case FI_OPT_EFA_RNR_RETRY:
		if (ep->base.enabled) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_setopt(FI_OPT_EFA_RNR_RETRY): the endpoint is enabled: set it before fi_enable\n");
			ret = -FI_EINVAL;
		} else if (!val || len != sizeof(size_t) ||
			   *(const size_t *)val > EFA_RDM_RNR_INFINITE) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_setopt(FI_OPT_EFA_RNR_RETRY): a size_t of 0..7 (7: retry forever)\n");
			ret = -FI_EINVAL;
		} else {
			ep->rnr_retry = (uint32_t)*(const size_t *)val;
			ep->rnr_retry_set = true;
		}
		break;
	case FI_OPT_EFA_USE_DEVICE_RDMA:
		ret = opt_bool(val, len, &b);
		if (!ret && ep->base.enabled) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_setopt(FI_OPT_EFA_USE_DEVICE_RDMA): set it before fi_enable\n");
			ret = -FI_EINVAL;
		}
		if (!ret)
			ret = set_device_rdma(ep, b);
		break;
	case FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES:
	case FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES:
		ret = opt_bool(val, len, &b);
		if (!ret && b) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_setopt(%s): not supported: packets of one message land in any order\n",
				  name == FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES ?
				  "FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES" :
				  "FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES");
			ret = -FI_EOPNOTSUPP;
		}
		break;
	case FI_OPT_EFA_EMULATED_READ:
	case FI_OPT_EFA_EMULATED_WRITE:
	case FI_OPT_EFA_EMULATED_ATOMICS:
	case FI_OPT_KFAB_EFA_STATS:
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "fi_setopt: option %d can only be read (fi_getopt)\n",
			  name);
		ret = -FI_ENOPROTOOPT;
		break;
	default:
		ret = -FI_ENOPROTOOPT;
		break;
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* bind, enable, close */

static int rdm_bind_check(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	if (bfid->fclass != FI_CLASS_CNTR ||
	    !(flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return 0;
	kfab_warn(efa_rdm_kp(fid_to_ep(fid)), FI_LOG_EP_CTRL,
		  "fi_ep_bind(counter): FI_REMOTE_READ/FI_REMOTE_WRITE counters need FI_RMA_EVENT, which kfab_efa lacks (device RDMA is invisible to the target)\n");
	return -FI_EOPNOTSUPP;
}

static int rdm_enable(struct fid *fid)
{
	struct efa_rdm_ep *ep = fid_to_ep(fid);

	if (!ep->rnr_retry_set)
		ep->rnr_retry = __atomic_load_n(&ep->dev->status->rnr_retry,
						__ATOMIC_RELAXED);
	/* zero-copy receive: the application's receives fill the ring */
	if (!ep->zcpy)
		kfab_efa_ring_post(&ep->qp->ring, ep->qp->ring.entries);
	return 0;
}

static void rdm_free(struct efa_rdm_ep *ep)
{
	/* the peers' held packets go back to the pools before the pools go */
	kfab_peers_fini(&ep->peers);
	if (ep->opes.n) {
		for (uint32_t i = 0; i < ep->opes.n; i++) {
			struct efa_rdm_ope *ope = efa_rdm_ope_at(ep, i);

			for (uint32_t k = 0; k < ope->nmrs; k++)
				efa_mr_put(ep->domain, &ope->mrs[k]);
		}
		efa_rdm_rx_fini(ep);
	}
	kfab_pool_fini(&ep->bufs);
	if (ep->qp)
		kfab_efa_destroy_qp(ep->dev, ep->qp);
	efa_rdm_zcpy_fini(ep);
	kfab_handles_fini(&ep->opes);
	free(ep->bounce);
	free(ep);
}

static void rdm_closed(struct fid *fid)
{
	struct efa_rdm_ep *ep = fid_to_ep(fid);
	struct kfab_domain *dom = ep->domain;

	/* what completed went out: a packet held back too, unless RNR */
	if (ep->held)
		efa_rdm_flush_held(ep);
	kfab_info(dom->kp, FI_LOG_EP_CTRL,
		  "endpoint qpn %u on %s closed: %llu eager, %llu medium, %llu longcts, %llu longread, %llu runtread messages; %llu RNR backoffs\n",
		  ep->qp->addr.qpn, dom->name,
		  (unsigned long long)ep->stats.eager_msgs,
		  (unsigned long long)ep->stats.medium_msgs,
		  (unsigned long long)ep->stats.longcts_msgs,
		  (unsigned long long)ep->stats.longread_msgs,
		  (unsigned long long)ep->stats.runtread_msgs,
		  (unsigned long long)ep->stats.rnr_events);
	rdm_free(ep);
}

static struct kfab_ep_ops rdm_fi_ops = {
	.ops = KFAB_EP_FI_OPS(efa_ep_ops_open),
	.bind_check = rdm_bind_check,
	.enable = rdm_enable,
	.free = rdm_closed,
	.rma = efa_rdm_rma,
	.cancel = rdm_cancel,
	.getopt = rdm_getopt,
	.setopt = rdm_setopt,
};

/* ------------------------------------------------------------------ */
/* fi_endpoint */

static uint32_t pow2_up(size_t n)
{
	uint32_t p = 1;

	while (p < n && p < (1U << 30))
		p <<= 1;
	return p;
}

static int rdm_setup(struct efa_rdm_ep *ep, const struct fi_info *info)
{
	const struct efa_params *p = ep->params;
	enum efa_tristate rdma = p->use_device_rdma;
	uint32_t tx_max, rx_max;
	const char *why;
	uint64_t n;

	ep->max_payload = efa_domain_of(ep->domain)->max_payload;
	ep->inject_size = info && info->tx_attr && info->tx_attr->inject_size ?
			  info->tx_attr->inject_size : ep->max_payload;
	ep->buf_size = ep->inject_size > EFA_RDM_ATOMIC_MAX ?
		       ep->inject_size : EFA_RDM_ATOMIC_MAX;
	kfab_pool_init(&ep->bufs, ep->buf_size, EFA_RDM_BUF_SLAB, 0);
	ep->medium_max = p->inter_max_medium_message_size;
	ep->read_min = p->inter_min_read_message_size;
	ep->rma_read_min = p->inter_min_read_write_size;
	ep->recvwin = pow2_up(p->recvwin_size);
	ep->caps = info && info->caps ? info->caps :
		   FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SOURCE |
		   FI_DIRECTED_RECV | FI_MULTI_RECV;
	kfab_rxq_init(&ep->rxq, &efa_rdm_rxq_ops, efa_rdm_kp(ep),
		      sizeof(struct efa_rdm_ux), &ep->rx.cq, &ep->rx.cntr);
	ep->rxq.min_multi_recv = ep->max_payload;
	/* the device's until FI_OPT_EFA_RNR_RETRY says otherwise */
	ep->rnr_retry = __atomic_load_n(&ep->dev->status->rnr_retry,
					__ATOMIC_RELAXED);
	if (rdma == EFA_ON && !device_can(ep, KFAB_EFA_RDMA_CAP_READ)) {
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_CTRL,
			  "fi_endpoint: FI_EFA_USE_DEVICE_RDMA=1 but device %s has no RDMA read (device_rdma in sysfs): unset it\n",
			  ep->domain->name);
		return -FI_EOPNOTSUPP;
	}
	ep->rdma_read = rdma != EFA_OFF &&
			device_can(ep, KFAB_EFA_RDMA_CAP_READ);
	ep->rdma_write = rdma != EFA_OFF &&
			 device_can(ep, KFAB_EFA_RDMA_CAP_WRITE);
	tx_max = info && info->tx_attr && info->tx_attr->size ?
		 (uint32_t)info->tx_attr->size : 256;
	rx_max = info && info->rx_attr && info->rx_attr->size ?
		 (uint32_t)info->rx_attr->size : EFA_RDM_RX_SIZE_DEFAULT;
	n = (uint64_t)tx_max + rx_max + EFA_RDM_OPE_INTERNAL;
	if (n > EFA_RDM_OPES_MAX) {
		n = EFA_RDM_OPES_MAX;
		if (tx_max > n / 2 - EFA_RDM_OPE_INTERNAL)
			tx_max = (uint32_t)(n / 2 - EFA_RDM_OPE_INTERNAL);
		if (rx_max > n / 2)
			rx_max = (uint32_t)(n / 2);
	}
	ep->tx_quota.max = tx_max;
	ep->rx_quota.max = rx_max;
	ep->bounce = malloc(ep->max_payload + 256);
	if (!ep->bounce ||
	    kfab_handles_init(&ep->opes, sizeof(struct efa_rdm_ope),
			      (uint32_t)n, EFA_RDM_IDX_BITS))
		return -FI_ENOMEM;
	ep->zcpy = efa_rdm_zcpy_check(ep, info, &why);
	if (ep->zcpy && efa_rdm_zcpy_init(ep))
		return -FI_ENOMEM;
	ep->stats.zcpy_rx = ep->zcpy;
	if (!ep->zcpy && ep->params->use_zcpy_rx)
		kfab_info(efa_rdm_kp(ep), FI_LOG_EP_CTRL,
			  "zero-copy receive off: %s\n", why);
	ep->rng = kfab_now_ns() ^ ((uint64_t)ep->qp->addr.qpn << 32) ^
		  (uintptr_t)ep;
	if (!ep->rng)
		ep->rng = 1;
	return 0;
}

int efa_rdm_open(struct kfab_domain *dom, struct fi_info *info,
		 struct fid_ep **out, void *context)
{
	struct efa_domain *ed = efa_domain_of(dom);
	struct efa_rdm_ep *ep;
	int ret;

	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		kfab_warn(dom->kp, FI_LOG_EP_CTRL, "fi_endpoint: out of memory\n");
		return -FI_ENOMEM;
	}
	kfab_progress_init(&ep->core, rdm_progress, rdm_arm, rdm_drain,
			   EFA_RDM_AUTO_USEC);
	kfab_ep_init(&ep->base, dom, &ep->core, &ep->tx, &ep->rx, &ep->name,
		     EFA_ADDRLEN, info);
	ep->base.rxq = &ep->rxq;
	ep->domain = dom;
	ep->params = dom->params;
	ep->dev = ed->dev;
	efa_rdm_peers_init(ep);
	ret = efa_qp_open(dom, &ep->qp, &ep->name);
	if (!ret) {
		ep->core.wake_fd = ep->qp->wake_fd;
		ret = rdm_setup(ep, info);
	}
	if (ret) {
		if (ret == -FI_ENOMEM)
			kfab_warn(dom->kp, FI_LOG_EP_CTRL,
				  "fi_endpoint: out of memory\n");
		rdm_free(ep);
		return ret;
	}
	kfab_ep_fid_init(&ep->base, FI_CLASS_EP, context, &rdm_fi_ops,
			 &rdm_msg_ops, &efa_rdm_atomic_ops.ops);
	kfab_domain_hold(dom);
	kfab_info(dom->kp, FI_LOG_EP_CTRL,
		  "FI_EP_RDM endpoint on %s: qpn %u, %zu bytes a packet, reorder window %u, device RDMA read %s write %s, zero-copy receive %s\n",
		  dom->name, ep->qp->addr.qpn, ep->max_payload, ep->recvwin,
		  ep->rdma_read ? "on" : "off",
		  ep->rdma_write ? "on" : "off", ep->zcpy ? "on" : "off");
	*out = &ep->base.fid;
	return 0;
}
