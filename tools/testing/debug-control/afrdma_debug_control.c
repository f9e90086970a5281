// SPDX-License-Identifier: GPL-2.0
/*
 * Positive control for "make check-debug" (tools/testing/check-debug):
 * a module that, on load, makes the debug kernel report a slab
 * use-after-free (KASAN), a shift out of bounds (UBSAN) and leaks a few
 * objects (kmemleak).  check-debug loads it in a boot of its own and passes
 * only if the harness fails that boot for each of the three, which shows
 * that a real bug in afrdma would not go unnoticed.
 *
 * On a KCSAN kernel ("make check-kcsan", which has no KASAN or kmemleak)
 * it does only one thing: a deliberate data race between a kthread and the
 * loading task on a plain int, which KCSAN must report.
 *
 * Test-only: built against the debug kernel by check-debug alone, never by
 * the top-level Makefile, Kbuild or DKMS.  Never load it anywhere else.
 */
#include <linux/completion.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#define CONTROL_LEAKS	4

static noinline void control_use_after_free(void)
{
	char *p = kmalloc(64, GFP_KERNEL);

	if (!p)
		return;
	kfree(p);
	/* Keep the compiler from seeing (and dropping) the bad read. */
	OPTIMIZER_HIDE_VAR(p);
	pr_info("afrdma_debug_control: read after free: %d\n",
		READ_ONCE(p[8]));
}

static noinline void control_shift_out_of_bounds(void)
{
	volatile int shift = 40;
	int one = 1;

	pr_info("afrdma_debug_control: 1 << 40 as int: %d\n", one << shift);
}

static noinline void control_leak(void)
{
	int i;

	/* Several, in case a stale copy of one pointer survives somewhere. */
	for (i = 0; i < CONTROL_LEAKS; i++) {
		void *p = kmalloc(128, GFP_KERNEL);

		if (p)
			memset(p, 0xa5, 128);
		OPTIMIZER_HIDE_VAR(p);
	}
}

/* Written and read plainly by two threads at once: the race KCSAN reports. */
static unsigned int control_racy;
static DECLARE_COMPLETION(control_race_done);

static noinline int control_race_writer(void *arg)
{
	unsigned long end = jiffies + 3 * HZ;

	while (time_before(jiffies, end)) {
		control_racy++;
		cond_resched();
	}
	complete(&control_race_done);
	return 0;
}

static noinline void control_race_reader(void)
{
	unsigned long sum = 0;

	while (!completion_done(&control_race_done)) {
		sum += control_racy;
		/* Each pass reads it again. */
		barrier();
		cond_resched();
	}
	pr_info("afrdma_debug_control: read %lu\n", sum);
}

static void control_data_race(void)
{
	struct task_struct *t;

	t = kthread_run(control_race_writer, NULL, "afrdma-race");
	if (IS_ERR(t)) {
		pr_err("afrdma_debug_control: no kthread: %ld\n", PTR_ERR(t));
		return;
	}
	control_race_reader();
}

static int __init control_init(void)
{
	if (IS_ENABLED(CONFIG_KCSAN)) {
		/* Worded so that vm-run flags the report, not this line. */
		pr_info("afrdma_debug_control: a deliberate data race follows\n");
		control_data_race();
		return 0;
	}

	/* Worded so that vm-run flags the reports, not this line. */
	pr_info("afrdma_debug_control: three deliberate bug reports follow\n");
	control_use_after_free();
	control_shift_out_of_bounds();
	control_leak();
	return 0;
}

static void __exit control_exit(void)
{
}

module_init(control_init);
module_exit(control_exit);
MODULE_DESCRIPTION("afrdma check-debug positive control: deliberate kernel bugs");
MODULE_LICENSE("GPL");
