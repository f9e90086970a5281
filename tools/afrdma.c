// SPDX-License-Identifier: GPL-2.0
/*
 * afrdma: the administration tool.  Shows the module's parameters, its
 * counters and the RDMA devices afrdma can use.
 *
 *   afrdma params       family and protocol numbers in effect
 *   afrdma ss [-l|-a]   sockets, as `ss -tni` lists TCP ones
 *   afrdma stats [-j]   this network namespace's counters, or as JSON
 *   afrdma devices      RDMA devices with their ports, state and netdev
 */
#include <dirent.h>
#include <stdbool.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#include "lib/afrdma_sock.h"

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

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

/* A file the module provides; says so when it is missing. */
static FILE *open_proc(const char *path)
{
	FILE *f = fopen(path, "r");

	if (!f)
		fprintf(stderr, "afrdma: %s: %s%s\n", path, strerror(errno),
			errno == ENOENT ? " (is the module loaded?)" : "");
	return f;
}

static const char *const fallback_reasons[] = {
	"", "no-device", "no-route", "unreachable", "rejected", "resources",
	"protocol", "timeout", "peer-tcp",
};

/*
 * /proc/net/afrdma: "state local remote transport rx_queue tx_queue uid
 * inode qpn device fallback_reason rx_slots tx_slots inline" after a header
 * line, the rings as now/largest and the payload bytes a SEND carries inline.  Like ss, the
 * default leaves listeners out; -l shows only them, -a everything.
 */
static int cmd_ss(int which)
{
	const char *path = "/proc/net/afrdma";
	char state[16], local[64], remote[64], transport[8], dev[64];
	unsigned int rxq, txq, uid, qpn, reason, rx, rx_max, tx, tx_max, inl;
	unsigned long ino;
	char line[512];
	int fields;
	FILE *f;

	f = open_proc(path);
	if (!f)
		return 1;
	printf("%-10s %-7s %-7s %-40s %-40s %s\n", "State", "Recv-Q", "Send-Q",
	       "Local Address:Port", "Peer Address:Port", "Transport");
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		bool listening;

		fields = sscanf(line, "%15s %63s %63s %7s %u %u %u %lu %u %63s %u %u/%u %u/%u %u",
				state, local, remote, transport, &rxq, &txq, &uid,
				&ino, &qpn, dev, &reason, &rx, &rx_max, &tx, &tx_max,
				&inl);
		if (fields < 11)
			continue;
		listening = !strcmp(state, "LISTEN");
		if ((which == 'l' && !listening) || (!which && listening))
			continue;
		printf("%-10s %-7u %-7u %-40s %-40s %s\n", state, rxq, txq, local,
		       listening ? "*" : remote, transport);
		printf("\t uid:%u ino:%lu", uid, ino);
		/* Another user's QP number reads 0 (see afrdma(8)). */
		if (qpn)
			printf(" qp:%u", qpn);
		if (strcmp(dev, "-"))
			printf(" dev:%s", dev);
		if (qpn && fields >= 15)
			printf(" rx_slots:%u/%u tx_slots:%u/%u", rx, rx_max, tx,
			       tx_max);
		if (qpn && fields >= 16)
			printf(" inline:%u", inl);
		if (reason && reason < ARRAY_SIZE(fallback_reasons))
			printf(" fallback:%s", fallback_reasons[reason]);
		putchar('\n');
	}
	fclose(f);
	return 0;
}

/* /proc/net/afrdma_stat, one "Name value" per line, as text or JSON. */
static int cmd_stats(bool json)
{
	const char *path = "/proc/net/afrdma_stat";
	unsigned long long val;
	char name[64];
	int n = 0;
	FILE *f;

	f = open_proc(path);
	if (!f)
		return 1;
	if (json)
		putchar('{');
	while (fscanf(f, "%63s %llu", name, &val) == 2) {
		if (json)
			printf("%s\"%s\":%llu", n ? "," : "", name, val);
		else
			printf("%-24s %llu\n", name, val);
		n++;
	}
	if (json)
		puts("}");
	fclose(f);
	return n ? 0 : 1;
}

static int cmd_devices(void)
{
	const char *base = "/sys/class/infiniband";
	struct dirent *de;
	bool any = false;
	DIR *d;

	d = opendir(base);
	if (!d) {
		fprintf(stderr, "afrdma: no RDMA devices (%s: %s)\n", base,
			strerror(errno));
		return 1;
	}
	printf("%-12s %-5s %-16s %-10s %s\n", "DEVICE", "PORT", "STATE",
	       "LINK", "NETDEV");
	while ((de = readdir(d))) {
		char path[512], state[64], link[64], ndev[64];
		int port;

		if (de->d_name[0] == '.')
			continue;
		for (port = 1; port < 64; port++) {
			snprintf(path, sizeof(path), "%s/%s/ports/%d/state", base,
				 de->d_name, port);
			if (read_line(path, state, sizeof(state)))
				break;
			snprintf(path, sizeof(path), "%s/%s/ports/%d/link_layer",
				 base, de->d_name, port);
			if (read_line(path, link, sizeof(link)))
				strcpy(link, "?");
			snprintf(path, sizeof(path),
				 "%s/%s/ports/%d/gid_attrs/ndevs/0", base,
				 de->d_name, port);
			if (read_line(path, ndev, sizeof(ndev)))
				strcpy(ndev, "-");
			printf("%-12s %-5d %-16s %-10s %s\n", de->d_name, port,
			       state, link, ndev);
			any = true;
		}
	}
	closedir(d);
	return any ? 0 : 1;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: afrdma params | ss [-l|-a] | stats [-j] | devices\n"
		   "  params      address family and IPPROTO numbers in effect\n"
		   "  ss [-l|-a]  sockets (-l: listening only, -a: all), as ss -tni\n"
		   "  stats [-j]  counters of this network namespace (-j: JSON)\n"
		   "  devices     RDMA devices afrdma can use\n");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "params"))
		return cmd_params();
	if (argc >= 2 && !strcmp(argv[1], "ss") &&
	    (argc == 2 || (argc == 3 && (!strcmp(argv[2], "-l") ||
					 !strcmp(argv[2], "-a")))))
		return cmd_ss(argc == 3 ? argv[2][1] : 0);
	if (argc >= 2 && !strcmp(argv[1], "stats") &&
	    (argc == 2 || (argc == 3 && !strcmp(argv[2], "-j"))))
		return cmd_stats(argc == 3);
	if (argc == 2 && !strcmp(argv[1], "devices"))
		return cmd_devices();
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
