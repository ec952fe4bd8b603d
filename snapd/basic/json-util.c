/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "escape.h"
#include "json-util.h"

void json_string(FILE *f, const char *s) {
        fputc('"', f);
        while (*s) {
                unsigned char c = (unsigned char) *s;
                size_t n = utf8_char_len(s);

                if (n == 0) {
                        /*
                         * A byte of no UTF-8, which JSON cannot hold: as the lone
                         * surrogate U+DC00+byte, as Python's surrogateescape
                         * (os.fsdecode) does, so the name can be told back exactly.
                         */
                        fprintf(f, "\\udc%02x", c);
                        s++;
                } else if (n > 1) {
                        fwrite(s, 1, n, f);
                        s += n;
                } else {
                        if (c == '"' || c == '\\')
                                fprintf(f, "\\%c", c);
                        else if (c < 0x20 || c == 0x7f)
                                fprintf(f, "\\u%04x", c);
                        else
                                fputc(c, f);
                        s++;
                }
        }
        fputc('"', f);
}
