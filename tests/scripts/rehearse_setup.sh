# rehearse_setup.sh — sourced by the rehearsal tests (gpu_check_rehearse.sh, gpu_recipe_rehearse.sh): strict
# bash, SRC (the source tree), BUILD (the build directory, the script's first argument), T (a scratch
# directory removed on exit) and fail (say why, exit 1).
set -uo pipefail
SRC=${VLA_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[1]}")/../.." && pwd)}
BUILD=$(cd "${1:?usage: $(basename "${BASH_SOURCE[1]}") BUILD_DIR}" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
