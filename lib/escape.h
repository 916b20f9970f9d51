/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Text from users and from /proc, made fit for a message on a terminal.
 *
 * Arguments, --maps lines and /proc contents may hold any byte: an escape
 * sequence or a newline echoed raw in a message could redraw the user's
 * terminal or forge a line of output.  Every message that repeats such text
 * passes it through esc() (or esc_mem() for a part of a string).
 */
#ifndef PMADVISE_ESCAPE_H
#define PMADVISE_ESCAPE_H

#include <stddef.h>

/*
 * Escapes into `out` (at least 4 * len + 1 bytes) the `len` bytes at `text`:
 * control characters become \n, \t, \r or \xHH, and so does every byte that
 * is not part of valid UTF-8 or that encodes a C1 control, a line or
 * paragraph separator or a bidirectional override.  Other text, UTF-8
 * included, is kept.  Returns the length written, without the NUL.
 */
extern size_t escape_text(char *out, const char *text, size_t len);

/*
 * The escaped copy of the string `text` (of its first `len` bytes), for a
 * message.  The copy lives until eight more calls have been made, so a
 * message may escape several arguments at once.  NULL gives "(null)".
 */
extern const char *esc(const char *text);
extern const char *esc_mem(const char *text, size_t len);

/* Frees the copies still kept (at exit, for leak checkers). */
extern void esc_free(void);

#endif /* PMADVISE_ESCAPE_H */
