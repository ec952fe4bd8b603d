/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log_event() follows the log's target (LogControl1's LogTarget) as
 * log_job() does: "null" says nothing, "console" writes the line on
 * stderr even when stderr is the journal's stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log-event.h"
#include "log.h"
#include "tests.h"

static int saved_stderr = -1;
static FILE *capture;

/* stderr into a temporary file until captured_text(). */
static void capture_start(void) {
        fflush(stderr);
        capture = tmpfile();
        if (!capture)
                abort();
        saved_stderr = dup(STDERR_FILENO);
        if (saved_stderr < 0 || dup2(fileno(capture), STDERR_FILENO) < 0)
                abort();
}

static char *captured_text(void) {
        char *buf;
        long n;

        fflush(stderr);
        if (dup2(saved_stderr, STDERR_FILENO) < 0)
                abort();
        close(saved_stderr);
        n = ftell(capture);
        buf = calloc(1, n + 1);
        if (!buf)
                abort();
        rewind(capture);
        if (n > 0 && fread(buf, 1, n, capture) != (size_t) n)
                abort();
        fclose(capture);
        return buf;
}

int main(void) {
        EventFields f = { .snapshot = "2026-12-06T10:00:00Z" };
        char *out;

        unsetenv("JOURNAL_STREAM");
        log_set_max_level(LOG_INFO);

        /* console: the event's line on stderr. */
        log_set_target(LOG_TARGET_CONSOLE);
        capture_start();
        CHECK(log_event(LOG_INFO, MESSAGE_ID_SNAPSHOT_COMPLETE, "home", &f, "snapshot %s taken", f.snapshot) == 0);
        out = captured_text();
        CHECK_STREQ(out, "<6>home: snapshot 2026-12-06T10:00:00Z taken\n");
        free(out);

        /* null: nothing anywhere, as log_job() says nothing. */
        log_set_target(LOG_TARGET_NULL);
        capture_start();
        CHECK(log_job(LOG_ERR, "home", "a log line") == 0);
        CHECK(log_event(LOG_ERR, MESSAGE_ID_SNAPSHOT_FAILED, "home", &f, "snapshot failed") == 0);
        CHECK(log_event(LOG_INFO, MESSAGE_ID_SNAPSHOT_PRUNED, NULL, NULL, "pruned") == 0);
        out = captured_text();
        CHECK_STREQ(out, "");
        free(out);

        /* console while stderr is the journal's stream: still stderr. */
        {
                struct stat st;
                char *e;

                CHECK(fstat(STDERR_FILENO, &st) == 0);
                capture_start();
                if (fstat(STDERR_FILENO, &st) < 0 ||
                    asprintf(&e, "%llu:%llu", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino) < 0)
                        abort();
                setenv("JOURNAL_STREAM", e, 1);
                free(e);
                log_set_target(LOG_TARGET_CONSOLE);
                CHECK(log_event(LOG_WARNING, MESSAGE_ID_SNAPSHOT_PARTIAL, "srv", NULL, "partial") == 0);
                out = captured_text();
                CHECK_STREQ(out, "<4>srv: partial\n");
                free(out);
                unsetenv("JOURNAL_STREAM");
        }

        /* Back to auto: stderr that is no journal gets the line again. */
        log_set_target(LOG_TARGET_AUTO);
        capture_start();
        CHECK(log_event(LOG_INFO, MESSAGE_ID_RESTORED, "home", NULL, "restored") == 0);
        out = captured_text();
        CHECK_STREQ(out, "<6>home: restored\n");
        free(out);

        return tests_end();
}
