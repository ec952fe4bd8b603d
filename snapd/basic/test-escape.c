/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cescape() and json_string(): any file name, one line, told back exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "json-util.h"
#include "macro.h"
#include "tests.h"

static void check_cescape(const char *in, const char *want) {
        _cleanup_free_ char *out = cescape(in);

        CHECK_STREQ(out, want);
}

static void check_json(const char *in, const char *want) {
        _cleanup_free_ char *out = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);

        if (!f)
                abort();
        json_string(f, in);
        fclose(f);
        CHECK_STREQ(out, want);
}

int main(void) {
        CHECK(utf8_char_len("a") == 1);
        CHECK(utf8_char_len("\xc3\xa9") == 2);
        CHECK(utf8_char_len("\xe2\x9c\x93") == 3);
        CHECK(utf8_char_len("\xf0\x9f\x98\x80") == 4);
        CHECK(utf8_char_len("\xff") == 0);
        CHECK(utf8_char_len("\xc0\xaf") == 0);          /* overlong '/' */
        CHECK(utf8_char_len("\xe0\x80\xaf") == 0);      /* overlong */
        CHECK(utf8_char_len("\xed\xa0\x80") == 0);      /* a surrogate */
        CHECK(utf8_char_len("\xf4\x90\x80\x80") == 0);  /* beyond U+10FFFF */
        CHECK(utf8_char_len("\xc3") == 0);              /* cut short */
        CHECK(utf8_char_len("") == 0);

        check_cescape("plain name", "plain name");
        check_cescape("a\nb", "a\\nb");
        check_cescape("\e[31m", "\\x1b[31m");
        check_cescape("\xff", "\\xff");
        check_cescape("back\\slash", "back\\\\slash");
        check_cescape("tab\there\r", "tab\\there\\r");
        check_cescape("del\x7f", "del\\x7f");
        check_cescape("\xc2\x9b" "2J", "\\xc2\\x9b2J");         /* C1 CSI */
        check_cescape("\xc3\xbc" "n\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9 \xe2\x9c\x93", "\xc3\xbc" "n\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9 \xe2\x9c\x93");
        check_cescape("caf\xc3", "caf\\xc3");
        check_cescape("", "");

        check_json("plain", "\"plain\"");
        check_json("a\nb", "\"a\\u000ab\"");
        check_json("\e[31m", "\"\\u001b[31m\"");
        check_json("q\"b\\", "\"q\\\"b\\\\\"");
        check_json("\xff", "\"\\udcff\"");
        check_json("caf\xc3", "\"caf\\udcc3\"");
        check_json("\xc3\xa9", "\"\xc3\xa9\"");
        /* Lines of messages: each escaped, backslashes (of names escaped already) left, newlines kept. */
        {
                char *out = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&out, &size);

                CHECK(f != NULL);
                if (f) {
                        fputs_cescaped_lines("a\\x1b:1: x\x1b[31m\nline two \xff\n", f);
                        fclose(f);
                        CHECK_STREQ(out, "a\\x1b:1: x\\x1b[31m\nline two \\xff\n");
                        free(out);
                }
        }
        return tests_end();
}
