/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

size_t utf8_char_len(const char *str) {
        const unsigned char *s = (const unsigned char *) str;
        uint32_t cp;
        size_t n;

        if (s[0] < 0x80)
                return s[0] ? 1 : 0;
        if (s[0] >= 0xc2 && s[0] <= 0xdf) {
                n = 2;
                cp = s[0] & 0x1f;
        } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                n = 3;
                cp = s[0] & 0x0f;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                n = 4;
                cp = s[0] & 0x07;
        } else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        /* Overlong forms, UTF-16 surrogates, beyond U+10FFFF. */
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
            cp > 0x10ffff)
                return 0;
        return n;
}

/* The escape of byte c (a control character or a byte of no UTF-8), into buf. */
static const char *escape_byte(unsigned char c, char buf[static 5]) {
        static const char hex[] = "0123456789abcdef";

        switch (c) {
        case '\a': return "\\a";
        case '\b': return "\\b";
        case '\t': return "\\t";
        case '\n': return "\\n";
        case '\v': return "\\v";
        case '\f': return "\\f";
        case '\r': return "\\r";
        case '\\': return "\\\\";
        }
        buf[0] = '\\';
        buf[1] = 'x';
        buf[2] = hex[c >> 4];
        buf[3] = hex[c & 15];
        buf[4] = '\0';
        return buf;
}

/*
 * Calls out(piece, len) for each piece of the escaped form of s; a
 * backslash is left as it is when keep_backslash (text escaped already).
 */
static void cescape_each_full(const char *s, bool keep_backslash, void (*out)(const char *p, size_t len, void *u),
                              void *u) {
        char buf[5];

        while (*s) {
                unsigned char c = (unsigned char) *s;
                size_t n = utf8_char_len(s);
                /* C1 controls, U+0080..U+009F: 0xc2 0x80..0x9f. */
                bool c1 = n == 2 && c == 0xc2 && (unsigned char) s[1] <= 0x9f;

                if (n == 1 && c >= 0x20 && c != 0x7f && (c != '\\' || keep_backslash)) {
                        out(s, 1, u);
                        s++;
                } else if (n > 1 && !c1) {
                        out(s, n, u);
                        s += n;
                } else if (c1) {
                        const char *e = escape_byte(c, buf);

                        out(e, strlen(e), u);
                        e = escape_byte((unsigned char) s[1], buf);
                        out(e, strlen(e), u);
                        s += 2;
                } else {
                        const char *e = escape_byte(c, buf);

                        out(e, strlen(e), u);
                        s++;
                }
        }
}

static void cescape_each(const char *s, void (*out)(const char *p, size_t len, void *u), void *u) {
        cescape_each_full(s, false, out, u);
}

typedef struct Buf {
        char *p;
        size_t len;
} Buf;

static void to_buf(const char *p, size_t len, void *u) {
        Buf *b = u;

        memcpy(b->p + b->len, p, len);
        b->len += len;
}

char *cescape(const char *s) {
        /* At most four bytes for each byte. */
        Buf b = { .p = malloc(strlen(s) * 4 + 1) };

        if (!b.p)
                return NULL;
        cescape_each(s, to_buf, &b);
        b.p[b.len] = '\0';
        return b.p;
}

static void to_file(const char *p, size_t len, void *u) {
        fwrite(p, 1, len, u);
}

void fputs_cescaped(const char *s, FILE *f) {
        cescape_each(s, to_file, f);
}

void fputs_cescaped_lines(const char *s, FILE *f) {
        while (s && *s) {
                size_t len = strcspn(s, "\n");
                char *line = strndup(s, len);

                if (line)
                        cescape_each_full(line, true, to_file, f);
                else
                        fputs("(out of memory)", f);
                free(line);
                s += len;
                if (*s == '\n') {
                        fputc('\n', f);
                        s++;
                }
        }
}
