/* lerobot_hub.c — --dataset.repo_id=ORG/NAME: a dataset by its Hugging Face
 * name, found where LeRobot keeps its downloads (see lerobot.h). vla.c
 * never downloads: when the copy is absent the message says how. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "data/lerobot.h"

/* LeRobot's HF_LEROBOT_HOME: $HF_LEROBOT_HOME, else HF_HOME/lerobot with
 * huggingface_hub's HF_HOME ($HF_HOME, else $XDG_CACHE_HOME/huggingface,
 * else ~/.cache/huggingface). */
static void cache_home(char *buf, size_t cap) {
    const char *v = getenv("HF_LEROBOT_HOME");
    if (v && *v) {
        snprintf(buf, cap, "%s", v);
        return;
    }
    if ((v = getenv("HF_HOME")) && *v) {
        snprintf(buf, cap, "%s/lerobot", v);
        return;
    }
    if ((v = getenv("XDG_CACHE_HOME")) && *v) {
        snprintf(buf, cap, "%s/huggingface/lerobot", v);
        return;
    }
    const char *home = getenv("HOME");
    snprintf(buf, cap, "%s/.cache/huggingface/lerobot", home && *home ? home : ".");
}

/* ORG/NAME: one slash, letters, digits, '-', '_' and '.', not "." or ".." as a part. */
static bool valid_repo_id(const char *s, size_t n) {
    size_t slash = 0, nslash = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '/') {
            slash = i, nslash++;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.'))
            return false;
    }
    if (nslash != 1 || slash == 0 || slash + 1 == n) return false;
    if ((slash == 1 && s[0] == '.') || (slash == 2 && !strncmp(s, "..", 2))) return false;
    const char *name = s + slash + 1;
    size_t nl = n - slash - 1;
    return !((nl == 1 && name[0] == '.') || (nl == 2 && !strncmp(name, "..", 2)));
}

vla_status vla_lerobot_repo_roots(const char *repo_ids, char *roots, size_t cap) {
    char home[2048];
    cache_home(home, sizeof home);
    size_t used = 0;
    roots[0] = 0;
    for (const char *q = repo_ids; *q;) {
        size_t n = strcspn(q, ",");
        if (!valid_repo_id(q, n))
            return vla_error(VLA_ERR_INVALID_ARG, "--dataset.repo_id=%.*s: a Hugging Face dataset name is ORG/NAME "
                             "(letters, digits, '-', '_', '.'), e.g. lerobot/pusht", (int)n, q);
        char dir[4096], info[4200];
        snprintf(dir, sizeof dir, "%s/%.*s", home, (int)n, q);
        snprintf(info, sizeof info, "%s/meta/info.json", dir);
        if (!vla_path_exists(info))
            return vla_error(VLA_ERR_NOT_FOUND,
                             "--dataset.repo_id=%.*s: not in the LeRobot cache (no %s; the cache is $HF_LEROBOT_HOME, "
                             "else $HF_HOME/lerobot, else ~/.cache/huggingface/lerobot). vla.c does not download: "
                             "fetch it with `huggingface-cli download --repo-type dataset %.*s --local-dir %s` (or "
                             "any LeRobot command that loads it), or give its directory with --dataset.root=DIR",
                             (int)n, q, info, (int)n, q, dir);
        int w = snprintf(roots + used, cap - used, "%s%s", used ? "," : "", dir);
        if (w < 0 || (size_t)w >= cap - used) return vla_error(VLA_ERR_INVALID_ARG, "--dataset.repo_id: paths too long");
        used += (size_t)w;
        q += n + (q[n] == ',');
    }
    if (!used) return vla_error(VLA_ERR_INVALID_ARG, "--dataset.repo_id is empty (give ORG/NAME)");
    return VLA_OK;
}
