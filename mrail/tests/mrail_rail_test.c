// SPDX-License-Identifier: GPL-2.0
/*
 * mrail_rail_test: rail discovery on this host. FI_OFI_MRAIL_ADDR set,
 * mrail_params_load() then mrail_rails_getinfo(): kfab_efa devices and
 * kfab_opx units of the shm backend by name (libfabric finds the
 * providers through FI_PROVIDER_PATH, which make ulib-test sets; the
 * program is skipped without them), tcp;ofi_rxm rails by IP address,
 * FI_ADDR_STR, interface and host name, the core provider the hints
 * name, what each rail is asked for, and the refusals: rails of two
 * providers, two rails of one address, an unknown device, a name that
 * does not resolve, malformed FI_ADDR_STR addresses.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "core/kfab_log.h"
#include "mrail/mrail_rail.h"
#include "tests/tap.h"

#define ADDR		"FI_OFI_MRAIL_ADDR"
#define CONFIG		"FI_OFI_MRAIL_CONFIG"
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static char last_warn[1024];

static void sink(enum kfab_log_level level, const char *msg)
{
	if (level <= KFAB_LOG_WARN)
		snprintf(last_warn, sizeof(last_warn), "%s", msg);
}

static struct mrail_params params;
static struct fi_info **rails;
static size_t nrails;

/*
 * FI_OFI_MRAIL_ADDR=@addr and FI_OFI_MRAIL_CONFIG=@config (NULL: unset),
 * then the rails of @hints: what mrail_rails_getinfo() returned.
 */
static int rails_get(const char *addr, const char *config,
		     const struct fi_info *hints)
{
	int ret;

	mrail_rails_free(rails, nrails);
	rails = NULL;
	nrails = 0;
	mrail_params_free(&params);
	if (addr)
		setenv(ADDR, addr, 1);
	else
		unsetenv(ADDR);
	if (config)
		setenv(CONFIG, config, 1);
	else
		unsetenv(CONFIG);
	last_warn[0] = '\0';
	ret = mrail_params_load(&params);
	if (ret)
		return ret;
	return mrail_rails_getinfo(FI_VERSION(1, 17), hints, &params, &rails,
				   &nrails);
}

/* hints whose fabric_attr->prov_name is @prov */
static struct fi_info *prov_hints(const char *prov)
{
	struct fi_info *h = fi_allocinfo();

	h->fabric_attr->prov_name = strdup(prov);
	return h;
}

/* ------------------------------------------------------------------ */
/* kfab devices */

static void device_case(const char *addr, const char *prov,
			const char *const *domains, size_t n)
{
	bool all = true;

	if (!TAP_EQ(rails_get(addr, NULL, NULL), 0, ADDR "=%s", addr)) {
		tap_diag("  %s", last_warn);
		return;
	}
	TAP_EQ(nrails, n, "%s: %zu rails", addr, n);
	for (size_t i = 0; i < nrails && i < n; i++) {
		const struct fi_info *fi = rails[i];

		all &= !fi->next && !strcmp(fi->fabric_attr->prov_name, prov) &&
		       !strcmp(fi->domain_attr->name, domains[i]) &&
		       fi->ep_attr->type == FI_EP_RDM;
		tap_diag("  rail %zu: %s %s", i, fi->fabric_attr->prov_name,
			 fi->domain_attr->name);
	}
	TAP_OK(all, "%s: one %s RDM fi_info each, domains in order", addr,
	       prov);
}

static void device_cases(void)
{
	static const char *const efa[] = { "efa0-rdm", "efa1-rdm" };
	static const char *const efa10[] = { "efa1-rdm", "efa0-rdm" };
	static const char *const hfi[] = { "hfi0", "hfi1" };
	static const char *const hfi1[] = { "hfi1" };

	device_case("efa0,efa1", "kfab_efa", efa, 2);
	device_case("efa1,efa0", "kfab_efa", efa10, 2);
	device_case("hfi0,hfi1", "kfab_opx", hfi, 2);
	device_case("hfi1", "kfab_opx", hfi1, 1);
}

/* ------------------------------------------------------------------ */
/* IP rails */

/* @fi's src_addr is IPv4 @ip */
static bool src_is(const struct fi_info *fi, const char *ip)
{
	const struct sockaddr_in *sin = fi->src_addr;
	struct in_addr want;

	inet_pton(AF_INET, ip, &want);
	return fi->addr_format == FI_SOCKADDR_IN && sin &&
	       sin->sin_family == AF_INET &&
	       sin->sin_addr.s_addr == want.s_addr;
}

static void ip_case(const char *addr, const struct fi_info *hints,
		    const char *prov, const char *ip0, const char *ip1)
{
	char src[2][INET6_ADDRSTRLEN] = { "", "" };

	if (!TAP_EQ(rails_get(addr, NULL, hints), 0, ADDR "=%s%s%s", addr,
		    hints ? ", hints " : "",
		    hints ? hints->fabric_attr->prov_name : "")) {
		tap_diag("  %s", last_warn);
		return;
	}
	for (size_t i = 0; i < nrails && i < 2; i++) {
		const struct sockaddr_in *sin = rails[i]->src_addr;

		if (sin && sin->sin_family == AF_INET)
			inet_ntop(AF_INET, &sin->sin_addr, src[i],
				  sizeof(src[i]));
	}
	TAP_OK(nrails == 2 && !strcmp(rails[0]->fabric_attr->prov_name, prov) &&
	       !strcmp(rails[1]->fabric_attr->prov_name, prov) &&
	       src_is(rails[0], ip0) && src_is(rails[1], ip1),
	       "%s: two %s rails from %s and %s (%s, %s)", addr, prov, ip0,
	       ip1, src[0], src[1]);
}

/* an FI_ADDR_STR port is the rail's */
static void port_case(void)
{
	const struct sockaddr_in *sin;

	if (!TAP_EQ(rails_get("fi_sockaddr_in://127.0.0.1:47001,fi_sockaddr_in://127.0.0.1:47002",
			      NULL, NULL), 0, "two ports of 127.0.0.1")) {
		tap_diag("  %s", last_warn);
		return;
	}
	sin = rails[1]->src_addr;
	TAP_OK(nrails == 2 && src_is(rails[1], "127.0.0.1") &&
	       ntohs(sin->sin_port) == 47002, "the second from port 47002");
}

/* a host name: its first address, loopback for localhost */
static void host_case(void)
{
	const struct sockaddr *sa;
	bool loop;

	if (!TAP_EQ(rails_get("localhost,127.0.0.2", NULL, NULL), 0,
		    ADDR "=localhost,127.0.0.2")) {
		tap_diag("  %s", last_warn);
		return;
	}
	sa = rails[0]->src_addr;
	loop = sa && (sa->sa_family == AF_INET ?
		      src_is(rails[0], "127.0.0.1") :
		      IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)
					     (const void *)sa)->sin6_addr));
	TAP_OK(nrails == 2 && loop && src_is(rails[1], "127.0.0.2"),
	       "localhost: a rail from the loopback address");
}

static void ip_cases(void)
{
	struct fi_info *h;

	ip_case("127.0.0.1,127.0.0.2", NULL, MRAIL_IP_PROV, "127.0.0.1",
		"127.0.0.2");
	ip_case("fi_sockaddr_in://127.0.0.2:0,lo", NULL, MRAIL_IP_PROV,
		"127.0.0.2", "127.0.0.1");
	ip_case("fi_sockaddr_in://127.0.0.1,127.0.0.2", NULL, MRAIL_IP_PROV,
		"127.0.0.1", "127.0.0.2");
	host_case();
	port_case();

	/* the hints' provider, kfab_mrail taken out of it */
	h = prov_hints("kfab_mrail");
	ip_case("127.0.0.1,127.0.0.2", h, MRAIL_IP_PROV, "127.0.0.1",
		"127.0.0.2");
	fi_freeinfo(h);
	h = prov_hints("tcp;ofi_rxm;kfab_mrail");
	ip_case("127.0.0.2,127.0.0.1", h, "tcp;ofi_rxm", "127.0.0.2",
		"127.0.0.1");
	fi_freeinfo(h);
	h = prov_hints("^kfab_opx");
	ip_case("127.0.0.1,127.0.0.2", h, MRAIL_IP_PROV, "127.0.0.1",
		"127.0.0.2");
	fi_freeinfo(h);
	h = prov_hints("KFAB_MRAIL;kfab_efa");
	TAP_EQ(rails_get("127.0.0.1,127.0.0.2", NULL, h), -FI_ENODATA,
	       "IP rails of a provider that has none (kfab_efa)");
	TAP_OK(strstr(last_warn, ADDR ": rail 127.0.0.1: kfab_efa has no RDM endpoint there"),
	       "says which rail and provider: %s", last_warn);
	fi_freeinfo(h);
}

/* ------------------------------------------------------------------ */
/* what the rails are asked for */

static void caps_cases(void)
{
	struct fi_info *h = fi_allocinfo();
	uint64_t caps;

	/* the default config stripes: the receiver reads the stripes */
	h->caps = FI_MSG;
	if (!TAP_EQ(rails_get("efa0,efa1", NULL, h), 0, "efa0,efa1, FI_MSG"))
		goto out;
	caps = rails[0]->caps & rails[1]->caps;
	TAP_OK((caps & (FI_MSG | FI_TAGGED | FI_SOURCE | FI_RMA | FI_READ |
			FI_REMOTE_READ)) ==
	       (FI_MSG | FI_TAGGED | FI_SOURCE | FI_RMA | FI_READ |
		FI_REMOTE_READ) && !(caps & (FI_DIRECTED_RECV | FI_WRITE)),
	       "striping: rails with FI_MSG, FI_TAGGED, FI_SOURCE, FI_RMA reads, no FI_DIRECTED_RECV or FI_WRITE (%#llx)",
	       (unsigned long long)caps);
	TAP_OK(rails[0]->domain_attr->av_type == FI_AV_TABLE &&
	       !(rails[0]->mode & ~(uint64_t)(FI_CONTEXT | FI_CONTEXT2)) &&
	       !(rails[0]->domain_attr->mr_mode &
		 ~(FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
		   FI_MR_PROV_KEY)),
	       "FI_AV_TABLE, modes and mr_mode within kfab_mrail's");

	/* no striping, no RMA asked: none */
	if (!TAP_EQ(rails_get("efa0,efa1", "-1:round-robin", h), 0,
		    "efa0,efa1, round-robin alone"))
		goto out;
	TAP_OK(!(rails[0]->caps & FI_RMA), "no FI_RMA (%#llx)",
	       (unsigned long long)rails[0]->caps);

	/* what the hints ask for */
	h->caps = FI_MSG | FI_RMA | FI_WRITE | FI_DIRECTED_RECV;
	if (!TAP_EQ(rails_get("efa0,efa1", "-1:fixed", h), 0,
		    "efa0,efa1, FI_RMA | FI_WRITE | FI_DIRECTED_RECV"))
		goto out;
	caps = rails[0]->caps & rails[1]->caps;
	TAP_OK((caps & (FI_RMA | FI_WRITE | FI_DIRECTED_RECV)) ==
	       (FI_RMA | FI_WRITE | FI_DIRECTED_RECV) && !(caps & FI_READ),
	       "rails with them, no FI_READ (%#llx)",
	       (unsigned long long)caps);
out:
	fi_freeinfo(h);
}

/* ------------------------------------------------------------------ */
/* refusals */

static const struct bad_case {
	const char *addr;
	const char *prov;		/* the hints', or NULL */
	int ret;
	const char *says;		/* NULL: no warning */
} bad_cases[] = {
	{ "hfi0,efa0", NULL, -FI_EINVAL,
	  ADDR ": rail hfi0 is of kfab_opx, rail efa0 of kfab_efa: all rails must be of one core provider" },
	{ "efa0,127.0.0.1", NULL, -FI_EINVAL,
	  "rail efa0 is of kfab_efa, rail 127.0.0.1 of tcp;ofi_rxm" },
	{ "127.0.0.1,lo", NULL, -FI_EINVAL,
	  ADDR ": rails 127.0.0.1 and lo are the same address" },
	{ "efa9", NULL, -FI_ENODATA,
	  ADDR ": rail efa9: kfab_efa has no RDM endpoint there" },
	{ "efa0,hfi7", NULL, -FI_EINVAL, "one core provider" },
	{ "hfi0,hfi7", NULL, -FI_ENODATA,
	  ADDR ": rail hfi7: kfab_opx has no RDM endpoint there" },
	{ "efa0,efa1", "tcp;ofi_rxm", -FI_ENODATA, NULL },
	{ "kfab-no-such-host.invalid", NULL, -FI_ENODATA,
	  ADDR ": rail address kfab-no-such-host.invalid is not a kfab device (hfi<N>, efa<N>), an interface, an IP address or a host name that resolves" },
	{ "efa01", NULL, -FI_ENODATA, "rail address efa01 is not a kfab device" },
	{ "fi_sockaddr_in://127.0.0:0", NULL, -FI_EINVAL,
	  ADDR ": rail address fi_sockaddr_in://127.0.0:0 is not a well-formed FI_ADDR_STR address" },
	{ "fi_sockaddr_in://127.0.0.1:65536", NULL, -FI_EINVAL,
	  "is not a well-formed FI_ADDR_STR" },
	{ "fi_sockaddr_in://127.0.0.1:", NULL, -FI_EINVAL,
	  "is not a well-formed FI_ADDR_STR" },
	{ "fi_sockaddr_in6://::1:0", NULL, -FI_EINVAL,
	  "is not a well-formed FI_ADDR_STR" },
	{ "fi_sockaddr_in6://[::1:0", NULL, -FI_EINVAL,
	  "is not a well-formed FI_ADDR_STR" },
	{ "fi_addr_efa://0", NULL, -FI_EINVAL,
	  ADDR ": rail address fi_addr_efa://0: an FI_ADDR_STR rail address must be fi_sockaddr_in://" },
	{ NULL, NULL, -FI_ENODATA, NULL },
};

static void bad_cases_run(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct fi_info *h = c->prov ? prov_hints(c->prov) : NULL;
		const char *addr = c->addr ? c->addr : "(unset)";

		TAP_EQ(rails_get(c->addr, NULL, h), c->ret, ADDR "=%s%s%s: %s",
		       addr, c->prov ? ", hints " : "", c->prov ? c->prov : "",
		       fi_strerror(-c->ret));
		TAP_OK(c->says ? strstr(last_warn, c->says) != NULL :
				 !last_warn[0],
		       "%s: %s", c->says ? "says why" : "no warning",
		       last_warn);
		TAP_OK(!rails && !nrails, "no rails returned");
		fi_freeinfo(h);
	}
}

/* FI_ADDR_STR's IPv6 form, where the host has ::1 */
static void ipv6_case(void)
{
	const struct sockaddr_in6 *sin6;
	int ret = rails_get("fi_sockaddr_in6://[::1]:0", NULL, NULL);

	if (ret == -FI_ENODATA && strstr(last_warn, "no RDM endpoint")) {
		tap_skip("no tcp;ofi_rxm rail on ::1: %s", last_warn);
		return;
	}
	TAP_EQ(ret, 0, "fi_sockaddr_in6://[::1]:0");
	sin6 = ret ? NULL : rails[0]->src_addr;
	TAP_OK(sin6 && rails[0]->addr_format == FI_SOCKADDR_IN6 &&
	       IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr), "a rail from ::1");
}

int main(void)
{
	struct fi_info *h = prov_hints("kfab_efa"), *fi = NULL;

	tap_start("mrail_rail_test");
	kfab_log_set(sink);
	unsetenv("FI_OFI_MRAIL_ADDR_STRC");
	unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
	unsetenv("MPI_LOCALRANKID");
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi)) {
		fi_freeinfo(h);
		tap_skip_all("kfab_efa not found: run with FI_PROVIDER_PATH=build/prov");
	}
	fi_freeinfo(fi);
	fi_freeinfo(h);
	device_cases();
	ip_cases();
	ipv6_case();
	caps_cases();
	bad_cases_run();
	mrail_rails_free(rails, nrails);
	mrail_params_free(&params);
	return tap_done();
}
