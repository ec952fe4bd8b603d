/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * reflink(1): make files that share another file's data copy-on-write,
 * with reflinkat(2).  See reflink.1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "exit-status.h"
#include "macro.h"
#include "preserve.h"
#include "reflink.h"
#include "reflink-target.h"

static unsigned int arg_preserve = REFLINK_ATTR_NONE;
static bool arg_retry_none = false;
static unsigned int arg_flags = 0;
static bool arg_verbose = false;

static void help(void) {
        printf("Usage: reflink [OPTION]... SOURCE DEST\n"
               "       reflink [OPTION]... SOURCE... DIRECTORY\n"
               "Make DEST (or DIRECTORY/SOURCE's name) a new file sharing SOURCE's data\n"
               "copy-on-write.\n\n"
               "  -P, --preserve-all     keep owner, mode, ACL and security attributes;\n"
               "                         fail where that is not permitted\n"
               "  -p                     as -P, but where that fails with EPERM make a\n"
               "                         file of the caller's instead\n"
               "      --preserve=LIST    keep what LIST names: owner, security, mode, acl,\n"
               "                         all, none (default: none)\n"
               "  -L, --follow           reflink the file a symbolic link SOURCE points to\n"
               "  -v, --verbose          say what was made\n"
               "  -h, --help             show this help\n"
               "      --version          show the version\n");
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_PRESERVE = 0x100, ARG_VERSION };
        static const struct option options[] = {
                { "preserve-all", no_argument,       NULL, 'P' },
                { "preserve",     required_argument, NULL, ARG_PRESERVE },
                { "follow",       no_argument,       NULL, 'L' },
                { "verbose",      no_argument,       NULL, 'v' },
                { "help",         no_argument,       NULL, 'h' },
                { "version",      no_argument,       NULL, ARG_VERSION },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "PpLvh", options, NULL)) >= 0)
                switch (c) {
                case 'P':
                        arg_preserve = REFLINK_ATTR_ALL;
                        arg_retry_none = false;
                        break;
                case 'p':
                        arg_preserve = REFLINK_ATTR_ALL;
                        arg_retry_none = true;
                        break;
                case ARG_PRESERVE:
                        if (preserve_from_string(optarg, &arg_preserve) < 0) {
                                fprintf(stderr, "reflink: --preserve=%s: expected a list of "
                                        "owner, security, mode, acl, all, none\n", optarg);
                                return -EINVAL;
                        }
                        arg_retry_none = false;
                        break;
                case 'L':
                        arg_flags |= AT_SYMLINK_FOLLOW;
                        break;
                case 'v':
                        arg_verbose = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("reflink " PROJECT_VERSION "\n");
                        return 0;
                default:
                        return -EINVAL;
                }

        if (argc - optind < 2) {
                fprintf(stderr, "reflink: %s\nTry 'reflink --help'.\n",
                        argc == optind ? "missing SOURCE and DEST" : "missing DEST");
                return -EINVAL;
        }
        return 1;
}

static int reflink_one(const char *source, const char *dest, bool dest_is_dir) {
        _cleanup_free_ char *target = NULL;
        unsigned int preserve = arg_preserve;
        char buf[64];
        int r;

        r = reflink_target(source, dest, dest_is_dir, &target);
        if (r < 0) {
                fprintf(stderr, "reflink: cannot name a file in '%s' after '%s': %s\n",
                        dest, source, strerror(-r));
                return r;
        }

        r = reflinkat(AT_FDCWD, source, AT_FDCWD, target, preserve, arg_flags);
        if (r < 0 && errno == EPERM && arg_retry_none && preserve != REFLINK_ATTR_NONE) {
                if (arg_verbose)
                        fprintf(stderr, "reflink: '%s': not permitted to preserve %s, "
                                "making a file of the caller's\n", source,
                                preserve_to_string(preserve, buf, sizeof(buf)));
                preserve = REFLINK_ATTR_NONE;
                r = reflinkat(AT_FDCWD, source, AT_FDCWD, target, preserve, arg_flags);
        }
        if (r < 0) {
                r = negative_errno();
                fprintf(stderr, "reflink: cannot reflink '%s' to '%s': %s\n",
                        source, target, strerror(-r));
                if (r == -ENOSYS)
                        fprintf(stderr, "reflink: this kernel has no reflinkat(2)\n");
                return r;
        }
        if (arg_verbose)
                printf("'%s' => '%s' (preserve %s)\n", target, source,
                       preserve_to_string(preserve, buf, sizeof(buf)));
        return 0;
}

int main(int argc, char *argv[]) {
        const char *dest;
        struct stat st;
        bool is_dir;
        int r, ret = 0;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_OK;

        dest = argv[argc - 1];
        /* As ln(1): a DEST naming a directory (or a link to one) receives. */
        is_dir = stat(dest, &st) == 0 && S_ISDIR(st.st_mode);
        if (argc - optind > 2 && !is_dir) {
                fprintf(stderr, "reflink: target '%s' is not a directory\n", dest);
                return EXIT_USAGE;
        }

        for (int i = optind; i < argc - 1; i++)
                if (reflink_one(argv[i], dest, is_dir) < 0)
                        ret = EXIT_FAILED;
        return ret;
}
