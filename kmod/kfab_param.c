// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_core: module parameters of the device modules, validated.
 *
 * A struct kfab_uint_param carries its value and its range; the setter
 * refuses anything else with -EINVAL and says why in the kernel log, so a
 * bad value fails insmod instead of being clamped.
 */

#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nodemask.h>
#include <linux/numa.h>

#include "kfab_core.h"

int kfab_uint_param_parse(const char *s, const struct kfab_uint_param *p,
			  unsigned int *out)
{
	unsigned int v;

	if (!s || kstrtouint(s, 0, &v))
		return -EINVAL;
	if (v < p->min || v > p->max)
		return -EINVAL;
	if (p->pow2 && !is_power_of_2(v))
		return -EINVAL;
	*out = v;
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_uint_param_parse);

static int kfab_uint_param_set(const char *val, const struct kernel_param *kp)
{
	struct kfab_uint_param *p = kp->arg;
	unsigned int v;
	int ret;

	ret = kfab_uint_param_parse(val, p, &v);
	if (ret) {
		pr_err("%s: %s: \"%s\" is not %s in %u..%u\n",
		       kp->mod ? module_name(kp->mod) : "kfab", kp->name, val,
		       p->pow2 ? "a power of two" : "a number", p->min, p->max);
		return ret;
	}
	p->val = v;
	return 0;
}

static int kfab_uint_param_get(char *buf, const struct kernel_param *kp)
{
	const struct kfab_uint_param *p = kp->arg;

	return scnprintf(buf, PAGE_SIZE, "%u\n", p->val);
}

const struct kernel_param_ops kfab_uint_param_ops = {
	.set = kfab_uint_param_set,
	.get = kfab_uint_param_get,
};
EXPORT_SYMBOL_GPL(kfab_uint_param_ops);

bool kfab_param_node_valid(int node)
{
	if (node == NUMA_NO_NODE)
		return true;
	return node >= 0 && node < MAX_NUMNODES && node_online(node);
}
EXPORT_SYMBOL_GPL(kfab_param_node_valid);

int kfab_param_nodes_check(const char *name, const char *what,
			   const int *nodes, unsigned int num,
			   unsigned int count)
{
	unsigned int i;

	if (num > count) {
		pr_err("%s: %u entries for %u %s\n", name, num, count, what);
		return -EINVAL;
	}
	for (i = 0; i < num; i++) {
		if (!kfab_param_node_valid(nodes[i])) {
			pr_err("%s: %d is not -1 or an online node\n", name,
			       nodes[i]);
			return -EINVAL;
		}
	}
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_param_nodes_check);

int kfab_param_node(const int *nodes, unsigned int num, u32 index)
{
	unsigned int nth;
	int node;

	if (index < num)
		return nodes[index];
	nth = index % num_online_nodes();
	for_each_online_node(node)
		if (nth-- == 0)
			return node;
	return NUMA_NO_NODE;
}
EXPORT_SYMBOL_GPL(kfab_param_node);
