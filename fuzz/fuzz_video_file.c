/* fuzz_video_file.c — libFuzzer target for the video decoder wrapper
 * (io/video.h): the input is written to a temp file and opened as a video;
 * then each path of vla_video_decoder_read runs once: a seek and decode, a
 * forward decode, a cache hit scaled to another size, a read behind the
 * decoder, one before the start and one past the end. Any bytes must give a
 * status, never a crash or a hang.
 *
 * Kept fast on purpose (FFmpeg's per-open cost under ASan dominates, and
 * every extra seek or decoded frame costs executions that reach our code):
 * inputs are small (the seeds are 2–3 KiB; scripts/fuzz.sh caps the length
 * too), frames larger than MAX_PIXELS are not decoded, the forward read asks
 * for frame MAX_FRAMES, the past-the-end read (which decodes to EOF) runs
 * only when the container lists few frames, FFmpeg's log is silenced, and
 * the file lives in /dev/shm where there is one. docs/fuzzing.md has the
 * measurements. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/ffmpeg_api.h"

#include "io/video.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs longer than this are not videos the fuzzer learns from faster;
 * they only cost time. */
#define MAX_INPUT_BYTES (16 << 10)
/* LeRobot frames are small (PushT: 96×96); larger ones only cost memset. */
#define MAX_PIXELS (128 * 128)
/* The forward read asks for the frame this many frames after the first. */
#define MAX_FRAMES 3

static char path[80];

static void remove_file(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > MAX_INPUT_BYTES) return 0;
    if (!path[0]) {
        av_log_set_level(AV_LOG_QUIET); /* formatting FFmpeg's complaints was 7% of the time */
        snprintf(path, sizeof path, "%s/vla-fuzz-video-%d.mp4", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
                 (int)getpid());
        atexit(remove_file);
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    if (size) fwrite(data, 1, size, f);
    fclose(f);
    vla_video_decoder *d;
    if (vla_video_decoder_open(path, NULL, &d) != VLA_OK) return 0;
    const vla_video_info *in = vla_video_decoder_info(d);
    if (in->width > 0 && in->height > 0 && (int64_t)in->width * in->height <= MAX_PIXELS) {
        /* exactly one frame, so ASan sees a write past it */
        uint8_t *rgb = malloc((size_t)in->width * (size_t)in->height * 3), small[16 * 12 * 3];
        double step = in->fps > 0 && in->fps < 1000 ? 1.0 / in->fps : 0.1;
        /* seek + decode (nothing decoded yet), then forward in the same GOP
         * or a second seek, then the first frame again from the cache at
         * another size, then one frame in (behind the decoder: cached, or a
         * seek that may land past it and retry earlier), then before the
         * start, then past the end (seek, decode to EOF) unless the
         * container says that is many frames away. */
        if (rgb && vla_video_decoder_read(d, 0.0, 0.06, 0, 0, rgb, NULL) == VLA_OK) {
            (void)vla_video_decoder_read(d, step * MAX_FRAMES, 0.06, 0, 0, rgb, NULL);
            (void)vla_video_decoder_read(d, 0.0, 0.06, 16, 12, small, NULL);
            (void)vla_video_decoder_read(d, step, 0.06, 0, 0, rgb, NULL);
        }
        if (rgb) (void)vla_video_decoder_read(d, -1.0, 0.06, 0, 0, rgb, NULL);
        if (rgb && in->frame_count <= 8 * MAX_FRAMES) (void)vla_video_decoder_read(d, 1e9, 0.06, 0, 0, rgb, NULL);
        free(rgb);
    }
    vla_video_decoder_close(d);
    return 0;
}
