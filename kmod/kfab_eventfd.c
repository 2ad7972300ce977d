// SPDX-License-Identifier: GPL-2.0
/*
 * One eventfd attached to a device object (an HFI context, an EFA QP).
 *
 * The lock only guards the pointer: signalling happens under it, so a
 * concurrent replace cannot put the context we are signalling, while the
 * put of a replaced context happens outside it. Interrupts are disabled
 * under the lock so that signalling is allowed from any context, as for
 * eventfd_signal() itself.
 */
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/eventfd.h>
#include <linux/export.h>

#include "kfab_core.h"

void kfab_eventfd_init(struct kfab_eventfd *e)
{
	spin_lock_init(&e->lock);
	e->ctx = NULL;
}
EXPORT_SYMBOL_GPL(kfab_eventfd_init);

/* Attach @ctx (or nothing) in place of the old context, which is put. */
static void kfab_eventfd_replace(struct kfab_eventfd *e,
				 struct eventfd_ctx *ctx)
{
	struct eventfd_ctx *old;
	unsigned long flags;

	spin_lock_irqsave(&e->lock, flags);
	old = e->ctx;
	e->ctx = ctx;
	spin_unlock_irqrestore(&e->lock, flags);

	if (old)
		eventfd_ctx_put(old);
}

int kfab_eventfd_set(struct kfab_eventfd *e, int fd)
{
	struct eventfd_ctx *ctx = NULL;

	if (fd < -1)
		return -EINVAL;
	if (fd >= 0) {
		/* -EBADF: not an open fd; -EINVAL: not an eventfd. */
		ctx = eventfd_ctx_fdget(fd);
		if (IS_ERR(ctx))
			return PTR_ERR(ctx);
	}
	kfab_eventfd_replace(e, ctx);
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_eventfd_set);

bool kfab_eventfd_signal(struct kfab_eventfd *e)
{
	unsigned long flags;
	bool signalled = false;

	spin_lock_irqsave(&e->lock, flags);
	if (e->ctx) {
		eventfd_signal(e->ctx, 1);
		signalled = true;
	}
	spin_unlock_irqrestore(&e->lock, flags);
	return signalled;
}
EXPORT_SYMBOL_GPL(kfab_eventfd_signal);

/*
 * Step 4' of the queue protocol in uapi/kfab_hfi.h, done by the kernel on
 * behalf of a producer (SDMA with KFAB_HFI_SDMA_NOTIFY) after its stores.
 *
 * The smp_mb() orders the caller's stores (the copied payload, a published
 * entry) before the load of *@armed. It pairs with the consumer's full
 * fence in step 6 between store(armed, 1) and its re-check of the queue:
 * either the consumer's re-check sees our data, or we see armed == 1 and
 * signal. The xchg() makes exactly one of the racing producers (kernel or
 * user) win the wakeup. The plain READ_ONCE() first avoids dirtying the
 * shared cache line when the consumer is polling, as userspace does.
 *
 * *@armed is user-shared memory: it is only read once and only compared.
 */
bool kfab_eventfd_wake_armed(u32 *armed, struct kfab_eventfd *e)
{
	smp_mb();	/* our stores before the load of armed; pairs with 6. */
	if (READ_ONCE(*armed) && xchg(armed, 0))
		return kfab_eventfd_signal(e);
	return false;
}
EXPORT_SYMBOL_GPL(kfab_eventfd_wake_armed);

void kfab_eventfd_release(struct kfab_eventfd *e)
{
	kfab_eventfd_replace(e, NULL);
}
EXPORT_SYMBOL_GPL(kfab_eventfd_release);
