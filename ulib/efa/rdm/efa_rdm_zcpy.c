// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: kfab_efa's zero-copy receive (FI_EFA_USE_ZCPY_RX).
 *
 * When the endpoint's info allows it (efa_rdm_zcpy_check()), the ring
 * holds no buffer of the provider's: each slot is posted for one
 * application receive, with the receive's buffer as the slot's posted
 * buffer (step P of uapi/kfab_efa.h) when it is one registered iovec. The
 * sender's device writes a payload that fits straight into it, and an
 * eager message landing there completes its receive without a copy.
 *
 * Every packet takes the next slot, whatever it carries. A receive whose
 * slot another packet took (a handshake, a segment, a message bigger
 * than its buffer) is posted again. The receives are the device's receive
 * queue: peers see RNR while none is posted, receives complete in the
 * order messages arrive rather than the order posted, and one handed to
 * the device cannot be cancelled (fi_efa(7)).
 */
#include <stdlib.h>
#include <string.h>

#include "efa_rdm.h"

bool efa_rdm_zcpy_check(const struct efa_rdm_ep *ep,
			const struct fi_info *info, const char **why)
{
	const uint64_t no = FI_TAGGED | FI_DIRECTED_RECV | FI_MULTI_RECV |
			    FI_RMA | FI_ATOMIC;

	if (!ep->params->use_zcpy_rx)
		*why = "FI_EFA_USE_ZCPY_RX=0";
	else if (!info || !info->tx_attr || !info->rx_attr || !info->ep_attr)
		*why = "the endpoint was opened without an fi_info";
	else if (!(ep->caps & FI_MSG) || (ep->caps & no))
		*why = "its caps are not FI_MSG alone (no FI_TAGGED, FI_DIRECTED_RECV, FI_MULTI_RECV, FI_RMA, FI_ATOMIC)";
	else if ((ep->caps & (FI_SEND | FI_RECV)) == FI_SEND)
		*why = "it does not receive";
	else if ((info->tx_attr->msg_order | info->rx_attr->msg_order) &
		 FI_ORDER_SAS)
		*why = "msg_order asks for FI_ORDER_SAS";
	else if (info->ep_attr->max_msg_size > ep->max_payload)
		*why = "ep_attr->max_msg_size is more than one packet carries";
	else if (info->tx_attr->op_flags & FI_DELIVERY_COMPLETE)
		*why = "tx op_flags ask for FI_DELIVERY_COMPLETE";
	else
		return true;
	return false;
}

int efa_rdm_zcpy_init(struct efa_rdm_ep *ep)
{
	ep->zslot = calloc(ep->qp->ring.entries, sizeof(*ep->zslot));
	ep->zbounce = malloc(ep->qp->ring.mtu);
	kfab_list_init(&ep->zwait);
	return ep->zslot && ep->zbounce ? 0 : -FI_ENOMEM;
}

void efa_rdm_zcpy_fini(struct efa_rdm_ep *ep)
{
	free(ep->zslot);
	free(ep->zbounce);
}

void efa_rdm_zcpy_fill(struct efa_rdm_ep *ep)
{
	struct kfab_efa_ring *ring = &ep->qp->ring;

	while (!kfab_list_empty(&ep->zwait)) {
		struct efa_rdm_ope *ope = kfab_list_first(&ep->zwait,
							  struct efa_rdm_ope,
							  link);
		struct kfab_efa_ubuf ub = {
			.addr = (uintptr_t)ope->iov[0].iov_base,
			.rkey = ope->nmrs ? ope->mrs[0].mr->rkey : 0,
			.len = ope->rxr.len < ring->mtu ?
			       (uint32_t)ope->rxr.len : ring->mtu,
		};
		uint32_t t;

		if (kfab_efa_ring_post_ubuf(ring, ope->nmrs ? &ub : NULL, &t))
			return;
		kfab_list_del(&ope->link);
		ep->zslot[t & (ring->entries - 1)] = ope;
	}
}

void efa_rdm_zcpy_recv(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	const uint32_t access = KFAB_EFA_ACCESS_LOCAL_WRITE |
				KFAB_EFA_ACCESS_REMOTE_WRITE;

	/* without a region the slot's own buffer takes the payload */
	if (ope->iov_count == 1 && ope->rxr.len &&
	    !efa_mr_get(ep->domain, ope->desc[0], ope->iov[0].iov_base,
			ope->rxr.len, access, &ope->mrs[0]))
		ope->nmrs = 1;
	kfab_list_add_tail(&ope->link, &ep->zwait);
	efa_rdm_zcpy_fill(ep);
}

int efa_rdm_zcpy_cancel(struct efa_rdm_ep *ep, void *context)
{
	struct kfab_list *pos;

	kfab_list_for_each(pos, &ep->zwait) {
		struct efa_rdm_ope *ope =
			kfab_list_entry(pos, struct efa_rdm_ope, link);

		if (ope->rxr.context != context)
			continue;
		kfab_list_del(&ope->link);
		kfab_cntr_add(ep->rx.cntr, FI_ECANCELED);
		kfab_cq_write_err(ep->rx.cq, context, FI_RECV | FI_MSG,
				  FI_ECANCELED, 0, 0, 0, 0, 0,
				  FI_ADDR_NOTAVAIL);
		efa_rdm_rx_release(ep, ope);
		return 0;
	}
	for (uint32_t i = 0; i < ep->qp->ring.entries; i++) {
		if (ep->zslot[i] && ep->zslot[i]->rxr.context == context) {
			kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
				  "fi_cancel: a zero-copy receive is the device's until a packet takes it: it cannot be cancelled (FI_EFA_USE_ZCPY_RX=0 allows it)\n");
			return -FI_EOPNOTSUPP;
		}
	}
	return -FI_ENOENT;
}

void efa_rdm_zcpy_packet(struct efa_rdm_ep *ep,
			 struct kfab_efa_ring_entry *ent)
{
	uint32_t slot = ent->ticket & (ep->qp->ring.entries - 1);
	struct efa_rdm_ope *ope = ep->zslot[slot];
	struct efa_rdm_hdr hdr;
	uint32_t handle;

	ep->zslot[slot] = NULL;
	if (kfab_unlikely(!ope)) {
		efa_rdm_rx_packet(ep, ent);
		return;
	}
	if (ent->ubuf) {
		memcpy(&hdr, ent->hdr, sizeof(hdr));
		if (ent->len > ope->iov[0].iov_len)
			ent->len = (uint32_t)ope->iov[0].iov_len;
		if (hdr.type == EFA_PKT_EAGER_RTM &&
		    !(hdr.flags & EFA_F_TAGGED)) {
			ent->payload = ope->iov[0].iov_base;
			ep->stats.zcpy_rx_msgs++;
		} else {
			/* processed as from the slot: the receive waits on */
			memcpy(ep->zbounce, ope->iov[0].iov_base, ent->len);
			ent->payload = ep->zbounce;
		}
	}
	/* the first the packet matches is the receive of its slot */
	handle = efa_rdm_handle(ope);
	kfab_list_add(&ope->rxr.te.link, &ep->rxq.tagm.posted[0]);
	efa_rdm_rx_packet(ep, ent);
	if (ope->h.kind == EFA_OPE_RX && efa_rdm_handle(ope) == handle &&
	    !kfab_list_empty(&ope->rxr.te.link)) {
		kfab_list_del(&ope->rxr.te.link);
		ep->stats.zcpy_rx_reposts++;
		kfab_list_add(&ope->link, &ep->zwait);
	}
}
