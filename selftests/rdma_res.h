/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the selftests read from iproute2's `rdma resource`: the QP counts
 * that show connections exist while they run and are gone afterwards.
 */
#ifndef _AFRDMA_RDMA_RES_H
#define _AFRDMA_RDMA_RES_H

#include <stdio.h>
#include <string.h>

/* Number of RC QPs that `rdma resource show qp` lists right now. */
static inline int rc_qps(void)
{
	FILE *p = popen("rdma resource show qp 2>/dev/null", "r");
	char line[512];
	int n = 0;

	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "type RC"))
			n++;
	return pclose(p) == 0 ? n : -1;
}

#endif /* _AFRDMA_RDMA_RES_H */
