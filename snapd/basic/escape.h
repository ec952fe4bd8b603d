/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdio.h>

/*
 * File names as a terminal or the journal may show them.  A name is any
 * bytes but '/' and NUL: a newline in it would forge a line (a journal
 * entry, a line of diff output), an escape sequence would drive the
 * terminal, and bytes that are not UTF-8 are no text at all.
 *
 * cescape(): as systemd's cescape() does, in C's notation: \a \b \t \n \v
 * \f \r, \\ for a backslash, \xNN for every other control character
 * (C0, DEL, and C1 as its UTF-8 bytes) and for each byte that is not part
 * of valid UTF-8.  Valid UTF-8 text is left as it is.  One name, one line,
 * and the name can be told back exactly.
 */
size_t utf8_char_len(const char *s);    /* 1-4 for a valid UTF-8 character at s, 0 for none */
char *cescape(const char *s);           /* a new string; NULL on ENOMEM */
void fputs_cescaped(const char *s, FILE *f);
/*
 * Text of lines (messages whose file names are escaped already), each
 * line's control characters and bytes of no UTF-8 escaped as cescape()
 * does, its backslashes left as they are, its newline kept.
 */
void fputs_cescaped_lines(const char *s, FILE *f);
