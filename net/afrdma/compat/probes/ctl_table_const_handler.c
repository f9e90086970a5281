// SPDX-License-Identifier: GPL-2.0
/* proc_handler takes a const struct ctl_table (6.11+). */
#include <linux/sysctl.h>

_Static_assert(__builtin_types_compatible_p(proc_handler,
					    int (const struct ctl_table *, int,
						 void *, size_t *, loff_t *)),
	       "proc_handler takes a mutable table");
