/* fuzz_video_file.c — libFuzzer target for the video decoder wrapper
 * (io/video.h): the input is written to a temp file and opened as a video;
 * info is read and a few timestamps (forward, backward, out of range) are
 * decoded. Any bytes must give a status, never a crash or a hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/video.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/vla-fuzz-video-%d.mp4", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    if (size) fwrite(data, 1, size, f);
    fclose(f);
    vla_video_decoder *d;
    if (vla_video_decoder_open(path, NULL, &d) == VLA_OK) {
        const vla_video_info *in = vla_video_decoder_info(d);
        if (in->width > 0 && in->height > 0 && (int64_t)in->width * in->height <= 1 << 20) {
            uint8_t *rgb = malloc((size_t)in->width * (size_t)in->height * 3);
            const double ts[] = {0.0, 0.5, 0.1, 1e9, -1.0};
            for (int i = 0; rgb && i < 5; i++) (void)vla_video_decoder_read(d, ts[i], 0.06, 0, 0, rgb, NULL);
            uint8_t small[16 * 12 * 3];
            (void)vla_video_decoder_read(d, 0.2, 0.06, 16, 12, small, NULL);
            free(rgb);
        }
        vla_video_decoder_close(d);
    }
    unlink(path);
    return 0;
}
