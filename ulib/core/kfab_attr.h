/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: fi_getinfo() hint matching that kfab_opx and kfab_efa share,
 * and the part of each fi_info they list alike (kfab_info_new()).
 *
 * Each helper checks one part of the hints against what a provider (or
 * one of its endpoint types) gives, settles what the fi_info says, and on
 * a mismatch logs an FI_LOG_INFO line "<prov>: no match[ for <type>]:
 * <why>" and returns -FI_ENODATA. What differs between providers comes in
 * as parameters; what only one provider decides stays in its attr file.
 */
#ifndef KFAB_ULIB_KFAB_ATTR_H
#define KFAB_ULIB_KFAB_ATTR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

/*
 * Both providers match all 64 tag bits. fi_endpoint(3): a format of
 * alternating ones and zeros is the generic, unstructured tag, and the
 * one a provider returns when the hints ask for none.
 */
#define KFAB_TAG_FORMAT_GENERIC 0xAAAAAAAAAAAAAAAAULL

/* Whom a no-match line speaks for. */
struct kfab_attr_who {
	const char *prov;	/* "kfab_efa" */
	const char *type;	/* "FI_EP_RDM", or NULL */
};

/* Logs the no-match line, returns -FI_ENODATA. */
int kfab_vnomatch(const struct kfab_attr_who *who, const char *fmt,
		  va_list ap);

/* The capabilities a provider or endpoint type gives. */
struct kfab_caps {
	uint64_t caps, tx_caps, rx_caps;
	uint64_t default_caps;	/* when the hints name none */
};

/*
 * hints->caps with domain_attr's, tx_attr's and rx_attr's checked
 * against @c, into *@caps: the defaults when none is named; otherwise the
 * ones named, FI_MSG and FI_TAGGED of the defaults when no primary one
 * is, FI_SEND and FI_RECV, or the four RMA access bits, when a primary
 * capability comes without them, FI_MULTI_RECV when a default.
 */
int kfab_match_caps(const struct kfab_attr_who *who,
		    const struct fi_info *hints, const struct kfab_caps *c,
		    uint64_t *caps);

/* What the hints settle that every provider lists alike. */
struct kfab_match {
	uint64_t caps;
	enum fi_threading threading;
	enum fi_progress control_progress;
	enum fi_progress data_progress;
	int mr_mode;
	uint64_t tx_op_flags;
	uint64_t rx_op_flags;
};

/* Protocol and version: FI_PROTO_UNSPEC or @proto, at most @version. */
int kfab_match_proto(const struct kfab_attr_who *who,
		     const struct fi_ep_attr *ep, uint32_t proto,
		     const char *proto_name, uint32_t version);

/*
 * A transmit or receive side (@what): op_flags within @op_flags, no
 * selective completion, FI_INJECT only with an @inject_size; msg_order
 * within @msg_order, no comp_order.
 */
int kfab_match_xfer(const struct kfab_attr_who *who, const char *what,
		    uint64_t op_flags, uint64_t msg_order,
		    uint64_t comp_order, uint64_t ours_op_flags,
		    uint64_t ours_msg_order, size_t inject_size);

/*
 * tx_attr->op_flags returned: those asked, with FI_TRANSMIT_COMPLETE when
 * they name no completion level.
 */
uint64_t kfab_tx_op_flags(uint64_t asked);

/*
 * @want, the default @ours when FI_THREAD_UNSPEC. FI_THREAD_DOMAIN
 * always; FI_THREAD_SAFE, _FID, _ENDPOINT, _COMPLETION only when @ours
 * is FI_THREAD_SAFE.
 */
int kfab_match_threading(const struct kfab_attr_who *who,
			 enum fi_threading want, enum fi_threading ours,
			 enum fi_threading *got);

/* @what ("data_progress"): FI_PROGRESS_AUTO when asked, else manual. */
int kfab_match_progress(const struct kfab_attr_who *who, const char *what,
			enum fi_progress want, enum fi_progress *got);

/*
 * The domain's threading (@ours when unspecified, kfab_match_threading())
 * and control and data progress (kfab_match_progress()) into @m.
 */
int kfab_match_threads(const struct kfab_attr_who *who,
		       const struct fi_domain_attr *d, enum fi_threading ours,
		       struct kfab_match *m);

/* What fi_mr(3)'s FI_MR_BASIC stands for from API 1.5 on. */
#define KFAB_MR_BASIC_BITS	(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | \
				 FI_MR_PROV_KEY)

/*
 * Whether @hint is fi_mr(3)'s legacy mr_mode: any value before API 1.5
 * (the enum), FI_MR_BASIC or FI_MR_SCALABLE after. Then FI_MR_LOCAL's
 * place is the FI_LOCAL_MR mode bit.
 */
int kfab_mr_legacy(uint32_t version, int hint);

/*
 * mr_mode for a provider that needs @need and, when asked, behaves as
 * FI_MR_BASIC (provider keys, virtual addresses: the domain's mr_mode,
 * kfab_mr.c). Legacy hints: FI_MR_UNSPEC before 1.5 is FI_MR_BASIC when
 * @need has its bits, else FI_MR_SCALABLE; FI_MR_BASIC always matches
 * and FI_MR_SCALABLE when @need has none of its bits; either must be
 * alone and comes back as asked. Other hints must hold every bit of
 * @need, which comes back.
 */
int kfab_match_mr_mode(const struct kfab_attr_who *who, uint32_t version,
		       int hint, int need, int *got);

/*
 * Whether a utility provider may layer over @who->prov: libfabric marks
 * the fi_getinfo() by which a utility provider (ofi_rxd, ofi_rxm) looks
 * for a core provider with KFAB_OFI_CORE_PROV_ONLY, a flag of its own
 * that no public header names. As libfabric itself rules for efa, shm and
 * sockets, that layering is offered only when the hints name @who->prov,
 * so an application that asks for FI_EP_RDM without naming a provider
 * gets the provider's own RDM endpoint, not a layered one before it.
 */
#define KFAB_OFI_CORE_PROV_ONLY (1ULL << 59)
int kfab_match_layering(const struct kfab_attr_who *who, uint64_t flags,
			const struct fi_info *hints);

/* The fabric name asked for, if any, is @fabric_name. */
int kfab_match_fabric(const struct kfab_attr_who *who,
		      const struct fi_info *hints, const char *fabric_name);

/* hints->addr_format: FI_FORMAT_UNSPEC or @format (@name). */
int kfab_match_addr_format(const struct kfab_attr_who *who,
			   uint32_t hint, uint32_t format, const char *name);

/*
 * A new fi_info with what @m settles and what every provider lists alike:
 * the capabilities (@c's tx_caps and rx_caps of them for each side,
 * FI_LOCAL_COMM and FI_REMOTE_COMM for the domain), @addrlen bytes of
 * @src and of @dest (none when NULL) in @addr_format, no completion
 * order, KFAB_IOV_LIMIT, one context each way, the domain @domain of the
 * fabric @fabric. The provider sets the rest. NULL when out of memory.
 */
struct fi_info *kfab_info_new(const struct kfab_match *m,
			      const struct kfab_caps *c, uint32_t addr_format,
			      size_t addrlen, const void *src,
			      const void *dest, const char *domain,
			      const char *fabric);

/*
 * What a provider (or one of its endpoint types) takes of the hints'
 * transmit and receive attributes and domain limits. tx_size, rx_size
 * and mr_cnt of 0: no limit at getinfo (a device's comes later).
 */
struct kfab_limits {
	uint64_t tx_op_flags, rx_op_flags;	/* the op flags it takes */
	uint64_t msg_order;
	size_t inject_size;
	size_t rma_iov_limit;
	size_t tx_size, rx_size;
	size_t mr_key_size;
	size_t cq_data_size;
	size_t cntr_cnt;
	size_t cq_cnt;
	size_t mr_cnt;
	size_t ep_ctx;			/* max_ep_tx_ctx, max_ep_rx_ctx */
};

/*
 * What every provider checks of @hints alike, stopping at the first
 * mismatch: the fabric name (@fabric_name), the capabilities against @c
 * (kfab_match_caps()), both sides against @l (kfab_match_xfer(), sizes,
 * KFAB_IOV_LIMIT) and the domain's limits, no shared contexts and no
 * authorization keys. Into @m: the capabilities, the sides' op flags
 * (the transmit side's with FI_TRANSMIT_COMPLETE when they name no
 * completion level). Without hints: @c's default capabilities.
 */
int kfab_match_hints(const struct kfab_attr_who *who,
		     const struct fi_info *hints, const char *fabric_name,
		     const struct kfab_caps *c, const struct kfab_limits *l,
		     struct kfab_match *m);

#endif /* KFAB_ULIB_KFAB_ATTR_H */
