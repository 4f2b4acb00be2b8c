/* log.h — leveled logging to stderr.
 *
 * The level comes from vla_log_set_level() or, at first use, the environment
 * variable VLA_LOG (debug|info|warn|error|quiet). Lines carry the elapsed
 * time since process start and, when set, the MPI rank, so logs of many
 * processes can be merged and read. */
#ifndef VLA_BASE_LOG_H
#define VLA_BASE_LOG_H

typedef enum { VLA_LOG_DEBUG, VLA_LOG_INFO, VLA_LOG_WARN, VLA_LOG_ERROR, VLA_LOG_QUIET } vla_log_level;

void vla_log_set_level(vla_log_level level);
vla_log_level vla_log_get_level(void);
/* Parse "debug", "info", … ; returns -1 for an unknown name. */
int vla_log_level_from_name(const char *name);
/* Rank shown in every line; -1 (default) shows none. */
void vla_log_set_rank(int rank);

void vla_log(vla_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define VLA_DEBUG(...) vla_log(VLA_LOG_DEBUG, __VA_ARGS__)
#define VLA_INFO(...) vla_log(VLA_LOG_INFO, __VA_ARGS__)
#define VLA_WARN(...) vla_log(VLA_LOG_WARN, __VA_ARGS__)
#define VLA_ERROR(...) vla_log(VLA_LOG_ERROR, __VA_ARGS__)

#endif
