// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma: the administration tool.  Shows the module's parameters, its
 * counters and the RDMA devices afrdma can use.
 *
 *   afrdma params       family and protocol numbers in effect
 *   afrdma ss [-l|-a] [-e] [-j] [FILTER]
 *                       sockets, as `ss -tni` lists TCP ones, from the
 *                       kernel's sock_diag dump (libmnl)
 *   afrdma stats [-j]   this network namespace's counters, or as JSON,
 *                       from the module's generic netlink family
 *   afrdma devices [-j] RDMA devices afrdma uses, their ports, state,
 *                       netdev and this namespace's connections on each,
 *                       from the module's generic netlink family
 *   afrdma links [-j]   this namespace's links (net.afrdma.links): peer,
 *                       device, QPs, connections, messages, bytes, state
 *   afrdma links test ADDR [users N] [pages N] [listen PORT [backlog N]]
 *                       [connect PORT [streams N]] [first ID] [reset ID]
 *                       [fin ID] [cursor ID value N]
 *                       asks for a link to ADDR, and streams on it (root;
 *                       a test interface)
 */
#include <stdbool.h>
#include <time.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/sock_diag.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#include "lib/afrdma_sock.h"

static int cmd_params(void)
{
	if (access("/sys/module/afrdma", F_OK)) {
		fprintf(stderr, "afrdma: module not loaded (defaults: family %d, ipproto %d)\n",
			AFRDMA_FAMILY_DEFAULT, AFRDMA_IPPROTO_DEFAULT);
		return 1;
	}
	printf("family  %d\nipproto %d\n", afrdma_family_nr(), afrdma_ipproto_nr());
	return 0;
}

static const char *const fallback_reasons[] = {
	"", "no-device", "no-route", "unreachable", "rejected", "resources",
	"protocol", "timeout", "peer-tcp",
};

static const char *const transports[] = { "-", "rdma", "tcp" };

/* TCP_* numbers and the names ss gives them, shown and as filters. */
static const struct {
	const char *show, *name;
} states[] = {
	[1] = { "ESTAB", "established" },	/* TCP_ESTABLISHED */
	[2] = { "SYN-SENT", "syn-sent" },
	[3] = { "SYN-RECV", "syn-recv" },
	[7] = { "CLOSE", "close" },		/* TCP_CLOSE */
	[10] = { "LISTEN", "listening" },	/* TCP_LISTEN */
};

#define ST(s)		(1U << (s))
#define ST_LISTEN	ST(10)
#define ST_CLOSE	ST(7)
#define ST_ALL		0xfffU
/* ss's default: neither listeners, nor closed, nor unaccepted sockets */
#define ST_CONNECTED	(ST_ALL & ~(ST_LISTEN | ST_CLOSE | ST(3)))

struct ss_opts {
	bool json, ext;
	unsigned int n;		/* sockets shown */
};

/* "addr:port" as /proc/net/afrdma prints it (%pISpc); *: no address. */
static void fmt_addr(const struct nlattr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	const struct sockaddr_in6 *s6;
	const struct sockaddr_in *s4;

	if (a && mnl_attr_get_payload_len(a) >= sizeof(*s6) &&
	    ((const struct sockaddr *)mnl_attr_get_payload(a))->sa_family == AF_INET6) {
		s6 = mnl_attr_get_payload(a);
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else if (a && mnl_attr_get_payload_len(a) >= sizeof(*s4) &&
		   ((const struct sockaddr *)mnl_attr_get_payload(a))->sa_family == AF_INET) {
		s4 = mnl_attr_get_payload(a);
		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(s4->sin_port));
	} else {
		snprintf(buf, len, "0.0.0.0:0");
	}
}

static int ss_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(a, AFRDMA_DIAG_MAX) > 0)
		tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

/* A struct attribute, or NULL when absent or shorter than @len. */
static const void *ss_struct(const struct nlattr *a, size_t len)
{
	return a && mnl_attr_get_payload_len(a) >= len ? mnl_attr_get_payload(a) : NULL;
}

static unsigned int ss_u32(const struct nlattr *a)
{
	return a && mnl_attr_get_payload_len(a) >= 4 ? mnl_attr_get_u32(a) : 0;
}

static const char *family_name(int family)
{
	if (family == AF_INET)
		return "inet";
	if (family == AF_INET6)
		return "inet6";
	return "rdma";
}

static int ss_show(const struct nlmsghdr *nlh, void *data)
{
	const struct afrdma_diag_msg *r = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[AFRDMA_DIAG_MAX + 1] = {};
	const struct afrdma_diag_zerocopy *zc;
	const struct afrdma_diag_credits *cr;
	const struct afrdma_diag_rings *rg;
	const char *state, *transport, *dev;
	struct ss_opts *o = data;
	char local[64], peer[64];
	unsigned long long cookie;
	unsigned int qpn;
	bool listening;

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*r))
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*r), ss_attr, tb);
	state = r->adiag_state < ARRAY_SIZE(states) && states[r->adiag_state].show ?
		states[r->adiag_state].show : "?";
	transport = r->adiag_transport < ARRAY_SIZE(transports) ?
		    transports[r->adiag_transport] : "?";
	listening = r->adiag_state == 10;
	fmt_addr(tb[AFRDMA_DIAG_LOCAL], local, sizeof(local));
	fmt_addr(tb[AFRDMA_DIAG_PEER], peer, sizeof(peer));
	dev = tb[AFRDMA_DIAG_DEVICE] ? mnl_attr_get_str(tb[AFRDMA_DIAG_DEVICE]) : NULL;
	qpn = ss_u32(tb[AFRDMA_DIAG_QPN]);
	rg = ss_struct(tb[AFRDMA_DIAG_RINGS], sizeof(*rg));
	cr = ss_struct(tb[AFRDMA_DIAG_CREDITS], sizeof(*cr));
	zc = ss_struct(tb[AFRDMA_DIAG_ZEROCOPY], sizeof(*zc));
	cookie = (unsigned long long)r->adiag_cookie[1] << 32 | r->adiag_cookie[0];

	if (o->json) {
		printf("%s{\"state\":\"%s\",\"family\":\"%s\",\"local\":\"%s\","
		       "\"peer\":\"%s\",\"sport\":%u,\"dport\":%u,"
		       "\"transport\":\"%s\",\"fallback\":\"%s\",\"rqueue\":%u,"
		       "\"wqueue\":%u,\"uid\":%u,\"inode\":%u,\"cookie\":%llu",
		       o->n ? "," : "", state, family_name(r->adiag_family), local,
		       peer, ntohs(r->adiag_sport), ntohs(r->adiag_dport),
		       transport, r->adiag_fb_reason < ARRAY_SIZE(fallback_reasons) ?
		       fallback_reasons[r->adiag_fb_reason] : "?",
		       ss_u32(tb[AFRDMA_DIAG_RQUEUE]), ss_u32(tb[AFRDMA_DIAG_WQUEUE]),
		       r->adiag_uid, r->adiag_inode, cookie);
		if (dev)
			printf(",\"device\":\"%s\"", dev);
		if (tb[AFRDMA_DIAG_QPN])
			printf(",\"qpn\":%u", qpn);
		if (rg)
			printf(",\"rings\":{\"rx_slots\":%u,\"rx_max\":%u,"
			       "\"rx_slot_size\":%u,\"tx_slots\":%u,\"tx_max\":%u,"
			       "\"tx_slot_size\":%u,\"inline\":%u}", rg->rx_slots,
			       rg->rx_max, rg->rx_slot_size, rg->tx_slots,
			       rg->tx_max, rg->tx_slot_size, rg->tx_inline);
		if (cr)
			printf(",\"credits\":{\"tx\":%u,\"peer\":%u,\"owed\":%u}",
			       cr->tx_credits, cr->peer_credits, cr->rx_owed);
		if (zc)
			printf(",\"zerocopy\":{\"on\":%s,\"rx\":%s,\"tx_pages\":%u,"
			       "\"rx_pages\":%u}",
			       zc->flags & AFRDMA_DIAG_ZC_ON ? "true" : "false",
			       zc->flags & AFRDMA_DIAG_ZC_RX ? "true" : "false",
			       zc->tx_pages, zc->rx_pages);
		putchar('}');
		o->n++;
		return MNL_CB_OK;
	}
	printf("%-10s %-7u %-7u %-40s %-40s %s\n", state,
	       ss_u32(tb[AFRDMA_DIAG_RQUEUE]), ss_u32(tb[AFRDMA_DIAG_WQUEUE]),
	       local, listening ? "*" : peer, transport);
	printf("\t uid:%u ino:%u", r->adiag_uid, r->adiag_inode);
	/* Another user's QP number reads 0 (see afrdma(8)). */
	if (qpn)
		printf(" qp:%u", qpn);
	if (dev)
		printf(" dev:%s", dev);
	if (rg)
		printf(" rx_slots:%u/%u tx_slots:%u/%u inline:%u", rg->rx_slots,
		       rg->rx_max, rg->tx_slots, rg->tx_max, rg->tx_inline);
	if (r->adiag_fb_reason && r->adiag_fb_reason < ARRAY_SIZE(fallback_reasons))
		printf(" fallback:%s", fallback_reasons[r->adiag_fb_reason]);
	if (o->ext) {
		printf(" sk:%llx family:%s", cookie, family_name(r->adiag_family));
		if (rg)
			printf(" slot_size:%u/%u", rg->rx_slot_size, rg->tx_slot_size);
		if (cr)
			printf(" credits:%u peer_credits:%u owed:%u",
			       cr->tx_credits, cr->peer_credits, cr->rx_owed);
		if (zc)
			printf(" zerocopy:%s%s tx_pages:%u rx_pages:%u",
			       zc->flags & AFRDMA_DIAG_ZC_ON ? "on" : "off",
			       zc->flags & AFRDMA_DIAG_ZC_RX ? ",rx" : "",
			       zc->tx_pages, zc->rx_pages);
	}
	putchar('\n');
	o->n++;
	return MNL_CB_OK;
}

/* A bound netlink socket on @bus and its port id; NULL, said why, if none. */
static struct mnl_socket *nl_open(int bus, unsigned int *portid)
{
	struct mnl_socket *nl = mnl_socket_open(bus);

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		perror("afrdma: netlink");
		if (nl)
			mnl_socket_close(nl);
		return NULL;
	}
	*portid = mnl_socket_get_portid(nl);
	return nl;
}

/*
 * Sends dump request @nlh (in @buf) on @nl and runs @cb on each answer
 * until the dump ends: 0, or -1 with errno set.
 */
static int nl_dump(struct mnl_socket *nl, unsigned int portid, char *buf,
		   struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	unsigned int seq = nlh->nlmsg_seq;
	int ret = -1;
	ssize_t n;

	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -1;
	while ((n = mnl_socket_recvfrom(nl, buf, MNL_SOCKET_BUFFER_SIZE)) > 0) {
		ret = mnl_cb_run(buf, n, seq, portid, cb, data);
		if (ret <= MNL_CB_STOP)
			break;
	}
	return n < 0 || ret < 0 ? -1 : 0;
}

/* One SOCK_DIAG_BY_FAMILY dump of afrdma's sockets through @cb. */
static int ss_dump(const struct afrdma_diag_req *req, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct afrdma_diag_req *r;
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	unsigned int portid;
	int ret;

	nl = nl_open(NETLINK_SOCK_DIAG, &portid);
	if (!nl)
		return 1;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = time(NULL);
	r = mnl_nlmsg_put_extra_header(nlh, sizeof(*r));
	*r = *req;
	ret = nl_dump(nl, portid, buf, nlh, cb, data);
	if (ret)
		fprintf(stderr, "afrdma: socket dump: %s%s\n", strerror(errno),
			errno == ENOENT ? " (the module has no sock_diag handler)" : "");
	mnl_socket_close(nl);
	return ret ? 1 : 0;
}

/* ":N" or "N" */
static int parse_port(const char *s, __be16 *port)
{
	char *end;
	long v;

	if (*s == ':')
		s++;
	v = strtol(s, &end, 10);
	if (!*s || *end || v <= 0 || v > 65535)
		return -1;
	*port = htons(v);
	return 0;
}

/*
 * afrdma ss [-l|-a] [-e] [-j] [state NAME]... [sport = :N] [dport = :N]:
 * ss's options and filter words, served by the kernel's socket dump.  Like
 * ss, the default shows "state connected" (no listeners, closed or
 * unaccepted sockets); -l shows only listeners, -a everything, and
 * "state" words replace either.
 */
static int cmd_ss(int argc, char **argv)
{
	struct afrdma_diag_req req = { .adiag_states = ST_CONNECTED };
	unsigned int want = 0, i;
	struct ss_opts o = {};
	int rc, k;

	for (k = 0; k < argc; k++) {
		const char *a = argv[k];

		if (!strcmp(a, "-l")) {
			req.adiag_states = ST_LISTEN;
		} else if (!strcmp(a, "-a")) {
			req.adiag_states = 0;
		} else if (!strcmp(a, "-e")) {
			o.ext = true;
		} else if (!strcmp(a, "-j")) {
			o.json = true;
		} else if (!strcmp(a, "state") && k + 1 < argc) {
			a = argv[++k];
			if (!strcmp(a, "all"))
				want |= ST_ALL;
			else if (!strcmp(a, "connected"))
				want |= ST_CONNECTED;
			else if (!strcmp(a, "closed"))
				want |= ST_CLOSE;
			else if (!strcmp(a, "listen"))
				want |= ST_LISTEN;
			for (i = 0; i < ARRAY_SIZE(states); i++)
				if (states[i].name && !strcmp(a, states[i].name))
					want |= ST(i);
			if (!want) {
				fprintf(stderr, "afrdma: unknown state %s\n", a);
				return 2;
			}
		} else if (!strcmp(a, "sport") || !strcmp(a, "dport")) {
			__be16 *port = a[0] == 's' ? &req.adiag_sport : &req.adiag_dport;

			if (k + 1 < argc && (!strcmp(argv[k + 1], "=") ||
					     !strcmp(argv[k + 1], "==") ||
					     !strcmp(argv[k + 1], "eq")))
				k++;
			if (k + 1 >= argc || parse_port(argv[++k], port)) {
				fprintf(stderr, "afrdma: %s wants = :PORT\n", a);
				return 2;
			}
		} else {
			fprintf(stderr, "afrdma: ss: unknown argument %s\n", a);
			return 2;
		}
	}
	if (want)
		req.adiag_states = want;
	if (access("/sys/module/afrdma", F_OK)) {
		fprintf(stderr, "afrdma: module not loaded\n");
		return 1;
	}
	req.sdiag_family = afrdma_family_nr();
	if (o.json)
		putchar('[');
	else
		printf("%-10s %-7s %-7s %-40s %-40s %s\n", "State", "Recv-Q",
		       "Send-Q", "Local Address:Port", "Peer Address:Port",
		       "Transport");
	rc = ss_dump(&req, ss_show, &o);
	if (o.json)
		puts("]");
	return rc;
}

/* Asks generic netlink @nl for family @name's number; 0 if it has none. */
static unsigned int genl_family_id(struct mnl_socket *nl, const char *name)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned int seq = time(NULL), id = 0;
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;
	struct nlattr *a;
	ssize_t n;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = GENL_ID_CTRL;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = CTRL_CMD_GETFAMILY;
	g->version = 1;
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, name);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return 0;
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	nlh = (struct nlmsghdr *)buf;
	if (n <= 0 || !mnl_nlmsg_ok(nlh, n) || nlh->nlmsg_type == NLMSG_ERROR)
		return 0;
	mnl_attr_for_each(a, nlh, sizeof(*g))
		if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID)
			id = mnl_attr_get_u16(a);
	return id;
}

/*
 * A generic netlink socket, its port id and afrdma's family number on it;
 * NULL, said why, if none.
 */
static struct mnl_socket *genl_open(unsigned int *portid, unsigned int *id)
{
	struct mnl_socket *nl = nl_open(NETLINK_GENERIC, portid);

	if (!nl)
		return NULL;
	*id = genl_family_id(nl, AFRDMA_GENL_NAME);
	if (!*id) {
		fprintf(stderr, "afrdma: no generic netlink family %s (is the module loaded?)\n",
			AFRDMA_GENL_NAME);
		mnl_socket_close(nl);
		return NULL;
	}
	return nl;
}

/* A request for command @cmd of family @id in @buf. */
static struct nlmsghdr *genl_request(char *buf, unsigned int id, int cmd, int flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = id;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = time(NULL) + 1;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = AFRDMA_GENL_VERSION;
	return nlh;
}

/* How stats and devices print, and how many they printed. */
struct show_opts {
	bool json;
	unsigned int n;
};

static int stats_show(const struct nlmsghdr *nlh, void *data)
{
	struct show_opts *o = data;
	const struct nlattr *top, *stat, *a;

	mnl_attr_for_each(top, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(top) != AFRDMA_A_STATS)
			continue;
		mnl_attr_for_each_nested(stat, top) {
			const char *name = NULL;
			unsigned long long val = 0;

			if (mnl_attr_get_type(stat) != AFRDMA_A_STATS_STAT)
				continue;
			mnl_attr_for_each_nested(a, stat) {
				if (mnl_attr_get_type(a) == AFRDMA_A_STAT_NAME)
					name = mnl_attr_get_str(a);
				else if (mnl_attr_get_type(a) == AFRDMA_A_STAT_VALUE &&
					 mnl_attr_get_payload_len(a) == 8)
					val = mnl_attr_get_u64(a);
			}
			if (!name)
				continue;
			if (o->json)
				printf("%s\"%s\":%llu", o->n ? "," : "", name, val);
			else
				printf("%-24s %llu\n", name, val);
			o->n++;
		}
	}
	return MNL_CB_OK;
}

/* The namespace's counters over generic netlink, as text or JSON. */
static int cmd_stats(bool json)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct show_opts o = { .json = json };
	unsigned int portid, id;
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	ssize_t n = -1;
	int ret = -1;

	nl = genl_open(&portid, &id);
	if (!nl)
		return 1;
	nlh = genl_request(buf, id, AFRDMA_CMD_GET_STATS, 0);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) >= 0)
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (json)
		putchar('{');
	if (n > 0)
		ret = mnl_cb_run(buf, n, nlh->nlmsg_seq, portid, stats_show, &o);
	if (json)
		puts("}");
	if (n <= 0 || ret < 0)
		fprintf(stderr, "afrdma: stats: %s\n", strerror(errno));
	mnl_socket_close(nl);
	return ret >= 0 && o.n ? 0 : 1;
}

/* enum ib_port_state and the link layers, as sysfs names them */
static const char *const port_states[] = {
	"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
};

static const char *const link_layers[] = { "?", "InfiniBand", "Ethernet" };

static const char *name_of(const char *const *names, size_t n, unsigned int i)
{
	return i < n ? names[i] : "?";
}

static int dev_port_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(a, AFRDMA_A_PORT_MAX) > 0)
		tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

static unsigned int attr_u8(const struct nlattr *a)
{
	return a && mnl_attr_get_payload_len(a) >= 1 ? mnl_attr_get_u8(a) : 0;
}

/* One AFRDMA_A_DEV_PORT: a JSON object, or a text line after @dev's. */
static void dev_port_show(const struct nlattr *port, const char *dev,
			  unsigned int conns, const char *guid, struct show_opts *o,
			  bool first)
{
	const struct nlattr *tb[AFRDMA_A_PORT_MAX + 1] = {};
	const char *state, *link, *ndev;
	char st[24];

	mnl_attr_parse_nested(port, dev_port_attr, tb);
	state = name_of(port_states, ARRAY_SIZE(port_states),
			attr_u8(tb[AFRDMA_A_PORT_STATE]));
	link = name_of(link_layers, ARRAY_SIZE(link_layers),
		       attr_u8(tb[AFRDMA_A_PORT_LINK_LAYER]));
	ndev = tb[AFRDMA_A_PORT_NETDEV] ? mnl_attr_get_str(tb[AFRDMA_A_PORT_NETDEV]) : NULL;
	if (o->json) {
		printf("%s{\"port\":%u,\"state\":\"%s\",\"link_layer\":\"%s\","
		       "\"active_mtu\":%u", first ? "" : ",",
		       ss_u32(tb[AFRDMA_A_PORT_NUM]), state, link,
		       ss_u32(tb[AFRDMA_A_PORT_ACTIVE_MTU]));
		if (ndev)
			printf(",\"netdev\":\"%s\",\"ifindex\":%u", ndev,
			       ss_u32(tb[AFRDMA_A_PORT_IFINDEX]));
		putchar('}');
		return;
	}
	/* the old sysfs columns first, as scripts read them: "4: ACTIVE" */
	snprintf(st, sizeof(st), "%u: %s", attr_u8(tb[AFRDMA_A_PORT_STATE]), state);
	printf("%-12s %-5u %-16s %-10s %-16s %-6u %-6u %s\n", dev,
	       ss_u32(tb[AFRDMA_A_PORT_NUM]), st, link, ndev ?: "-",
	       ss_u32(tb[AFRDMA_A_PORT_ACTIVE_MTU]), conns, guid);
}

static int dev_show(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *top, *a, *port = NULL;
	unsigned long long guid = 0;
	unsigned int conns = 0, index = 0;
	struct show_opts *o = data;
	const char *name = NULL;
	bool first = true;
	char g[24];

	mnl_attr_for_each(top, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(top) != AFRDMA_A_DEVICE)
			continue;
		mnl_attr_for_each_nested(a, top) {
			switch (mnl_attr_get_type(a)) {
			case AFRDMA_A_DEV_NAME:
				name = mnl_attr_get_str(a);
				break;
			case AFRDMA_A_DEV_INDEX:
				index = ss_u32(a);
				break;
			case AFRDMA_A_DEV_NODE_GUID:
				if (mnl_attr_get_payload_len(a) == 8)
					guid = mnl_attr_get_u64(a);
				break;
			case AFRDMA_A_DEV_CONNS:
				conns = ss_u32(a);
				break;
			case AFRDMA_A_DEV_PORT:
				if (!port)
					port = a;
				break;
			}
		}
		if (!name)
			continue;
		/* as `rdma dev` and sysfs show it */
		snprintf(g, sizeof(g), "%04llx:%04llx:%04llx:%04llx",
			 guid >> 48, guid >> 32 & 0xffff, guid >> 16 & 0xffff,
			 guid & 0xffff);
		if (o->json)
			printf("%s{\"name\":\"%s\",\"index\":%u,\"node_guid\":\"%s\","
			       "\"conns\":%u,\"ports\":[", o->n ? "," : "", name,
			       index, g, conns);
		o->n++;
		if (!port) {
			if (o->json)
				printf("]}");
			continue;
		}
		mnl_attr_for_each_nested(a, top) {
			if (mnl_attr_get_type(a) != AFRDMA_A_DEV_PORT)
				continue;
			dev_port_show(a, name, conns, g, o, first);
			first = false;
		}
		if (o->json)
			printf("]}");
	}
	return MNL_CB_OK;
}

/*
 * A dump of generic netlink command @cmd, each message through @cb, as
 * JSON or as text under the @header line: 0 if it worked and showed
 * something (as JSON, also if it showed nothing).  @what names it in
 * errors.  afrdma devices and afrdma links.
 */
static int genl_dump_show(int cmd, bool json, mnl_cb_t cb, const char *header,
			  const char *what, const char *none)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct show_opts o = { .json = json };
	unsigned int portid, id;
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	int ret;

	nl = genl_open(&portid, &id);
	if (!nl)
		return 1;
	nlh = genl_request(buf, id, cmd, NLM_F_DUMP);
	if (json)
		putchar('[');
	else
		puts(header);
	ret = nl_dump(nl, portid, buf, nlh, cb, &o);
	if (json)
		puts("]");
	if (ret)
		fprintf(stderr, "afrdma: %s: %s%s\n", what, strerror(errno),
			errno == EOPNOTSUPP ? " (the module has no such dump)" : "");
	else if (!o.n && !json && none)
		fprintf(stderr, "afrdma: %s\n", none);
	mnl_socket_close(nl);
	return !ret && (o.n || !none) ? 0 : 1;
}

/* The devices afrdma uses, over generic netlink, as text or JSON. */
static int cmd_devices(bool json)
{
	char header[128];

	snprintf(header, sizeof(header), "%-12s %-5s %-16s %-10s %-16s %-6s %-6s %s",
		 "DEVICE", "PORT", "STATE", "LINK", "NETDEV", "MTU", "CONNS",
		 "NODE_GUID");
	return genl_dump_show(AFRDMA_CMD_GET_DEVICES, json, dev_show, header,
			      "devices", "no RDMA devices");
}

/* enum AFRDMA_LINK_STATE_* */
static const char *const link_states[] = {
	"-", "resolving", "connecting", "hello", "up", "closed",
};

static int link_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(a, AFRDMA_A_LINK_MAX) > 0)
		tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

static unsigned long long attr_u64(const struct nlattr *a)
{
	return a && mnl_attr_get_payload_len(a) == 8 ? mnl_attr_get_u64(a) : 0;
}

/* An address without its port: a link's peer is a host. */
static void fmt_host(const struct nlattr *a, char *buf, size_t len)
{
	char *colon;

	fmt_addr(a, buf, len);
	colon = strrchr(buf, ':');
	if (colon)
		*colon = '\0';
	if (buf[0] == '[') {
		memmove(buf, buf + 1, strlen(buf));
		buf[strlen(buf) - 1] = '\0';
	}
}

static int link_show(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[AFRDMA_A_LINK_MAX + 1] = {};
	const struct nlattr *top;
	struct show_opts *o = data;
	const char *state, *dev;
	char peer[64];
	bool passive;

	mnl_attr_for_each(top, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(top) != AFRDMA_A_LINK)
			continue;
		memset(tb, 0, sizeof(tb));
		mnl_attr_parse_nested(top, link_attr, tb);
		state = name_of(link_states, ARRAY_SIZE(link_states),
				attr_u8(tb[AFRDMA_A_LINK_STATE]));
		dev = tb[AFRDMA_A_LINK_DEVICE] ?
		      mnl_attr_get_str(tb[AFRDMA_A_LINK_DEVICE]) : "-";
		passive = attr_u8(tb[AFRDMA_A_LINK_PASSIVE]);
		fmt_host(tb[AFRDMA_A_LINK_PEER], peer, sizeof(peer));
		if (o->json) {
			printf("%s{\"id\":%u,\"peer\":\"%s\",\"role\":\"%s\","
			       "\"device\":\"%s\",\"state\":\"%s\",\"qpn\":%u,"
			       "\"peer_qpn\":%u,\"conns\":%u,\"peer_conns\":%u,"
			       "\"tx_msgs\":%llu,\"rx_msgs\":%llu,\"tx_bytes\":%llu,"
			       "\"rx_bytes\":%llu,\"chunks\":%u,\"mem_bytes\":%llu,"
			       "\"area_pages\":%u,\"idle_ms\":%u,",
			       o->n ? "," : "", ss_u32(tb[AFRDMA_A_LINK_ID]), peer,
			       passive ? "passive" : "active", dev, state,
			       ss_u32(tb[AFRDMA_A_LINK_QPN]),
			       ss_u32(tb[AFRDMA_A_LINK_PEER_QPN]),
			       ss_u32(tb[AFRDMA_A_LINK_USERS]),
			       ss_u32(tb[AFRDMA_A_LINK_PEER_USERS]),
			       attr_u64(tb[AFRDMA_A_LINK_TX_MSGS]),
			       attr_u64(tb[AFRDMA_A_LINK_RX_MSGS]),
			       attr_u64(tb[AFRDMA_A_LINK_TX_BYTES]),
			       attr_u64(tb[AFRDMA_A_LINK_RX_BYTES]),
			       ss_u32(tb[AFRDMA_A_LINK_CHUNKS]),
			       attr_u64(tb[AFRDMA_A_LINK_MEM_BYTES]),
			       ss_u32(tb[AFRDMA_A_LINK_AREA_PAGES]),
			       ss_u32(tb[AFRDMA_A_LINK_IDLE_MS]));
			printf("\"streams\":%u,\"streams_est\":%u,\"streams_syn\":%u,"
			       "\"streams_half_open\":%u,\"streams_opened\":%llu,"
			       "\"streams_refused\":%llu,\"streams_busy\":%llu,"
			       "\"streams_resets\":%llu,\"streams_fins\":%llu,"
			       "\"streams_errors\":%llu}",
			       ss_u32(tb[AFRDMA_A_LINK_STREAMS]),
			       ss_u32(tb[AFRDMA_A_LINK_STREAMS_EST]),
			       ss_u32(tb[AFRDMA_A_LINK_STREAMS_SYN]),
			       ss_u32(tb[AFRDMA_A_LINK_STREAMS_HALF_OPEN]),
			       attr_u64(tb[AFRDMA_A_LINK_STREAMS_OPENED]),
			       attr_u64(tb[AFRDMA_A_LINK_STREAMS_REFUSED]),
			       attr_u64(tb[AFRDMA_A_LINK_STREAMS_BUSY]),
			       attr_u64(tb[AFRDMA_A_LINK_STREAMS_RESETS]),
			       attr_u64(tb[AFRDMA_A_LINK_STREAMS_FINS]),
			       attr_u64(tb[AFRDMA_A_LINK_STREAMS_ERRORS]));
		} else {
			char conns[24], msgs[48], bytes[48], mem[48], streams[40];

			snprintf(conns, sizeof(conns), "%u/%u",
				 ss_u32(tb[AFRDMA_A_LINK_USERS]),
				 ss_u32(tb[AFRDMA_A_LINK_PEER_USERS]));
			snprintf(msgs, sizeof(msgs), "%llu/%llu",
				 attr_u64(tb[AFRDMA_A_LINK_TX_MSGS]),
				 attr_u64(tb[AFRDMA_A_LINK_RX_MSGS]));
			snprintf(bytes, sizeof(bytes), "%llu/%llu",
				 attr_u64(tb[AFRDMA_A_LINK_TX_BYTES]),
				 attr_u64(tb[AFRDMA_A_LINK_RX_BYTES]));
			snprintf(mem, sizeof(mem), "%u/%llu",
				 ss_u32(tb[AFRDMA_A_LINK_CHUNKS]),
				 attr_u64(tb[AFRDMA_A_LINK_MEM_BYTES]));
			snprintf(streams, sizeof(streams), "%u/%u/%u",
				 ss_u32(tb[AFRDMA_A_LINK_STREAMS_EST]),
				 ss_u32(tb[AFRDMA_A_LINK_STREAMS_SYN]),
				 ss_u32(tb[AFRDMA_A_LINK_STREAMS_HALF_OPEN]));
			printf("%-4u %-24s %-7s %-10s %-10s %-7u %-7u %-11s %-15s %-21s %-17s %s\n",
			       ss_u32(tb[AFRDMA_A_LINK_ID]), peer,
			       passive ? "passive" : "active", dev, state,
			       ss_u32(tb[AFRDMA_A_LINK_QPN]),
			       ss_u32(tb[AFRDMA_A_LINK_PEER_QPN]), conns, msgs,
			       bytes, mem, streams);
		}
		o->n++;
	}
	return MNL_CB_OK;
}

/* This namespace's links; none is no error. */
static int cmd_links(bool json)
{
	char header[200];

	snprintf(header, sizeof(header), "%-4s %-24s %-7s %-10s %-10s %-7s %-7s %-11s %-15s %-21s %-17s %s",
		 "ID", "PEER", "ROLE", "DEVICE", "STATE", "QP", "PEER_QP",
		 "CONNS/PEER", "TX/RX_MSGS", "TX/RX_BYTES", "CHUNKS/MEM",
		 "STREAMS/SYN/HALF");
	return genl_dump_show(AFRDMA_CMD_GET_LINKS, json, link_show, header,
			      "links", NULL);
}

/* The words of `afrdma links test` after ADDR, each with its number. */
static const struct {
	const char	*word;
	int		attr;
} link_test_words[] = {
	{ "users",	AFRDMA_A_LINK_USERS },
	{ "pages",	AFRDMA_A_LINK_AREA_PAGES },
	{ "listen",	AFRDMA_A_LINK_TEST_LISTEN },
	{ "backlog",	AFRDMA_A_LINK_TEST_BACKLOG },
	{ "connect",	AFRDMA_A_LINK_TEST_PORT },
	{ "streams",	AFRDMA_A_LINK_TEST_STREAMS },
	{ "first",	AFRDMA_A_LINK_TEST_FIRST_ID },
	{ "reset",	AFRDMA_A_LINK_TEST_RESET },
	{ "fin",	AFRDMA_A_LINK_TEST_FIN },
	{ "cursor",	AFRDMA_A_LINK_TEST_CURSOR },
	{ "value",	AFRDMA_A_LINK_TEST_VALUE },
};

#define LINK_TEST_USAGE \
	"links test ADDR [users N] [pages N] [listen PORT [backlog N]]\n" \
	"       [connect PORT [streams N]] [first ID] [reset ID] [fin ID]\n" \
	"       [cursor ID value N]"

/*
 * afrdma links test ADDR [WORD N]...: AFRDMA_CMD_LINK_TEST, which sets up
 * a link to ADDR unless there is one (net.afrdma.links=1; root), and asks
 * for its streams (link_test_words).
 */
static int cmd_link_test(int argc, char **argv)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	unsigned int portid, id;
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct nlattr *nest;
	int k, w, ret = -1;
	ssize_t n = -1;

	if (argc < 1 || (argc - 1) % 2)
		goto usage;
	nl = genl_open(&portid, &id);
	if (!nl)
		return 1;
	nlh = genl_request(buf, id, AFRDMA_CMD_LINK_TEST, NLM_F_ACK);
	nest = mnl_attr_nest_start(nlh, AFRDMA_A_LINK);
	if (inet_pton(AF_INET, argv[0], &s4.sin_addr) == 1) {
		mnl_attr_put(nlh, AFRDMA_A_LINK_PEER, sizeof(s4), &s4);
	} else if (inet_pton(AF_INET6, argv[0], &s6.sin6_addr) == 1) {
		mnl_attr_put(nlh, AFRDMA_A_LINK_PEER, sizeof(s6), &s6);
	} else {
		mnl_socket_close(nl);
		goto usage;
	}
	for (k = 1; k + 1 < argc; k += 2) {
		char *end;
		unsigned long v = strtoul(argv[k + 1], &end, 10);

		for (w = 0; w < (int)ARRAY_SIZE(link_test_words); w++)
			if (!strcmp(argv[k], link_test_words[w].word))
				break;
		if (*end || !*argv[k + 1] || v > UINT32_MAX ||
		    w == (int)ARRAY_SIZE(link_test_words)) {
			mnl_socket_close(nl);
			goto usage;
		}
		mnl_attr_put_u32(nlh, link_test_words[w].attr, v);
	}
	mnl_attr_nest_end(nlh, nest);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) >= 0)
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n > 0)
		ret = mnl_cb_run(buf, n, nlh->nlmsg_seq, portid, NULL, NULL);
	if (ret < 0)
		fprintf(stderr, "afrdma: links test: %s%s\n", strerror(errno),
			errno == EOPNOTSUPP ? " (net.afrdma.links is 0)" :
			errno == ENOTCONN ? " (the link is not up yet)" : "");
	mnl_socket_close(nl);
	return ret < 0;

usage:
	fprintf(stderr, "usage: afrdma " LINK_TEST_USAGE "\n");
	return 2;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: afrdma params | ss [-l|-a] [-e] [-j] [FILTER] | stats [-j] | devices [-j]\n"
		   "       | links [-j] | " LINK_TEST_USAGE "\n"
		   "  params      address family and IPPROTO numbers in effect\n"
		   "  ss [-l|-a]  sockets (-l: listening only, -a: all), as ss -tni;\n"
		   "              -e: extended detail, -j: JSON; FILTER as ss's:\n"
		   "              state NAME (established, syn-sent, syn-recv,\n"
		   "              listening, close, connected, all)... sport = :N dport = :N\n"
		   "  stats [-j]  counters of this network namespace (-j: JSON)\n"
		   "  devices [-j] RDMA devices afrdma uses, their ports and this\n"
		   "              namespace's connections on each (-j: JSON)\n"
		   "  links [-j]  this namespace's links (net.afrdma.links): peer, role,\n"
		   "              device, state, QPs, connections each end, control\n"
		   "              messages and bytes each way, chunks/registered bytes,\n"
		   "              streams established/connecting/half-open\n"
		   "  links test ADDR ...\n"
		   "              asks for a link to ADDR with N test users and a test\n"
		   "              area of N pages; a test listener on PORT with a queue\n"
		   "              of N (0: none); N streams to PORT, ids from ID; a\n"
		   "              stream reset, its FIN sent (0: all), a CURSOR sent\n"
		   "              (root; for tests until sockets use links)\n");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "params"))
		return cmd_params();
	if (argc >= 2 && !strcmp(argv[1], "ss"))
		return cmd_ss(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "stats") &&
	    (argc == 2 || (argc == 3 && !strcmp(argv[2], "-j"))))
		return cmd_stats(argc == 3);
	if (argc >= 2 && !strcmp(argv[1], "devices") &&
	    (argc == 2 || (argc == 3 && !strcmp(argv[2], "-j"))))
		return cmd_devices(argc == 3);
	if (argc >= 2 && !strcmp(argv[1], "links") &&
	    (argc == 2 || (argc == 3 && !strcmp(argv[2], "-j"))))
		return cmd_links(argc == 3);
	if (argc >= 3 && !strcmp(argv[1], "links") && !strcmp(argv[2], "test"))
		return cmd_link_test(argc - 3, argv + 3);
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
