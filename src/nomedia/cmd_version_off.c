/* cmd_version_off.c — `vla version` of a VLA_MEDIA=OFF build:
 * src/cli/cmd_version.c compiled unchanged, but with no FFmpeg to ask: its
 * one FFmpeg call (avcodec_version) reads 0 here, its FFmpeg headers are
 * skipped, and the FFmpeg entry of
 * what it prints ("libavcodec 0.0.0", text and JSON alike) is replaced by
 * media_off.h's note. A stop-gap at the narrowest seam while cmd_version.c
 * calls FFmpeg itself: once it takes that line from a function of libvla
 * (which media_off.c would implement with the note), this file goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nomedia/media_off.h"

/* FFmpeg's headers skipped (their include guards set): no FFmpeg needed to build this */
#define AVCODEC_AVCODEC_H
#define AVFORMAT_AVFORMAT_H
#define avcodec_version() 0u
#define vla_cmd_version vla_cmd_version_full
#include "cli/cmd_version.c"
#undef vla_cmd_version

int vla_cmd_version(int argc, char **argv);
int vla_cmd_version(int argc, char **argv) {
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len), *out = stdout;
    if (!mem) return vla_cmd_version_full(argc, argv);
    fflush(out);
    stdout = mem;
    int rc = vla_cmd_version_full(argc, argv);
    fflush(mem);
    stdout = out;
    fclose(mem);
    const char *needle = "libavcodec 0.0.0", *p = text, *hit;
    while ((hit = strstr(p, needle))) {
        fwrite(p, 1, (size_t)(hit - p), stdout);
        fputs(VLA_MEDIA_OFF_NOTE, stdout);
        p = hit + strlen(needle);
    }
    fputs(p, stdout);
    fflush(stdout);
    free(text);
    return rc;
}
