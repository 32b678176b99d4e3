# What the MPI tests (mpi.sh, fleet_mpi.sh) share: mpirun (MPIRUN), which
# must be installed when loadtrace was built with MPI; its flag for running
# as root when we are (ROOT); Open MPI's own lifetime allocations kept out
# of LSan's report under -DLT_SANITIZE=ON (tests/replay/lsan-openmpi.supp
# says which are suppressed, and why); and mpi, a bounded run of the job.
# Sourced after tests/cli/lib.sh with L set.
MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 ||
    { echo "FAIL: loadtrace was built with MPI but $MPIRUN is not installed (apt-get install openmpi-bin)" >&2; exit 1; }
ROOT=
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$LT_SRC/tests/replay/lsan-openmpi.supp:fast_unwind_on_malloc=0"
export LSAN_OPTIONS

mpi() { # ranks, then the loadtrace arguments; bounded
    _n=$1
    shift
    timeout 120 "$MPIRUN" --oversubscribe $ROOT -x LSAN_OPTIONS -n "$_n" "$L" "$@"
}
