// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of a stream's pure logic (net/afrdma/stream_state.h).
 *
 * The state machine against a table written here from links.rst, every
 * state and event and past their ends; the areas a peer may offer,
 * exhaustively against a model; the cursor checks against 64-bit counts
 * that do not wrap, around 0, 2^31 and 2^32; then a hundred thousand runs
 * of two ends exchanging a stream's messages in order (CONNECT, ACCEPT or
 * REFUSE, data of up to 1 GiB a write, CURSOR, FIN and RESET, at random),
 * whose counts go round 2^32 many times: a correct peer must never be
 * refused, the bytes in flight never pass the area, and both ends must end
 * closed.  With -n1, -n2 or -n3 it tests a wrong version instead (cursors
 * compared without the wrap, areas without their alignment, FIN closing
 * an established stream at once), which the test must fail: it can tell.
 */
#include <string.h>

#include "host-test.h"
#include "stream_state.h"

static unsigned long long runs, wraps;

/* The functions under test: the real ones, or the wrong ones. */
static int next(unsigned int state, unsigned int ev)
{
	if (naive == 3 && state == AFRDMA_STREAM_ESTABLISHED &&
	    ev == AFRDMA_STREAM_RX_FIN)
		return AFRDMA_STREAM_CLOSED;
	return afrdma_stream_next(state, ev);
}

static bool cursor_ok(__u32 acked, __u32 written, __u32 cursor)
{
	if (naive == 1)
		return cursor >= acked && cursor <= written;
	return afrdma_stream_cursor_ok(acked, written, cursor);
}

static bool area_fits(unsigned int page, unsigned int order, unsigned int co)
{
	if (naive == 2)
		return order <= co && page + (1U << order) <= 1U << co;
	return afrdma_stream_area_fits(page, order, co);
}

enum {
	SS = AFRDMA_STREAM_SYN_SENT,
	ES = AFRDMA_STREAM_ESTABLISHED,
	FW = AFRDMA_STREAM_FIN_WAIT,
	CW = AFRDMA_STREAM_CLOSE_WAIT,
	CL = AFRDMA_STREAM_CLOSED,
	P = -EPROTO,
	I = -EINVAL
};

/* links.rst's lifecycle, as a table: [state][event] */
static const int table[AFRDMA_STREAM_STATE_MAX][AFRDMA_STREAM_EVENT_MAX] = {
	/*	  ACCEPT REFUSE CURSOR FIN  RESET  TX_FIN TX_RESET */
	[SS] = { ES,	CL,	P,	P,	CL,	I,	CL },
	[ES] = { P,	P,	ES,	CW,	CL,	FW,	CL },
	[FW] = { P,	P,	FW,	CL,	CL,	I,	CL },
	[CW] = { P,	P,	CW,	P,	CL,	CL,	CL },
	[CL] = { P,	P,	P,	P,	P,	I,	I },
};

static void state_cases(void)
{
	unsigned int s, e;

	for (s = 0; s < AFRDMA_STREAM_STATE_MAX; s++)
		for (e = 0; e < AFRDMA_STREAM_EVENT_MAX; e++)
			expect(next(s, e) == table[s][e], "transition",
			       s * 100 + e);
	for (s = 0; s <= AFRDMA_STREAM_STATE_MAX + 1; s++) {
		expect(next(s, AFRDMA_STREAM_EVENT_MAX) == -EINVAL,
		       "an event past the last", s);
		expect(next(s, ~0U) == -EINVAL, "event ~0", s);
	}
	expect(next(AFRDMA_STREAM_STATE_MAX, 0) == -EINVAL, "a state past the last", 0);
	expect(next(~0U, 0) == -EINVAL, "state ~0", 0);
}

/* Every area of up to 2^13 pages at every page below 2^13, in chunks of 2^0..2^12. */
static void area_cases(void)
{
	unsigned int co, order, page;
	bool model;

	for (co = 0; co <= 12; co++)
		for (order = 0; order <= 13; order++)
			for (page = 0; page < 1U << 13; page++) {
				model = order <= co &&
					page % (1U << order) == 0 &&
					page + (1ULL << order) <= 1ULL << co;
				expect(area_fits(page, order, co) == model,
				       "area", (co << 24) | (order << 16) | page);
			}
}

/* Cursors near @base, against counts that do not wrap. */
static void cursor_around(unsigned long long base)
{
	static const unsigned long long spans[] = { 0, 1, 4096, 1ULL << 20,
						    1ULL << 31 };
	unsigned long long a, w, c;
	unsigned int i, k;
	__u32 size;

	for (i = 0; i < ARRAY_SIZE(spans); i++) {
		for (k = 0; k < 2000; k++) {
			a = base - 1000 + rnd() % 2000;	/* acked */
			w = a + (spans[i] ? rnd() % (spans[i] + 1) : 0);
			/* a cursor from well before acked to past written */
			c = a - 3 + rnd() % (w - a + 7);
			if (k & 1)
				c = k & 2 ? a - 1 - rnd() % (1ULL << 30) :
					    w + 1 + rnd() % (1ULL << 30);
			expect(cursor_ok((__u32)a, (__u32)w, (__u32)c) ==
			       (c >= a && c <= w), "cursor", k);
			expect(afrdma_stream_in_flight((__u32)w, (__u32)a) == w - a,
			       "in flight", k);
			size = 1U << 31;
			expect(afrdma_stream_room((__u32)w, (__u32)a, size) ==
			       (w - a >= size ? 0 : size - (w - a)), "room", k);
		}
	}
}

static void cursor_cases(void)
{
	cursor_around(1ULL << 32);		/* the wrap */
	cursor_around((1ULL << 32) - 1);
	cursor_around(1ULL << 31);
	cursor_around(5ULL << 32);
	cursor_around(1ULL << 20);
	expect(afrdma_stream_fin_ok(0, 0) && afrdma_stream_fin_ok(~0U, ~0U) &&
	       !afrdma_stream_fin_ok(0, 1) && !afrdma_stream_fin_ok(1, 0),
	       "fin", 0);
}

/* A message on the ordered channel between the two ends. */
enum { M_CONNECT, M_ACCEPT, M_REFUSE, M_DATA, M_CURSOR, M_FIN, M_RESET };

struct msg {
	int		type;
	__u32		value;
};

#define QLEN	4096

struct end {
	int		state;		/* -1: no stream yet (the acceptor) */
	__u32		written, acked;	/* as a writer */
	__u32		received, consumed; /* as a reader */
	unsigned long long total;	/* written, without the wrap */
	struct msg	q[QLEN];	/* what it sent, not yet delivered */
	unsigned int	head, tail;
};

#define AREA	(1U << 31)

static void send_msg(struct end *e, int type, __u32 value)
{
	if (e->head - e->tail >= QLEN)
		return;		/* never: the runs are shorter */
	e->q[e->head % QLEN] = (struct msg){ type, value };
	e->head++;
}

/* @to receives @m from its peer; false on a refused message. */
static bool deliver(struct end *to, const struct msg *m)
{
	static const int ev[] = {
		[M_ACCEPT] = AFRDMA_STREAM_RX_ACCEPT,
		[M_REFUSE] = AFRDMA_STREAM_RX_REFUSE,
		[M_CURSOR] = AFRDMA_STREAM_RX_CURSOR,
		[M_FIN] = AFRDMA_STREAM_RX_FIN,
		[M_RESET] = AFRDMA_STREAM_RX_RESET,
	};
	int n;

	if (m->type == M_CONNECT) {
		if (rnd() % 8 == 0) {
			send_msg(to, M_REFUSE, 0);
			return true;
		}
		to->state = ES;
		send_msg(to, M_ACCEPT, 0);
		return true;
	}
	/* crossed our RESET or a refusal: dropped, as stream.c does */
	if (to->state < 0 || to->state == CL)
		return true;
	if (m->type == M_DATA) {
		/* RC writes land in order, inside the area */
		if (to->state != ES && to->state != FW)
			return false;
		to->received += m->value;
		return afrdma_stream_in_flight(to->received, to->consumed) <= AREA;
	}
	n = next(to->state, ev[m->type]);
	if (n < 0)
		return false;
	if (m->type == M_CURSOR) {
		if (!cursor_ok(to->acked, to->written, m->value))
			return false;
		to->acked = m->value;
	}
	if (m->type == M_FIN && !afrdma_stream_fin_ok(to->received, m->value))
		return false;
	to->state = n;
	return true;
}

/* One random thing @e does as a user: write, read, FIN or (rarely) RESET. */
static void act(struct end *e)
{
	unsigned int r = rnd() % 100;
	__u32 room, len;
	int n;

	if (e->state != ES && e->state != FW && e->state != CW)
		return;
	if (r < 45 && e->state != FW) {
		room = afrdma_stream_room(e->written, e->acked, AREA);
		if (!room)
			return;
		len = 1 + rnd() % (room < (1U << 30) ? room : 1U << 30);
		e->written += len;
		if ((__u32)(e->total + len) < (__u32)e->total)
			wraps++;
		e->total += len;
		send_msg(e, M_DATA, len);
	} else if (r < 90) {
		if (e->received == e->consumed)
			return;
		e->consumed += 1 + rnd() % (e->received - e->consumed);
		send_msg(e, M_CURSOR, e->consumed);
	} else if (r < 99) {
		n = next(e->state, AFRDMA_STREAM_TX_FIN);
		if (n < 0)
			return;
		e->state = n;
		send_msg(e, M_FIN, e->written);
	} else {
		e->state = CL;
		send_msg(e, M_RESET, 0);
	}
}

/* The one step @from's oldest message makes to @to, if any. */
static bool step(struct end *to, struct end *from, unsigned long long i)
{
	struct msg m;

	if (from->tail == from->head)
		return true;
	m = from->q[from->tail++ % QLEN];
	if (deliver(to, &m))
		return true;
	expect(false, "a correct peer's message refused", i);
	return false;
}

static void protocol_runs(unsigned long long n)
{
	static struct end a, b;
	unsigned long long i, k;
	bool ok;

	for (i = 0; i < n; i++) {
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		a.state = SS;
		b.state = -1;
		send_msg(&a, M_CONNECT, 0);
		ok = true;
		for (k = 0; ok && k < 400; k++) {
			switch (rnd() % 4) {
			case 0:
				ok = step(&b, &a, i);
				break;
			case 1:
				ok = step(&a, &b, i);
				break;
			case 2:
				act(&a);
				break;
			default:
				act(&b);
				break;
			}
		}
		/* Both read all, stop writing, and their messages land. */
		for (k = 0; ok && k < 8; k++) {
			if (a.received != a.consumed &&
			    (a.state == ES || a.state == FW || a.state == CW)) {
				a.consumed = a.received;
				send_msg(&a, M_CURSOR, a.consumed);
			}
			if (b.received != b.consumed &&
			    (b.state == ES || b.state == FW || b.state == CW)) {
				b.consumed = b.received;
				send_msg(&b, M_CURSOR, b.consumed);
			}
			if (next(a.state, AFRDMA_STREAM_TX_FIN) >= 0) {
				a.state = next(a.state, AFRDMA_STREAM_TX_FIN);
				send_msg(&a, M_FIN, a.written);
			}
			if (b.state >= 0 && next(b.state, AFRDMA_STREAM_TX_FIN) >= 0) {
				b.state = next(b.state, AFRDMA_STREAM_TX_FIN);
				send_msg(&b, M_FIN, b.written);
			}
			while (ok && (a.tail != a.head || b.tail != b.head))
				ok = step(&b, &a, i) && step(&a, &b, i);
		}
		if (ok)
			expect(a.state == CL && (b.state == CL || b.state < 0),
			       "both ends closed", i);
		runs++;
	}
}

int main(int argc, char **argv)
{
	host_test_init("stream_test", 0x9e3779b97f4a7c15ULL, argc, argv);
	state_cases();
	area_cases();
	cursor_cases();
	protocol_runs(100000);
	if (host_test_failed("a wrong version"))
		return 1;
	printf("%llu checks, %llu protocol runs, counts wrapped %llu times: all good\n",
	       checks, runs, wraps);
	return 0;
}
