// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of the link control messages' parser (net/afrdma/link_msg.h).
 *
 * Each message type built and parsed back; every truncation, a trailing
 * byte, a wrong magic, version, type or length field, and every field
 * just outside its range refused, the values at the edges taken; then a
 * million random messages and mutations of valid ones, each in a heap
 * buffer of exactly its length (ASan sees a read past it), where whatever
 * the parser takes must build back to a message that parses the same.
 * With -n1, -n2 or -n3 it runs a wrong parser instead (one that reads
 * past the bytes received, one that trusts the fields, one that ignores
 * the magic), which the test must fail: it can tell.
 */
#include "host-test.h"
#include "link_msg.h"

static unsigned long long fuzzed, taken;

/* The parser under test: the real one, or one of the wrong ones. */
static int parse(const void *buf, size_t len, struct afrdma_link_msg *m)
{
	unsigned char copy[AFRDMA_LINK_MSG_SIZE] = {};
	struct afrdma_link_hdr h;
	size_t want;

	switch (naive) {
	case 1:	/* takes the length the header claims, not what came */
		if (len < sizeof(h) || len > sizeof(copy))
			return -EPROTO;
		memcpy(copy, buf, len);
		memcpy(&h, copy, sizeof(h));
		want = afrdma_link_msg_len(h.type);
		return afrdma_link_parse(copy, want ? want : len, m);
	case 2:	/* header checks only: the fields are trusted */
		if (!afrdma_link_parse(buf, len, m))
			return 0;
		if (len < sizeof(h))
			return -EPROTO;
		memcpy(&h, buf, sizeof(h));
		want = afrdma_link_msg_len(h.type);
		return afrdma_lm_cpu32(h.magic) == AFRDMA_LINK_MAGIC &&
		       h.version == AFRDMA_LINK_VERSION && want &&
		       afrdma_lm_cpu16(h.len) == want && len == want ? 0 : -EPROTO;
	case 3:	/* no magic check */
		if (len > sizeof(copy))
			return -EPROTO;
		memcpy(copy, buf, len);
		if (len >= 4) {
			__be32 magic = afrdma_lm_be32(AFRDMA_LINK_MAGIC);

			memcpy(copy, &magic, 4);
		}
		return afrdma_link_parse(copy, len, m);
	}
	return afrdma_link_parse(buf, len, m);
}

/* Parses @len bytes of @src from a heap buffer of exactly that size. */
static int parse_exact(const void *src, size_t len, struct afrdma_link_msg *m)
{
	void *buf = malloc(len ? len : 1);
	int ret;

	memcpy(buf, src, len);
	ret = parse(buf, len, m);
	free(buf);
	return ret;
}

static void valid_hello(struct afrdma_link_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = AFRDMA_LINK_MSG_HELLO;
	m->hello.flags = rnd();
	m->hello.rx_credits = AFRDMA_LINK_MIN_CREDITS +
		rnd() % (AFRDMA_LINK_MAX_CREDITS - AFRDMA_LINK_MIN_CREDITS + 1);
	m->hello.chunk_order = rnd() % (AFRDMA_LINK_MAX_CHUNK_ORDER + 1);
	m->hello.page_shift = 12 + rnd() % 5;
	m->hello.max_chunks = 1 + rnd() % AFRDMA_LINK_MAX_CHUNKS;
	m->hello.nonce = rnd();
}

static void valid_area(struct afrdma_link_area *a)
{
	a->chunk = rnd() % AFRDMA_LINK_MAX_CHUNKS;
	a->order = rnd() % (AFRDMA_LINK_MAX_CHUNK_ORDER + 1);
	a->page = (rnd() % (1U << AFRDMA_LINK_MAX_CHUNK_ORDER)) & ~((1U << a->order) - 1);
}

/* A valid message of @type (0: any), credits and seq included. */
static void valid_msg(struct afrdma_link_msg *m, unsigned int type)
{
	if (!type)
		type = 1 + rnd() % (AFRDMA_LINK_MSG_MAX - 1);
	if (type == AFRDMA_LINK_MSG_HELLO)
		valid_hello(m);
	else
		memset(m, 0, sizeof(*m));
	m->type = type;
	m->credits = rnd() % (AFRDMA_LINK_MAX_CREDITS + 1);
	m->seq = rnd();
	switch (type) {
	case AFRDMA_LINK_MSG_USE:
		m->use.users = rnd() % (AFRDMA_LINK_MAX_USERS + 1ULL);
		break;
	case AFRDMA_LINK_MSG_CHUNK:
		m->chunk.chunk = rnd() % AFRDMA_LINK_MAX_CHUNKS;
		m->chunk.rkey = rnd();
		m->chunk.iova = rnd();
		break;
	case AFRDMA_LINK_MSG_CONNECT:
		m->connect.stream = 1 + rnd() % 0xffffffffU;
		m->connect.sport = rnd() % 65536;
		m->connect.dport = 1 + rnd() % 65535;
		m->connect.flags = rnd() % (AFRDMA_LINK_STREAM_FLAGS + 1);
		valid_area(&m->connect.area);
		break;
	case AFRDMA_LINK_MSG_ACCEPT:
		m->accept.stream = 1 + rnd() % 0xffffffffU;
		m->accept.peer_stream = 1 + rnd() % 0xffffffffU;
		valid_area(&m->accept.area);
		break;
	case AFRDMA_LINK_MSG_REFUSE:
	case AFRDMA_LINK_MSG_RESET:
		m->stream.stream = 1 + rnd() % 0xffffffffU;
		m->stream.value = 1 + rnd() % (AFRDMA_LINK_REASON_MAX - 1);
		break;
	case AFRDMA_LINK_MSG_CURSOR:
	case AFRDMA_LINK_MSG_FIN:
		m->stream.stream = 1 + rnd() % 0xffffffffU;
		m->stream.value = rnd();
		break;
	}
}

static bool same_area(const struct afrdma_link_area *a, const struct afrdma_link_area *b)
{
	return a->chunk == b->chunk && a->page == b->page && a->order == b->order;
}

static bool same(const struct afrdma_link_msg *a, const struct afrdma_link_msg *b)
{
	if (a->type != b->type || a->credits != b->credits || a->seq != b->seq)
		return false;
	switch (a->type) {
	case AFRDMA_LINK_MSG_HELLO:
		return a->hello.flags == b->hello.flags &&
		       a->hello.rx_credits == b->hello.rx_credits &&
		       a->hello.chunk_order == b->hello.chunk_order &&
		       a->hello.page_shift == b->hello.page_shift &&
		       a->hello.max_chunks == b->hello.max_chunks &&
		       a->hello.nonce == b->hello.nonce;
	case AFRDMA_LINK_MSG_USE:
		return a->use.users == b->use.users;
	case AFRDMA_LINK_MSG_CHUNK:
		return a->chunk.chunk == b->chunk.chunk &&
		       a->chunk.rkey == b->chunk.rkey && a->chunk.iova == b->chunk.iova;
	case AFRDMA_LINK_MSG_CONNECT:
		return a->connect.stream == b->connect.stream &&
		       a->connect.sport == b->connect.sport &&
		       a->connect.dport == b->connect.dport &&
		       a->connect.flags == b->connect.flags &&
		       same_area(&a->connect.area, &b->connect.area);
	case AFRDMA_LINK_MSG_ACCEPT:
		return a->accept.stream == b->accept.stream &&
		       a->accept.peer_stream == b->accept.peer_stream &&
		       same_area(&a->accept.area, &b->accept.area);
	}
	return a->stream.stream == b->stream.stream && a->stream.value == b->stream.value;
}

/* Builds @m (credits and seq from it) into @buf; returns the length. */
static size_t build(void *buf, const struct afrdma_link_msg *m)
{
	struct afrdma_link_msg hello;

	memset(buf, 0, AFRDMA_LINK_MSG_SIZE);
	if (m->type == AFRDMA_LINK_MSG_HELLO) {
		/* as link.c calls it: the type is the builder's to set */
		hello = *m;
		hello.type = 0;
		return afrdma_link_build_hello(buf, m->credits, m->seq, &hello);
	}
	if (m->type == AFRDMA_LINK_MSG_USE)
		return afrdma_link_build_use(buf, m->credits, m->seq, m->use.users);
	return afrdma_link_build_msg(buf, m->credits, m->seq, m);
}

/* @m built with the change @edit made: taken or refused as @ok says. */
static void edge(struct afrdma_link_msg *m, bool ok, const char *what,
		 unsigned long long i)
{
	unsigned char buf[AFRDMA_LINK_MSG_SIZE];
	struct afrdma_link_msg got;
	size_t len = build(buf, m);
	int ret = parse_exact(buf, len, &got);

	expect(ok ? !ret && same(m, &got) : ret == -EPROTO, what, i);
}

/* Every stream message's fields at and just past their edges. */
static void stream_edges(void)
{
	static const unsigned int types[] = {
		AFRDMA_LINK_MSG_CONNECT, AFRDMA_LINK_MSG_ACCEPT, AFRDMA_LINK_MSG_REFUSE,
		AFRDMA_LINK_MSG_CURSOR, AFRDMA_LINK_MSG_FIN, AFRDMA_LINK_MSG_RESET,
	};
	struct afrdma_link_area *area;
	struct afrdma_link_msg m;
	unsigned int i, t, o;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		t = types[i];
		valid_msg(&m, t);
		*(t == AFRDMA_LINK_MSG_CONNECT ? &m.connect.stream :
		  t == AFRDMA_LINK_MSG_ACCEPT ? &m.accept.stream : &m.stream.stream) = 0;
		edge(&m, false, "a stream message to stream 0 taken", t);
		valid_msg(&m, t);
		*(t == AFRDMA_LINK_MSG_CONNECT ? &m.connect.stream :
		  t == AFRDMA_LINK_MSG_ACCEPT ? &m.accept.stream : &m.stream.stream) = 0xffffffff;
		edge(&m, true, "a stream message to stream 2^32-1 refused", t);
	}
	valid_msg(&m, AFRDMA_LINK_MSG_ACCEPT);
	m.accept.peer_stream = 0;
	edge(&m, false, "an ACCEPT from stream 0 taken", 0);
	valid_msg(&m, AFRDMA_LINK_MSG_CONNECT);
	m.connect.dport = 0;
	edge(&m, false, "a CONNECT to port 0 taken", 0);
	m.connect.dport = 65535;
	m.connect.sport = 0;
	edge(&m, true, "a CONNECT from port 0 to 65535 refused", 0);
	for (o = 1; o < 32; o++) {
		valid_msg(&m, AFRDMA_LINK_MSG_CONNECT);
		m.connect.flags = 1U << o;
		edge(&m, false, "a CONNECT with an unknown flag taken", o);
	}
	for (t = AFRDMA_LINK_MSG_REFUSE; t <= AFRDMA_LINK_MSG_RESET; t += 3) {
		valid_msg(&m, t);
		m.stream.value = 0;
		edge(&m, false, "no reason taken", t);
		m.stream.value = AFRDMA_LINK_REASON_MAX;
		edge(&m, false, "an unknown reason taken", t);
		m.stream.value = AFRDMA_LINK_REASON_MAX - 1;
		edge(&m, true, "the last reason refused", t);
	}
	for (t = AFRDMA_LINK_MSG_CURSOR; t <= AFRDMA_LINK_MSG_FIN; t++) {
		valid_msg(&m, t);
		m.stream.value = 0;
		edge(&m, true, "a count of 0 refused", t);
		m.stream.value = 0xffffffff;
		edge(&m, true, "a count of 2^32-1 refused", t);
	}
	valid_msg(&m, AFRDMA_LINK_MSG_CHUNK);
	m.chunk.chunk = AFRDMA_LINK_MAX_CHUNKS - 1;
	edge(&m, true, "the last chunk refused", 0);
	m.chunk.chunk = AFRDMA_LINK_MAX_CHUNKS;
	edge(&m, false, "a chunk past the last taken", 0);

	/* Areas, in both messages that offer one. */
	for (t = AFRDMA_LINK_MSG_CONNECT; t <= AFRDMA_LINK_MSG_ACCEPT; t++) {
		valid_msg(&m, t);
		area = t == AFRDMA_LINK_MSG_CONNECT ? &m.connect.area : &m.accept.area;
		area->chunk = AFRDMA_LINK_MAX_CHUNKS - 1;
		area->order = AFRDMA_LINK_MAX_CHUNK_ORDER;
		area->page = 0;
		edge(&m, true, "a whole chunk refused", t);
		area->order = AFRDMA_LINK_MAX_CHUNK_ORDER + 1;
		edge(&m, false, "an area larger than any chunk taken", t);
		area->order = 255;
		edge(&m, false, "an area of order 255 taken", t);
		area->order = 0;
		area->chunk = AFRDMA_LINK_MAX_CHUNKS;
		edge(&m, false, "an area in a chunk past the last taken", t);
		area->chunk = 0;
		for (o = 0; o <= AFRDMA_LINK_MAX_CHUNK_ORDER; o++) {
			area->order = o;
			area->page = (1U << AFRDMA_LINK_MAX_CHUNK_ORDER) - (1U << o);
			edge(&m, true, "the last area of an order refused", t * 100 + o);
			area->page += 1U << o;
			edge(&m, false, "an area past the chunk taken", t * 100 + o);
			if (o) {
				area->page = 1U << (o - 1);
				edge(&m, false, "an unaligned area taken", t * 100 + o);
			}
		}
		area->page = 0xffffffff;
		area->order = 0;
		edge(&m, false, "an area at page 2^32-1 taken", t);
	}
}

/* A HELLO with one field set to @v: taken or refused as @ok says. */
enum field { RX_CREDITS, CHUNK_ORDER, PAGE_SHIFT, MAX_CHUNKS, CREDITS };

static void hello_field(enum field f, unsigned int v, bool ok)
{
	unsigned char buf[AFRDMA_LINK_MSG_SIZE];
	struct afrdma_link_msg m, got;
	size_t len;

	valid_hello(&m);
	switch (f) {
	case RX_CREDITS: m.hello.rx_credits = v; break;
	case CHUNK_ORDER: m.hello.chunk_order = v; break;
	case PAGE_SHIFT: m.hello.page_shift = v; break;
	case MAX_CHUNKS: m.hello.max_chunks = v; break;
	case CREDITS: m.credits = v; break;
	}
	len = build(buf, &m);
	expect(!parse_exact(buf, len, &got) == ok,
	       ok ? "a HELLO at a field's edge refused" :
		    "a HELLO with a field out of range taken", f * 100000ULL + v);
}

static void fixed_cases(void)
{
	unsigned char buf[AFRDMA_LINK_MSG_SIZE + 8];
	struct afrdma_link_cm_priv priv;
	struct afrdma_link_msg m, got;
	struct afrdma_link_hdr *h = (void *)buf;
	unsigned int i, t;
	size_t len, l;

	for (i = 0; i < 9000; i++) {
		valid_msg(&m, 1 + i % (AFRDMA_LINK_MSG_MAX - 1));
		len = build(buf, &m);
		expect(len <= AFRDMA_LINK_MSG_SIZE, "a message longer than a buffer", i);
		expect(!parse_exact(buf, len, &got) && same(&m, &got),
		       "a built message does not parse back", i);
		for (l = 0; l < len; l++)
			expect(parse_exact(buf, l, &got) == -EPROTO,
			       "a truncated message taken", i * 100 + l);
		expect(parse_exact(buf, len + 1, &got) == -EPROTO,
		       "a message with a trailing byte taken", i);
		/* the header's length must match */
		h->len = afrdma_lm_be16(len + 1);
		expect(parse_exact(buf, len, &got) == -EPROTO,
		       "a wrong length field taken", i);
		build(buf, &m);
		h->magic ^= afrdma_lm_be32(1U << (rnd() % 32));
		expect(parse_exact(buf, len, &got) == -EPROTO,
		       "a wrong magic taken", i);
		build(buf, &m);
		h->version = AFRDMA_LINK_VERSION + 1 + rnd() % 254;
		expect(parse_exact(buf, len, &got) == -EPROTO,
		       "a wrong version taken", i);
	}
	/* Types this version does not know, at every length they might claim. */
	for (t = 0; t < 256; t++) {
		if (afrdma_link_msg_len(t))
			continue;
		for (l = sizeof(*h); l <= AFRDMA_LINK_MSG_SIZE; l++) {
			memset(buf, 0, sizeof(buf));
			afrdma_link_build_hdr(h, AFRDMA_LINK_MSG_USE, 0, 0);
			h->type = t;
			h->len = afrdma_lm_be16(l);
			expect(parse_exact(buf, l, &got) == -EPROTO,
			       "an unknown type taken", t * 100 + l);
		}
	}
	hello_field(RX_CREDITS, AFRDMA_LINK_MIN_CREDITS - 1, false);
	hello_field(RX_CREDITS, AFRDMA_LINK_MIN_CREDITS, true);
	hello_field(RX_CREDITS, AFRDMA_LINK_MAX_CREDITS, true);
	hello_field(RX_CREDITS, AFRDMA_LINK_MAX_CREDITS + 1, false);
	hello_field(RX_CREDITS, 0, false);
	hello_field(CHUNK_ORDER, AFRDMA_LINK_MAX_CHUNK_ORDER, true);
	hello_field(CHUNK_ORDER, AFRDMA_LINK_MAX_CHUNK_ORDER + 1, false);
	hello_field(CHUNK_ORDER, 255, false);
	hello_field(PAGE_SHIFT, 11, false);
	hello_field(PAGE_SHIFT, 12, true);
	hello_field(PAGE_SHIFT, 16, true);
	hello_field(PAGE_SHIFT, 17, false);
	hello_field(MAX_CHUNKS, 0, false);
	hello_field(MAX_CHUNKS, 1, true);
	hello_field(MAX_CHUNKS, AFRDMA_LINK_MAX_CHUNKS, true);
	hello_field(MAX_CHUNKS, AFRDMA_LINK_MAX_CHUNKS + 1, false);
	hello_field(MAX_CHUNKS, 0xffffffff, false);
	hello_field(CREDITS, AFRDMA_LINK_MAX_CREDITS, true);
	hello_field(CREDITS, AFRDMA_LINK_MAX_CREDITS + 1, false);
	hello_field(CREDITS, 0xffff, false);
	memset(&m, 0, sizeof(m));
	m.type = AFRDMA_LINK_MSG_USE;
	m.use.users = AFRDMA_LINK_MAX_USERS;
	len = build(buf, &m);
	expect(!parse_exact(buf, len, &got), "USE at its edge refused", 0);
	m.use.users = AFRDMA_LINK_MAX_USERS + 1;
	len = build(buf, &m);
	expect(parse_exact(buf, len, &got) == -EPROTO, "USE out of range taken", 0);
	stream_edges();

	afrdma_link_build_cm_priv(&priv);
	expect(!afrdma_link_parse_cm_priv(&priv, sizeof(priv)), "cm private data refused", 0);
	for (l = 0; l < sizeof(priv); l++)
		expect(afrdma_link_parse_cm_priv(&priv, l) == -EPROTO,
		       "short cm private data taken", l);
	expect(afrdma_link_parse_cm_priv(NULL, 0) == -EPROTO, "no private data taken", 0);
	priv.version++;
	expect(afrdma_link_parse_cm_priv(&priv, sizeof(priv)) == -EPROTO,
	       "cm private data of another version taken", 0);
	afrdma_link_build_cm_priv(&priv);
	priv.magic ^= afrdma_lm_be32(0x100);
	expect(afrdma_link_parse_cm_priv(&priv, sizeof(priv)) == -EPROTO,
	       "cm private data with a wrong magic taken", 0);
}

/* Whatever the parser takes builds back to a message parsed the same. */
static void fuzz(unsigned long n)
{
	unsigned char buf[AFRDMA_LINK_MSG_SIZE + 8], again[AFRDMA_LINK_MSG_SIZE];
	struct afrdma_link_msg m, got, got2;
	unsigned long i;
	size_t len, k;

	for (i = 0; i < n; i++) {
		if (rnd() % 4 == 0) {
			len = rnd() % sizeof(buf);
			for (k = 0; k < len; k++)
				buf[k] = rnd();
		} else {
			valid_msg(&m, 0);
			if (m.type == AFRDMA_LINK_MSG_USE)
				m.use.users = rnd();
			m.credits = rnd() % 2048;
			len = build(buf, &m);
			for (k = rnd() % 4; k; k--)
				buf[rnd() % len] ^= 1U << (rnd() % 8);
			if (rnd() % 8 == 0)
				len = rnd() % (len + 4);
		}
		fuzzed++;
		if (parse_exact(buf, len, &got))
			continue;
		taken++;
		expect(len == afrdma_link_msg_len(got.type), "taken at a wrong length", i);
		build(again, &got);
		expect(!afrdma_link_parse(again, len, &got2) && same(&got, &got2),
		       "a taken message does not build back", i);
	}
}

int main(int argc, char **argv)
{
	host_test_init("link_msg_test", 0x2545f4914f6cdd1dULL, argc, argv);
	fixed_cases();
	fuzz(1000000);
	if (host_test_failed("a wrong parser"))
		return 1;
	printf("%llu checks, %llu random messages (%llu taken): all good\n",
	       checks, fuzzed, taken);
	return 0;
}
