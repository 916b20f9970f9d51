/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Text from users and from /proc, made fit for a message (see escape.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

#define ESC_SLOTS	8

static char *slots[ESC_SLOTS];
static unsigned int next_slot;

/*
 * The length of the valid UTF-8 sequence at s (at most `left` bytes) if it
 * encodes a character fit to print, else 0.
 */
static size_t printable_utf8(const unsigned char *s, size_t left)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n > left)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates and what lies beyond Unicode */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff
	    || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	/* C1 controls; line and paragraph separators; bidirectional overrides */
	if (cp <= 0x9f || cp == 0x2028 || cp == 0x2029
	    || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return 0;
	return n;
}

size_t escape_text(char *out, const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *) text;
	char *o = out;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n;

		if (c >= 0x20 && c < 0x7f) {
			*o++ = (char) c;
			i++;
			continue;
		}
		if (c >= 0x80 && (n = printable_utf8(s + i, len - i)) > 0) {
			memcpy(o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		*o++ = '\\';
		switch (c) {
		case '\n':
			*o++ = 'n';
			break;
		case '\t':
			*o++ = 't';
			break;
		case '\r':
			*o++ = 'r';
			break;
		default:
			o += sprintf(o, "x%02x", c);
			break;
		}
		i++;
	}
	*o = '\0';
	return (size_t) (o - out);
}

const char *esc_mem(const char *text, size_t len)
{
	char **slot = &slots[next_slot++ % ESC_SLOTS];

	if (!text)
		return "(null)";
	free(*slot);
	*slot = len < (SIZE_MAX - 1) / 4 ? malloc(4 * len + 1) : NULL;
	if (!*slot)
		return "(text too long to show)";
	escape_text(*slot, text, len);
	return *slot;
}

const char *esc(const char *text)
{
	return esc_mem(text, text ? strlen(text) : 0);
}

void esc_free(void)
{
	size_t i;

	for (i = 0; i < ESC_SLOTS; i++) {
		free(slots[i]);
		slots[i] = NULL;
	}
}
