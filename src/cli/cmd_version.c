/* cmd_version.c — `vla version`: the version and what was compiled in. */
#include "cli/cli.h"
#include "tensor/cpu/gemm.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <cblas.h>
#include <jansson.h>
#include <omp.h>
#include <string.h>
#include "io/video.h"
#ifdef VLA_HAVE_MPI
#include "distributed/mpi_api.h"
#endif

#include "tensor/backend.h"
#ifdef VLA_HAVE_CUDA
#include "tensor/cuda/ops_cuda.h"
#endif

int vla_cmd_version(int argc, char **argv) {
    bool as_json = false;
    const vla_flag flags[] = {{"json", VLA_FLAG_BOOL, &as_json, NULL, "print as JSON"}};
    const vla_command_spec spec = {"vla version", NULL, "Print the version and the features compiled in.", NULL,
                                   flags, 1, 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;

    char mpi[600] = "no";
#ifdef VLA_HAVE_MPI
    /* Open MPI is loaded at its first use (base/dynlib.h): where it is
     * missing, this says so instead of a version */
    if (vla_mpi_require() == VLA_OK) {
        int major = 0, minor = 0;
        MPI_Get_version(&major, &minor);
        snprintf(mpi, sizeof mpi, "MPI %d.%d", major, minor);
    } else {
        snprintf(mpi, sizeof mpi, "not available: %s", vla_error_message());
    }
#endif
    char ffmpeg[256];
    vla_video_describe(ffmpeg, sizeof ffmpeg);
    char openmp[64];
    snprintf(openmp, sizeof openmp, "OpenMP %d, %d threads", _OPENMP, omp_get_max_threads());
    const char *blas = openblas_get_config();
    /* the cuda backend: built in or not, and whether this machine can run it */
    char cuda[600] = "no (CPU backends only; make CUDA=1 builds it)";
    if (vla_backend_find("cuda")) {
        if (vla_backend_probe("cuda") == VLA_OK) {
#ifdef VLA_HAVE_CUDA
            snprintf(cuda, sizeof cuda, "yes: %s", vla_cuda_device_info());
#endif
        } else {
            snprintf(cuda, sizeof cuda, "built, but not usable here (%s)", vla_error_message());
            vla_error_clear();
        }
    }
    /* the backends compiled in (--device=NAME), as a list and as JSON strings */
    char devices[256] = "", devices_json[320] = "";
    for (int i = 0; i < vla_backend_count(); i++) {
        const char *sep = i ? ", " : "", *jsep = i ? "," : "";
        snprintf(devices + strlen(devices), sizeof devices - strlen(devices), "%s%s", sep, vla_backend_name(i));
        snprintf(devices_json + strlen(devices_json), sizeof devices_json - strlen(devices_json), "%s\"%s\"", jsep,
                 vla_backend_name(i));
    }
    /* The GEMM library the op table uses (VLA_GEMM) and the kernels it runs
     * on this CPU: oneDNN's instruction set, picked from the CPU's features,
     * or OpenBLAS's core type (tensor/cpu/gemm.h). */
    vla_gemm_lib lib = vla_gemm_lib_active();
    char gemm_lib[64], gemm_kernels[64];
    vla_gemm_lib_describe(lib, gemm_lib, sizeof gemm_lib, gemm_kernels, sizeof gemm_kernels);
    const char *isa = vla_gemm_onednn_isa(), *bf16_cpu = vla_gemm_bf16_cpu_features();
    bool bf16 = vla_gemm_bf16_native();
    if (as_json) {
        printf("{\"version\":\"%s\",\"openmp\":\"%s\",\"gemm\":\"%s\",\"gemm_library\":\"%s\","
               "\"gemm_kernels\":\"%s\",\"onednn_isa\":\"%s\",\"bf16_gemm\":\"%s\",\"bf16_cpu\":\"%s\","
               "\"blas\":\"%s\",\"ffmpeg\":\"%s\",\"mpi\":\"%s\",\"cuda\":\"",
               VLA_VERSION, openmp, vla_gemm_lib_name(lib), gemm_lib, gemm_kernels, isa,
               bf16 ? "onednn" : "emulated", bf16_cpu, blas, ffmpeg, mpi);
        vla_cli_print_json_chars(cuda);
        printf("\",\"jansson\":\"%s\",\"devices\":[%s]}\n", JANSSON_VERSION, devices_json);
        return 0;
    }
    printf("vla %s\n", VLA_VERSION);
    printf("  OpenMP  : %s\n", openmp);
    const char *env = getenv("VLA_GEMM");
    printf("  GEMM    : %s, %s kernels (%s %s; VLA_GEMM=onednn|openblas chooses; oneDNN dispatches to %s here)\n",
           gemm_lib, gemm_kernels, env && *env ? "VLA_GEMM" : "default", vla_gemm_lib_name(lib), isa);
    printf("  bf16    : %s (CPU bf16 features: %s)\n", bf16 ? "through oneDNN" : "emulated (round to bf16, f32 GEMM)",
           bf16_cpu);
    printf("  BLAS    : %s\n", blas);
    printf("  FFmpeg  : %s\n", ffmpeg);
    printf("  MPI     : %s\n", mpi);
    printf("  CUDA    : %s\n", cuda);
    printf("  devices : %s (--device=NAME; default %s)\n", devices, vla_backend_default_name());
    printf("  JSON    : jansson %s\n", JANSSON_VERSION);
    return 0;
}
