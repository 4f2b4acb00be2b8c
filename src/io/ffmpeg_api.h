/* ffmpeg_api.h — FFmpeg (libavformat, libavcodec, libavutil, libswscale) as
 * vla.c calls it: loaded at the first use, not at process start
 * (base/dynlib.h says why and how). Include this instead of FFmpeg's own
 * headers; a new FFmpeg call goes into VLA_FFMPEG_SYMBOLS and gets its
 * redirect below, or the link fails. */
#ifndef VLA_IO_FFMPEG_API_H
#define VLA_IO_FFMPEG_API_H

#include "base/dynlib.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#define VLA_FFMPEG_SYMBOLS(X) \
    X(av_find_best_stream) \
    X(av_guess_format) \
    X(av_interleaved_write_frame) \
    X(av_read_frame) \
    X(av_seek_frame) \
    X(av_write_trailer) \
    X(avformat_alloc_output_context2) \
    X(avformat_close_input) \
    X(avformat_find_stream_info) \
    X(avformat_free_context) \
    X(avformat_index_get_entries_count) \
    X(avformat_index_get_entry) \
    X(avformat_new_stream) \
    X(avformat_open_input) \
    X(avformat_write_header) \
    X(avio_closep) \
    X(avio_feof) \
    X(avio_open) \
    X(av_new_packet) \
    X(av_packet_alloc) \
    X(av_packet_free) \
    X(av_packet_rescale_ts) \
    X(av_packet_unref) \
    X(avcodec_alloc_context3) \
    X(avcodec_find_decoder) \
    X(avcodec_find_decoder_by_name) \
    X(avcodec_find_encoder_by_name) \
    X(avcodec_flush_buffers) \
    X(avcodec_free_context) \
    X(avcodec_get_name) \
    X(avcodec_open2) \
    X(avcodec_parameters_copy) \
    X(avcodec_parameters_from_context) \
    X(avcodec_parameters_to_context) \
    X(avcodec_receive_frame) \
    X(avcodec_receive_packet) \
    X(avcodec_send_frame) \
    X(avcodec_send_packet) \
    X(avcodec_version) \
    X(sws_freeContext) \
    X(sws_getCoefficients) \
    X(sws_getColorspaceDetails) \
    X(sws_getContext) \
    X(sws_scale) \
    X(sws_setColorspaceDetails) \
    X(av_dict_free) \
    X(av_dict_set) \
    X(av_frame_alloc) \
    X(av_frame_free) \
    X(av_frame_get_buffer) \
    X(av_frame_make_writable) \
    X(av_frame_ref) \
    X(av_frame_unref) \
    X(av_get_pix_fmt_name) \
    X(av_log_get_level) \
    X(av_log_set_level) \
    X(av_opt_set) \
    X(av_opt_set_int) \
    X(av_rescale_q) \
    X(av_strerror) \
    X(avcodec_find_encoder) \
    X(av_malloc) \
    X(av_packet_from_data) \
    X(av_free)
VLA_DYNLIB_DECLARE(ffmpeg, VLA_FFMPEG_SYMBOLS)

#ifndef VLA_FFMPEG_API_IMPL
#define av_find_best_stream (vla_ffmpeg()->av_find_best_stream)
#define av_guess_format (vla_ffmpeg()->av_guess_format)
#define av_interleaved_write_frame (vla_ffmpeg()->av_interleaved_write_frame)
#define av_read_frame (vla_ffmpeg()->av_read_frame)
#define av_seek_frame (vla_ffmpeg()->av_seek_frame)
#define av_write_trailer (vla_ffmpeg()->av_write_trailer)
#define avformat_alloc_output_context2 (vla_ffmpeg()->avformat_alloc_output_context2)
#define avformat_close_input (vla_ffmpeg()->avformat_close_input)
#define avformat_find_stream_info (vla_ffmpeg()->avformat_find_stream_info)
#define avformat_free_context (vla_ffmpeg()->avformat_free_context)
#define avformat_index_get_entries_count (vla_ffmpeg()->avformat_index_get_entries_count)
#define avformat_index_get_entry (vla_ffmpeg()->avformat_index_get_entry)
#define avformat_new_stream (vla_ffmpeg()->avformat_new_stream)
#define avformat_open_input (vla_ffmpeg()->avformat_open_input)
#define avformat_write_header (vla_ffmpeg()->avformat_write_header)
#define avio_closep (vla_ffmpeg()->avio_closep)
#define avio_feof (vla_ffmpeg()->avio_feof)
#define avio_open (vla_ffmpeg()->avio_open)
#define av_new_packet (vla_ffmpeg()->av_new_packet)
#define av_packet_alloc (vla_ffmpeg()->av_packet_alloc)
#define av_packet_free (vla_ffmpeg()->av_packet_free)
#define av_packet_rescale_ts (vla_ffmpeg()->av_packet_rescale_ts)
#define av_packet_unref (vla_ffmpeg()->av_packet_unref)
#define avcodec_alloc_context3 (vla_ffmpeg()->avcodec_alloc_context3)
#define avcodec_find_decoder (vla_ffmpeg()->avcodec_find_decoder)
#define avcodec_find_decoder_by_name (vla_ffmpeg()->avcodec_find_decoder_by_name)
#define avcodec_find_encoder_by_name (vla_ffmpeg()->avcodec_find_encoder_by_name)
#define avcodec_flush_buffers (vla_ffmpeg()->avcodec_flush_buffers)
#define avcodec_free_context (vla_ffmpeg()->avcodec_free_context)
#define avcodec_get_name (vla_ffmpeg()->avcodec_get_name)
#define avcodec_open2 (vla_ffmpeg()->avcodec_open2)
#define avcodec_parameters_copy (vla_ffmpeg()->avcodec_parameters_copy)
#define avcodec_parameters_from_context (vla_ffmpeg()->avcodec_parameters_from_context)
#define avcodec_parameters_to_context (vla_ffmpeg()->avcodec_parameters_to_context)
#define avcodec_receive_frame (vla_ffmpeg()->avcodec_receive_frame)
#define avcodec_receive_packet (vla_ffmpeg()->avcodec_receive_packet)
#define avcodec_send_frame (vla_ffmpeg()->avcodec_send_frame)
#define avcodec_send_packet (vla_ffmpeg()->avcodec_send_packet)
#define avcodec_version (vla_ffmpeg()->avcodec_version)
#define sws_freeContext (vla_ffmpeg()->sws_freeContext)
#define sws_getCoefficients (vla_ffmpeg()->sws_getCoefficients)
#define sws_getColorspaceDetails (vla_ffmpeg()->sws_getColorspaceDetails)
#define sws_getContext (vla_ffmpeg()->sws_getContext)
#define sws_scale (vla_ffmpeg()->sws_scale)
#define sws_setColorspaceDetails (vla_ffmpeg()->sws_setColorspaceDetails)
#define av_dict_free (vla_ffmpeg()->av_dict_free)
#define av_dict_set (vla_ffmpeg()->av_dict_set)
#define av_frame_alloc (vla_ffmpeg()->av_frame_alloc)
#define av_frame_free (vla_ffmpeg()->av_frame_free)
#define av_frame_get_buffer (vla_ffmpeg()->av_frame_get_buffer)
#define av_frame_make_writable (vla_ffmpeg()->av_frame_make_writable)
#define av_frame_ref (vla_ffmpeg()->av_frame_ref)
#define av_frame_unref (vla_ffmpeg()->av_frame_unref)
#define av_get_pix_fmt_name (vla_ffmpeg()->av_get_pix_fmt_name)
#define av_log_get_level (vla_ffmpeg()->av_log_get_level)
#define av_log_set_level (vla_ffmpeg()->av_log_set_level)
#define av_opt_set (vla_ffmpeg()->av_opt_set)
#define av_opt_set_int (vla_ffmpeg()->av_opt_set_int)
#define av_rescale_q (vla_ffmpeg()->av_rescale_q)
#define av_strerror (vla_ffmpeg()->av_strerror)
#define av_free (vla_ffmpeg()->av_free)
#define av_packet_from_data (vla_ffmpeg()->av_packet_from_data)
#define av_malloc (vla_ffmpeg()->av_malloc)
#define avcodec_find_encoder (vla_ffmpeg()->avcodec_find_encoder)

/* av_err2str is a macro over a static inline function defined in FFmpeg's
 * header, above these redirects, which would call av_strerror directly; this
 * one goes through the table. */
static inline char *vla_av_err2str(char *buf, int errnum) {
    av_strerror(errnum, buf, AV_ERROR_MAX_STRING_SIZE);
    return buf;
}
#undef av_err2str
#define av_err2str(errnum) vla_av_err2str((char[AV_ERROR_MAX_STRING_SIZE]){0}, errnum)
#endif

#endif
