// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_mrail: rail discovery (mrail_rail.h says what an address names and
 * what each rail is asked for).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "mrail_rail.h"
#include "core/kfab_log.h"
#include "core/kfab_param.h"

#define ADDR_VAR	"FI_OFI_MRAIL_ADDR"
#define SELF		"kfab_mrail"

#define RMA_DIRS	(FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* One address of FI_OFI_MRAIL_ADDR, resolved. */
struct rail_addr {
	const char *addr;		/* as given */
	const char *prov;		/* its core provider */
	char domain[32];		/* a kfab rail's domain, else "" */
	struct sockaddr_storage sa;	/* an IP rail's source address */
	socklen_t salen;
};

/* @s is <prefix><N>, N decimal without leading zeros */
static bool device_name(const char *s, const char *prefix)
{
	size_t n = strlen(prefix), digits;

	if (strncmp(s, prefix, n))
		return false;
	s += n;
	digits = strspn(s, "0123456789");
	return digits && !s[digits] && digits <= 9 &&
	       (s[0] != '0' || digits == 1);
}

static void sa_set_port(struct rail_addr *r, uint16_t port)
{
	if (r->sa.ss_family == AF_INET)
		((struct sockaddr_in *)&r->sa)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)&r->sa)->sin6_port = htons(port);
}

/* an FI_ADDR_STR port: none, or ":<0..65535>" */
static int port_parse(const char *s, uint16_t *port)
{
	uint64_t v;

	*port = 0;
	if (!*s)
		return 0;
	if (*s != ':' || kfab_parse_u64(s + 1, &v) || v > UINT16_MAX)
		return -FI_EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* fi_sockaddr_in://A.B.C.D[:port], fi_sockaddr_in6://[addr][:port] */
static int addr_str_parse(struct rail_addr *r)
{
	static const char in4[] = "fi_sockaddr_in://";
	static const char in6[] = "fi_sockaddr_in6://";
	char host[INET6_ADDRSTRLEN];
	const char *h, *end;
	uint16_t port;

	memset(&r->sa, 0, sizeof(r->sa));
	if (!strncmp(r->addr, in4, sizeof(in4) - 1)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&r->sa;

		h = r->addr + sizeof(in4) - 1;
		end = h + strcspn(h, ":");
		sin->sin_family = AF_INET;
		r->salen = sizeof(*sin);
		if ((size_t)(end - h) >= sizeof(host))
			goto bad;
		memcpy(host, h, (size_t)(end - h));
		host[end - h] = '\0';
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			goto bad;
	} else if (!strncmp(r->addr, in6, sizeof(in6) - 1)) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&r->sa;

		h = r->addr + sizeof(in6) - 1;
		end = strchr(h, ']');
		sin6->sin6_family = AF_INET6;
		r->salen = sizeof(*sin6);
		if (*h++ != '[' || !end || (size_t)(end - h) >= sizeof(host))
			goto bad;
		memcpy(host, h, (size_t)(end - h));
		host[end - h] = '\0';
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			goto bad;
		end++;
	} else {
		kfab_log(KFAB_LOG_WARN,
			 ADDR_VAR ": rail address %s: an FI_ADDR_STR rail address must be fi_sockaddr_in://A.B.C.D[:port] or fi_sockaddr_in6://[addr][:port]; for a kfab device give its name (hfi0, efa0)",
			 r->addr);
		return -FI_EINVAL;
	}
	if (port_parse(end, &port))
		goto bad;
	sa_set_port(r, port);
	return 0;
bad:
	kfab_log(KFAB_LOG_WARN,
		 ADDR_VAR ": rail address %s is not a well-formed FI_ADDR_STR address: write fi_sockaddr_in://A.B.C.D[:port] or fi_sockaddr_in6://[addr][:port]",
		 r->addr);
	return -FI_EINVAL;
}

/* the OS interface @r->addr's first IPv4 address, else its first IPv6 */
static bool iface_resolve(struct rail_addr *r)
{
	struct ifaddrs *ifa, *i, *v6 = NULL;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, r->addr))
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			break;
		if (i->ifa_addr->sa_family == AF_INET6 && !v6)
			v6 = i;
	}
	if (!i)
		i = v6;
	if (i) {
		r->salen = i->ifa_addr->sa_family == AF_INET ?
			   sizeof(struct sockaddr_in) :
			   sizeof(struct sockaddr_in6);
		memcpy(&r->sa, i->ifa_addr, r->salen);
		sa_set_port(r, 0);
		found = true;
	}
	freeifaddrs(ifa);
	return found;
}

/* an IP address or a host name, port 0 */
static int host_resolve(struct rail_addr *r)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int ret = getaddrinfo(r->addr, NULL, &hints, &res);

	if (ret) {
		kfab_log(KFAB_LOG_WARN,
			 ADDR_VAR ": rail address %s is not a kfab device (hfi<N>, efa<N>), an interface, an IP address or a host name that resolves (%s): correct it",
			 r->addr, gai_strerror(ret));
		return -FI_ENODATA;
	}
	r->salen = res->ai_addrlen;
	memcpy(&r->sa, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/*
 * The hints' prov_name without its kfab_mrail components into *@prov
 * (NULL: none), a new string. Exclusions ("^tcp") go too: passed on
 * alone they would let fi_getinfo() call kfab_mrail again.
 */
static int hinted_prov(const struct fi_info *hints, char **prov)
{
	const char *s = hints && hints->fabric_attr ?
			hints->fabric_attr->prov_name : NULL;
	char *out, *o;

	*prov = NULL;
	if (!s)
		return 0;
	out = calloc(1, strlen(s) + 1);
	if (!out)
		return -FI_ENOMEM;
	o = out;
	for (const char *f = s;; f++) {
		size_t len = strcspn(f, ";");

		if (len && *f != '^' &&
		    (len != strlen(SELF) || strncasecmp(f, SELF, len))) {
			if (o != out)
				*o++ = ';';
			memcpy(o, f, len);
			o += len;
		}
		f += len;
		if (!*f)
			break;
	}
	if (o == out)
		free(out);
	else
		*prov = out;
	return 0;
}

/* Classifies and resolves @r->addr; an IP rail's provider is @hinted's. */
static int rail_resolve(struct rail_addr *r, const char *hinted)
{
	if (device_name(r->addr, "hfi") || device_name(r->addr, "efa")) {
		bool efa = r->addr[0] == 'e';

		r->prov = efa ? "kfab_efa" : "kfab_opx";
		snprintf(r->domain, sizeof(r->domain), "%s%s", r->addr,
			 efa ? "-rdm" : "");
		if (hinted && strcasecmp(hinted, r->prov)) {
			kfab_log(KFAB_LOG_INFO,
				 ADDR_VAR ": rail %s is a %s device, the hints ask for provider %s",
				 r->addr, r->prov, hinted);
			return -FI_ENODATA;
		}
		return 0;
	}
	r->prov = hinted ? hinted : MRAIL_IP_PROV;
	if (strstr(r->addr, "://"))
		return addr_str_parse(r);
	if (iface_resolve(r))
		return 0;
	return host_resolve(r);
}

static bool sa_equal(const struct rail_addr *a, const struct rail_addr *b)
{
	return a->salen && a->salen == b->salen &&
	       !memcmp(&a->sa, &b->sa, a->salen);
}

/* Same provider for all, no address twice. */
static int rails_check(const struct rail_addr *r, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (strcmp(r[i].prov, r[0].prov)) {
			kfab_log(KFAB_LOG_WARN,
				 ADDR_VAR ": rail %s is of %s, rail %s of %s: all rails must be of one core provider: list only kfab_opx units (hfi<N>), only kfab_efa devices (efa<N>) or only IP rails",
				 r[0].addr, r[0].prov, r[i].addr, r[i].prov);
			return -FI_EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (sa_equal(&r[i], &r[j])) {
				kfab_log(KFAB_LOG_WARN,
					 ADDR_VAR ": rails %s and %s are the same address: give each rail an address of its own",
					 r[j].addr, r[i].addr);
				return -FI_EINVAL;
			}
		}
	}
	return 0;
}

static bool stripes(const struct mrail_params *p)
{
	for (size_t i = 0; i < p->nconfig; i++)
		if (p->config[i].policy == MRAIL_POLICY_STRIPING)
			return true;
	return false;
}

/* The hints of the inner fi_getinfo() for rail @r. */
static struct fi_info *rail_hints(const struct fi_info *hints,
				  const struct mrail_params *p,
				  const struct rail_addr *r)
{
	uint64_t asked = hints ? hints->caps : 0, rma = 0;
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	if (asked & FI_RMA)
		rma = asked & RMA_DIRS ? asked & RMA_DIRS : RMA_DIRS;
	if (stripes(p))
		rma |= FI_READ | FI_REMOTE_READ;
	h->caps = FI_MSG | FI_TAGGED | FI_SOURCE | (asked & FI_DIRECTED_RECV) |
		  (rma ? FI_RMA | rma : 0);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->av_type = FI_AV_TABLE;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (hints && hints->domain_attr) {
		h->domain_attr->threading = hints->domain_attr->threading;
		h->domain_attr->data_progress =
			hints->domain_attr->data_progress;
		h->domain_attr->control_progress =
			hints->domain_attr->control_progress;
	}
	h->fabric_attr->prov_name = strdup(r->prov);
	if (r->domain[0]) {
		h->domain_attr->name = strdup(r->domain);
		if (!h->domain_attr->name)
			goto nomem;
	} else {
		h->addr_format = r->sa.ss_family == AF_INET ?
				 FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
		h->src_addrlen = r->salen;
		h->src_addr = malloc(r->salen);
		if (!h->src_addr)
			goto nomem;
		memcpy(h->src_addr, &r->sa, r->salen);
	}
	if (h->fabric_attr->prov_name)
		return h;
nomem:
	fi_freeinfo(h);
	return NULL;
}

/* The address a provider gives an IP rail is the one asked for. */
static bool src_addr_is(const struct fi_info *fi, const struct rail_addr *r)
{
	const struct sockaddr *sa = fi->src_addr;

	if (!sa || sa->sa_family != r->sa.ss_family)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = fi->src_addr;
		const struct sockaddr_in *b = (const void *)&r->sa;

		return a->sin_addr.s_addr == b->sin_addr.s_addr &&
		       (!b->sin_port || a->sin_port == b->sin_port);
	} else {
		const struct sockaddr_in6 *a = fi->src_addr;
		const struct sockaddr_in6 *b = (const void *)&r->sa;

		return !memcmp(&a->sin6_addr, &b->sin6_addr,
			       sizeof(a->sin6_addr)) &&
		       (!b->sin6_port || a->sin6_port == b->sin6_port);
	}
}

static int rail_getinfo(uint32_t version, const struct fi_info *hints,
			const struct mrail_params *p,
			const struct rail_addr *r, struct fi_info **rail)
{
	struct fi_info *h = rail_hints(hints, p, r), *fi = NULL;
	int ret;

	if (!h)
		return -FI_ENOMEM;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		version = FI_VERSION(1, 5);
	ret = fi_getinfo(version, NULL, NULL, 0, h, &fi);
	fi_freeinfo(h);
	if (ret) {
		kfab_log(KFAB_LOG_WARN,
			 ADDR_VAR ": rail %s: %s has no RDM endpoint there that kfab_mrail can use (fi_getinfo: %s): see fi_info -p \"%s\" for what it has",
			 r->addr, r->prov, fi_strerror(-ret), r->prov);
		return ret == -FI_ENOMEM ? ret : -FI_ENODATA;
	}
	fi_freeinfo(fi->next);
	fi->next = NULL;
	if (!r->domain[0] && !src_addr_is(fi, r)) {
		kfab_log(KFAB_LOG_WARN,
			 ADDR_VAR ": rail %s: %s gave its rail another source address than asked: name the rail by an address %s takes",
			 r->addr, r->prov, r->prov);
		fi_freeinfo(fi);
		return -FI_ENODATA;
	}
	*rail = fi;
	return 0;
}

void mrail_rails_free(struct fi_info **rails, size_t nrails)
{
	if (!rails)
		return;
	for (size_t i = 0; i < nrails; i++)
		fi_freeinfo(rails[i]);
	free(rails);
}

int mrail_rails_getinfo(uint32_t version, const struct fi_info *hints,
			const struct mrail_params *p, struct fi_info ***rails,
			size_t *nrails)
{
	struct rail_addr r[MRAIL_MAX_RAILS] = { 0 };
	struct fi_info **out;
	char *hinted;
	size_t i;
	int ret;

	*rails = NULL;
	*nrails = 0;
	if (!p->naddr)
		return -FI_ENODATA;
	ret = hinted_prov(hints, &hinted);
	if (ret)
		return ret;
	for (i = 0; i < p->naddr && !ret; i++) {
		r[i].addr = p->addr[i];
		ret = rail_resolve(&r[i], hinted);
	}
	if (!ret)
		ret = rails_check(r, p->naddr);
	out = ret ? NULL : calloc(p->naddr, sizeof(*out));
	if (!ret && !out)
		ret = -FI_ENOMEM;
	for (i = 0; i < p->naddr && !ret; i++)
		ret = rail_getinfo(version, hints, p, &r[i], &out[i]);
	free(hinted);
	if (ret) {
		mrail_rails_free(out, p->naddr);
		return ret;
	}
	*rails = out;
	*nrails = p->naddr;
	return 0;
}
