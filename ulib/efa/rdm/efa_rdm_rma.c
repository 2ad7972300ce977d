// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa RDM: RMA (fi_rma(3)) and atomics (fi_atomic(3)) on regions with
 * provider keys (the device rkey) at virtual addresses (FI_MR_PROV_KEY,
 * FI_MR_VIRT_ADDR).
 *
 * Device RDMA (fi_efa(7)): with the device offering the direction and
 * FI_EFA_USE_DEVICE_RDMA / FI_OPT_EFA_USE_DEVICE_RDMA not off, a read, and
 * a write of at least FI_EFA_INTER_MIN_READ_WRITE_SIZE bytes without CQ
 * data, is one RDMA request the device performs at once; it waits for the
 * peer's handshake first. The target sees nothing (no counter, no
 * completion), as on EFA.
 *
 * Emulated, through the protocol (FI_OPT_EFA_EMULATED_* say which):
 *   write  EAGER_RTW (fits a packet) or LONGCTS_RTW, then CTS and DATA as
 *          a longcts message; the target answers RMA_RESP once written;
 *   read   RTR; the target sends READRSP packets, or RMA_RESP refusing;
 *   atomic RTA with operands (and compare values), applied by the target
 *          (kfab_atomic_apply()), answered by RMA_RESP with the values
 *          fetched; always emulated.
 * The target checks key, range and access (kfab_mr_access()) before it
 * touches memory; a refusal completes the initiator's operation with
 * FI_EACCES and err_data saying why. Remote CQ data (fi_writedata) is a
 * receive completion at the target with FI_RMA | FI_REMOTE_WRITE |
 * FI_REMOTE_CQ_DATA that consumes no posted receive. There are no target
 * counters (FI_REMOTE_READ/WRITE): device RDMA is invisible to the target,
 * and fi_getinfo offers no FI_RMA_EVENT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "efa_rdm.h"
#include "core/kfab_atomic.h"
#include "core/kfab_rma.h"

static const char *rma_why(int32_t status)
{
	switch (status) {
	case -ENOKEY:
	case -EACCES:
		return "the remote key is not a region of the target";
	case -ERANGE:
		return "the range is outside the target's region";
	case -EPERM:
		return "the target's region lacks the remote access asked";
	case -ESTALE:
		return "the target's region was unmapped since it was registered";
	case -EINVAL:
		return "the target refused the request (elements span regions?)";
	case -ENETDOWN:
		return "this device or the target's is Down";
	default:
		return "the target could not serve the request";
	}
}

static void rma_fail(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		     int32_t status)
{
	ope->err = status == -ENETDOWN ? FI_ENETDOWN : kfab_rma_err(status);
	ope->why = rma_why(status);
	efa_rdm_tx_complete(ep, ope);
}

/* ------------------------------------------------------------------ */
/* initiator */

static void rma_ext(const struct efa_rdm_ope *ope, struct efa_rdm_ext_rma *x)
{
	memset(x, 0, sizeof(*x));
	x->addr = ope->rma_addr;
	x->key = ope->rma_key;
	x->len = ope->len;
	x->datatype = ope->at_dt;
	x->op = ope->at_op;
	x->kind = ope->at_kind;
	x->count = ope->at_count;
}

/* Device RDMA: 1 done (or failed and completed), 0 emulate instead. */
static int rma_device(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	bool read = ope->op == EFA_OP_READ;
	uint64_t bytes = 0;
	int ret;

	ret = kfab_efa_rdma(ep->dev, ope->peer->dev_peer,
			    read ? KFAB_EFA_RDMA_READ : KFAB_EFA_RDMA_WRITE,
			    (uint32_t)ope->rma_key, ope->rma_addr, ope->iov,
			    (int)ope->iov_count, 0, &bytes);
	if (ret == -EOPNOTSUPP)
		return 0;
	if (ret) {
		/* the device checks rkey, bounds and access alike */
		rma_fail(ep, ope, ret == -EINVAL ? -ERANGE : ret);
		return 1;
	}
	if (read)
		ep->stats.device_reads++;
	else
		ep->stats.device_writes++;
	efa_rdm_tx_complete(ep, ope);
	return 1;
}

/* ope->iov up to @end in packets of @type for the peer's operation. */
static int rma_segments(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
			uint8_t type, size_t end)
{
	struct efa_rdm_hdr hdr = { .type = type, .id = ope->rhandle };

	return efa_rdm_segments(ep, ope, &hdr, end);
}

int efa_rdm_rma_push(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	struct efa_rdm_peer *peer = ope->peer;
	struct efa_rdm_ext_rma x;
	struct efa_rdm_hdr hdr = { .id = efa_rdm_handle(ope) };
	struct iovec one;
	int ret;

	if (ope->device) {
		if (!peer->hs_received) {
			/* the handshake is on its way: progress brings us back */
			efa_rdm_handshake(ep, peer);
			return -EAGAIN;
		}
		ope->device = false;
		if (!peer->dev_peer) {
			ret = efa_rdm_peer_map(ep, peer);
			if (ret) {
				rma_fail(ep, ope, ret == -FI_ENETDOWN ? ret :
						  -ECONNRESET);
				return 0;
			}
		}
		if (rma_device(ep, ope))
			return 0;
		if (ope->op == EFA_OP_READ)
			ep->stats.emulated_reads++;
		else
			ep->stats.emulated_writes++;
	}
	if (ope->state == EFA_TXS_WAIT) {
		/* a LONGCTS_RTW's CTS came: its DATA */
		ret = rma_segments(ep, ope, EFA_PKT_DATA, ope->allowed);
		if (ret && ret != -EAGAIN) {
			rma_fail(ep, ope, ret == -ENETDOWN ? ret : -ECONNRESET);
			return 0;
		}
		return ret;
	}
	rma_ext(ope, &x);
	hdr.flags = ope->flags & FI_REMOTE_CQ_DATA ? EFA_F_CQ_DATA : 0;
	hdr.data = ope->data;
	switch (ope->op) {
	case EFA_OP_WRITE:
		if (ope->len <= ep->max_payload - sizeof(x)) {
			hdr.type = EFA_PKT_EAGER_RTW;
			ret = efa_rdm_post(ep, peer, &hdr, &x, sizeof(x),
					   ope->iov, ope->iov_count, 0,
					   ope->len);
			ope->sent = ope->len;
		} else {
			hdr.type = EFA_PKT_LONGCTS_RTW;
			ret = efa_rdm_post(ep, peer, &hdr, &x, sizeof(x), NULL,
					   0, 0, 0);
		}
		break;
	case EFA_OP_READ:
		hdr.type = EFA_PKT_RTR;
		ret = efa_rdm_post(ep, peer, &hdr, &x, sizeof(x), NULL, 0, 0,
				   0);
		break;
	case EFA_OP_ATOMIC:
		hdr.type = EFA_PKT_RTA;
		one.iov_base = ope->owned;
		one.iov_len = x.len;
		ret = efa_rdm_post(ep, peer, &hdr, &x, sizeof(x), &one, 1, 0,
				   x.len);
		break;
	default:
		/* the target's READRSP */
		ret = rma_segments(ep, ope, EFA_PKT_READRSP, ope->len);
		if (ret == -EAGAIN)
			return ret;
		efa_rdm_tx_complete(ep, ope);
		return 0;
	}
	if (ret == -EAGAIN) {
		ope->sent = 0;
		return ret;
	}
	if (ret) {
		rma_fail(ep, ope, ret == -ENETDOWN ? ret : -ECONNRESET);
		return 0;
	}
	ope->state = EFA_TXS_WAIT;
	return 0;
}

static ssize_t rma_post(struct efa_rdm_ep *ep, bool read,
			const struct iovec *iov, size_t count,
			fi_addr_t peer_addr, uint64_t addr, uint64_t key,
			uint64_t data, void *context, uint64_t flags)
{
	struct efa_rdm_ope *ope;
	size_t len;
	int ret;

	ret = kfab_rma_check(efa_rdm_kp(ep), ep->caps, iov, count, SIZE_MAX,
			     ep->inject_size, flags, &len);
	if (ret)
		return ret;
	ope = efa_rdm_tx_ope(ep, peer_addr, read ? "read" : "write",
			     read ? EFA_OP_READ : EFA_OP_WRITE, context, flags,
			     &ret);
	if (!ope)
		return ret;
	ope->data = data;
	ope->len = len;
	ope->rma_addr = addr;
	ope->rma_key = key;
	ret = efa_rdm_ope_iov(ep, ope, iov, count, len, flags);
	if (ret)
		return ret;
	ope->device = read ? ep->rdma_read :
		      ep->rdma_write && len >= ep->rma_read_min &&
		      !(flags & FI_REMOTE_CQ_DATA);
	if (!ope->device) {
		if (read)
			ep->stats.emulated_reads++;
		else
			ep->stats.emulated_writes++;
	}
	efa_rdm_tx_start(ep, ope);
	return 0;
}

ssize_t efa_rdm_rma(struct fid_ep *fid, bool read, const struct iovec *iov,
		    size_t count, fi_addr_t peer, uint64_t addr, uint64_t key,
		    uint64_t data, void *context, uint64_t flags)
{
	struct efa_rdm_ep *ep = kfab_container_of(fid, struct efa_rdm_ep,
						  base.fid);
	ssize_t ret;

	ret = efa_ep_lock(ep->domain, &ep->base.enabled);
	if (kfab_unlikely(ret))
		return ret;
	ret = rma_post(ep, read, iov, count, peer, addr, key, data, context,
		       flags);
	kfab_unlock(&ep->domain->lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* initiator: atomics */

static size_t atomic_max(const struct efa_rdm_ep *ep)
{
	size_t room = ep->max_payload - sizeof(struct efa_rdm_ext_rma);

	return room < EFA_RDM_ATOMIC_MAX ? room : EFA_RDM_ATOMIC_MAX;
}

static ssize_t atomic_post(struct efa_rdm_ep *ep, enum kfab_atomic_kind kind,
			   const struct fi_msg_atomic *msg,
			   const struct fi_ioc *comparev, size_t ccount,
			   const struct fi_ioc *resultv, size_t rcount,
			   uint64_t flags)
{
	struct efa_rdm_ope *ope;
	uint8_t *buf;
	int ret;

	ret = kfab_atomic_check(efa_rdm_kp(ep), ep->caps, atomic_max(ep),
				ep->inject_size, kind, msg, comparev, ccount,
				resultv, rcount, flags);
	if (ret)
		return ret;
	buf = efa_rdm_buf_get(ep);
	if (!buf)
		return -FI_ENOMEM;
	ope = efa_rdm_tx_ope(ep, msg->addr, "atomic", EFA_OP_ATOMIC,
			     msg->context, flags, &ret);
	if (!ope) {
		efa_rdm_buf_put(ep, buf);
		return ret;
	}
	ope->res_count = kfab_atomic_results(ope->res_iov, kind,
					     msg->datatype, resultv, rcount);
	ope->owned = buf;
	ope->len = kfab_atomic_pack(buf, kind, msg, comparev, ccount);
	ope->rma_key = msg->rma_iov[0].key;
	ope->rma_addr = msg->rma_iov[0].addr;
	ope->at_dt = (uint8_t)msg->datatype;
	ope->at_op = (uint8_t)msg->op;
	ope->at_kind = (uint8_t)kind;
	ope->at_count = (uint32_t)msg->rma_iov[0].count;
	ep->stats.atomics++;
	efa_rdm_tx_start(ep, ope);
	return 0;
}

static ssize_t atomic_entry(struct fid_ep *fid, enum kfab_atomic_kind kind,
			    const struct fi_msg_atomic *msg,
			    const struct fi_ioc *comparev,
			    void **compare_desc, size_t ccount,
			    struct fi_ioc *resultv, void **result_desc,
			    size_t rcount, uint64_t flags)
{
	struct efa_rdm_ep *ep = kfab_container_of(fid, struct efa_rdm_ep,
						  base.fid);
	ssize_t ret;

	(void)compare_desc;
	(void)result_desc;
	ret = efa_ep_lock(ep->domain, &ep->base.enabled);
	if (kfab_unlikely(ret))
		return ret;
	ret = atomic_post(ep, kind, msg, comparev, ccount, resultv, rcount,
			  flags);
	kfab_unlock(&ep->domain->lock);
	return ret;
}

static size_t atomic_max_bytes(struct fid_ep *fid)
{
	struct efa_rdm_ep *ep = kfab_container_of(fid, struct efa_rdm_ep,
						  base.fid);

	return ep->caps & FI_ATOMIC ? atomic_max(ep) : 0;
}

struct kfab_atomic_ops efa_rdm_atomic_ops = {
	.ops = KFAB_ATOMIC_FI_OPS,
	.post = atomic_entry,
	.max_bytes = atomic_max_bytes,
};

/* ------------------------------------------------------------------ */
/* target */

static void rma_answer(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		       uint32_t id, int32_t status, const void *buf,
		       size_t len)
{
	struct efa_rdm_hdr hdr = { .type = EFA_PKT_RMA_RESP, .id = id,
				   .data = (uint64_t)(int64_t)status };

	efa_rdm_post_ctl(ep, peer, &hdr, buf, len);
}

/* A write landed: remote CQ data. */
static void rma_written(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			bool cq_data, uint64_t data, size_t len)
{
	if (cq_data)
		kfab_cq_write(ep->rx.cq, NULL,
			      FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
			      len, NULL, data, 0, efa_rdm_peer_src(ep, peer));
}

void efa_rdm_rma_write_done(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	rma_written(ep, ope->peer, ope->rxr.msg_flags & FI_REMOTE_CQ_DATA,
		    ope->rxr.msg_data, ope->rxr.msg_len);
	rma_answer(ep, ope->peer, ope->shandle, 0, NULL, 0);
	efa_rdm_ope_put(ep, ope);
}

/*
 * The @iov of the memory @peer's request @hdr names, which @access must
 * allow: their count, or <0 answered.
 */
static int target_access(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			 const struct efa_rdm_hdr *hdr,
			 const struct efa_rdm_ext_rma *x, uint64_t access,
			 struct iovec *iov)
{
	int n = kfab_mr_access(ep->domain, x->key, x->addr, x->len, access,
			       iov);

	if (n < 0)
		rma_answer(ep, peer, hdr->id, n, NULL, 0);
	return n;
}

/*
 * The target's operation @op of @kind for @peer's request @hdr over the
 * @n regions of @iov; NULL when there is none, -ENOMEM answered.
 */
static struct efa_rdm_ope *target_ope(struct efa_rdm_ep *ep,
				      struct efa_rdm_peer *peer,
				      const struct efa_rdm_hdr *hdr,
				      enum efa_rdm_ope_kind kind,
				      enum efa_rdm_op op,
				      const struct iovec *iov, int n)
{
	struct efa_rdm_ope *ope = efa_rdm_ope_internal(ep, kind);

	if (!ope) {
		rma_answer(ep, peer, hdr->id, -ENOMEM, NULL, 0);
		return NULL;
	}
	ope->op = op;
	ope->peer = peer;
	memcpy(ope->iov, iov, (size_t)n * sizeof(*iov));
	ope->iov_count = (uint32_t)n;
	return ope;
}

static void target_write(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			 const struct efa_rdm_hdr *hdr,
			 const struct efa_rdm_ext_rma *x,
			 const uint8_t *payload, uint32_t len)
{
	struct iovec iov[KFAB_IOV_LIMIT];
	bool cq_data = hdr->flags & EFA_F_CQ_DATA;
	struct efa_rdm_ope *ope;
	int n;

	n = target_access(ep, peer, hdr, x, FI_REMOTE_WRITE, iov);
	if (n < 0)
		return;
	if (hdr->type == EFA_PKT_EAGER_RTW) {
		if (len != x->len) {
			rma_answer(ep, peer, hdr->id, -EINVAL, NULL, 0);
			return;
		}
		kfab_buf_to_iov(iov, (size_t)n, 0, payload, len);
		rma_written(ep, peer, cq_data, hdr->data, len);
		rma_answer(ep, peer, hdr->id, 0, NULL, 0);
		return;
	}
	ope = target_ope(ep, peer, hdr, EFA_OPE_RX, EFA_OP_WRITE_RECV, iov, n);
	if (!ope)
		return;
	ope->rxr.len = x->len;
	ope->rxr.msg_len = x->len;
	ope->shandle = hdr->id;
	ope->rxr.msg_flags = cq_data ? FI_REMOTE_CQ_DATA : 0;
	ope->rxr.msg_data = hdr->data;
	if (!x->len) {
		efa_rdm_rma_write_done(ep, ope);
		return;
	}
	efa_rdm_rx_cts(ep, ope);
}

static void target_read(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			const struct efa_rdm_hdr *hdr,
			const struct efa_rdm_ext_rma *x)
{
	struct iovec iov[KFAB_IOV_LIMIT];
	struct efa_rdm_ope *ope;
	int n;

	n = target_access(ep, peer, hdr, x, FI_REMOTE_READ, iov);
	if (n < 0)
		return;
	if (!x->len) {
		rma_answer(ep, peer, hdr->id, 0, NULL, 0);
		return;
	}
	ope = target_ope(ep, peer, hdr, EFA_OPE_TX, EFA_OP_READRSP, iov, n);
	if (!ope)
		return;
	ope->len = x->len;
	ope->rhandle = hdr->id;
	efa_rdm_tx_start(ep, ope);
}

static void target_atomic(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			  const struct efa_rdm_hdr *hdr,
			  const struct efa_rdm_ext_rma *x,
			  const uint8_t *payload, uint32_t len)
{
	enum fi_datatype dt = (enum fi_datatype)x->datatype;
	enum fi_op op = (enum fi_op)x->op;
	enum kfab_atomic_kind kind = (enum kfab_atomic_kind)x->kind;
	struct iovec iov[KFAB_IOV_LIMIT];
	size_t size, bytes = 0, want;
	uint8_t res[EFA_RDM_ATOMIC_MAX];
	int32_t status;
	uint64_t access;
	int n = 0;

	status = x->kind > KFAB_ATOMIC_COMPARE ||
		 kfab_atomic_valid(dt, op, kind) ? -EOPNOTSUPP : 0;
	if (!status) {
		size = kfab_atomic_dtsize(dt);
		bytes = (size_t)x->count * size;
		want = (op == FI_ATOMIC_READ ? 0 : bytes) +
		       (kind == KFAB_ATOMIC_COMPARE ? bytes : 0);
		if (bytes > EFA_RDM_ATOMIC_MAX || len != want)
			status = -EINVAL;
	}
	if (!status) {
		access = kind == KFAB_ATOMIC_WRITE ? FI_REMOTE_WRITE :
			 op == FI_ATOMIC_READ ? FI_REMOTE_READ :
			 FI_REMOTE_READ | FI_REMOTE_WRITE;
		n = kfab_mr_access(ep->domain, x->key, x->addr, bytes, access,
				   iov);
		status = n < 0 ? n : n > 1 ? -EINVAL : 0;
	}
	if (!status) {
		kfab_atomic_apply(dt, op, n ? iov[0].iov_base : NULL,
				  op == FI_ATOMIC_READ ? NULL : payload,
				  kind == KFAB_ATOMIC_COMPARE ?
				  payload + bytes : NULL,
				  kind == KFAB_ATOMIC_WRITE ? NULL : res,
				  x->count);
	}
	rma_answer(ep, peer, hdr->id, status, res,
		   !status && kind != KFAB_ATOMIC_WRITE ? bytes : 0);
}

/* The initiator: READRSP bytes, or the target's answer. */
static void rma_reply(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		      const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		      uint32_t len)
{
	struct efa_rdm_ope *ope = efa_rdm_ope_lookup(ep, hdr->id, EFA_OPE_TX);
	int32_t status;

	if (!ope || ope->peer != peer)
		return;
	if (hdr->type == EFA_PKT_READRSP) {
		if (ope->op != EFA_OP_READ || hdr->tag + len > ope->len)
			return;
		kfab_buf_to_iov(ope->iov, ope->iov_count, hdr->tag,
				    payload, len);
		ope->received += len;
		if (ope->received >= ope->len)
			efa_rdm_tx_complete(ep, ope);
		return;
	}
	status = (int32_t)hdr->data;
	if (status) {
		rma_fail(ep, ope, status);
		return;
	}
	if (ope->op == EFA_OP_ATOMIC && ope->res_count)
		kfab_buf_to_iov(ope->res_iov, ope->res_count, 0, payload,
				    len);
	efa_rdm_tx_complete(ep, ope);
}

void efa_rdm_rma_recv(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		      const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		      uint32_t len)
{
	struct efa_rdm_ext_rma x;

	if (hdr->type == EFA_PKT_READRSP || hdr->type == EFA_PKT_RMA_RESP) {
		rma_reply(ep, peer, hdr, payload, len);
		return;
	}
	if (len < sizeof(x))
		return;
	memcpy(&x, payload, sizeof(x));
	payload += sizeof(x);
	len -= sizeof(x);
	switch (hdr->type) {
	case EFA_PKT_EAGER_RTW:
	case EFA_PKT_LONGCTS_RTW:
		target_write(ep, peer, hdr, &x, payload, len);
		break;
	case EFA_PKT_RTR:
		target_read(ep, peer, hdr, &x);
		break;
	case EFA_PKT_RTA:
		target_atomic(ep, peer, hdr, &x, payload, len);
		break;
	default:
		break;
	}
}
